import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_TABLE, dynamoDbClient, startDynamoDb } from '../../bench/dynamodb.js';
import type { LocalDynamoDb } from '../../bench/dynamodb.js';

let dynamodb: LocalDynamoDb;
beforeAll(async () => {
  dynamodb = await startDynamoDb();
});
afterAll(() => dynamodb.close());

const put = (id: string, conditional: boolean) =>
  new PutItemCommand({
    TableName: IDEMPOTENCY_TABLE,
    Item: { id: { S: id }, status: { S: 'INPROGRESS' } },
    ...(conditional ? { ConditionExpression: 'attribute_not_exists(id)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
  });

describe("the bench's local DynamoDB (dynalite behind the bench's front)", () => {
  it('returns the item a conditional PutItem failed on, as DynamoDB does, so that a Powertools duplicate costs one call', async () => {
    const client = dynamoDbClient(dynamodb.endpoint);
    await client.send(put('taken', false));
    dynamodb.resetStats();
    const refused = await client.send(put('taken', true)).catch((error: unknown) => error as { name: string; Item?: unknown });
    expect(refused).toMatchObject({ name: 'ConditionalCheckFailedException', Item: { id: { S: 'taken' }, status: { S: 'INPROGRESS' } } });
    expect(dynamodb.stats()).toEqual({ PutItem: 1, UpdateItem: 0, GetItem: 0, DeleteItem: 0 });
    client.destroy();
  });

  it('delays each operation by its latency, and refuses the UpdateItems of the chosen items without running them', async () => {
    const client = dynamoDbClient(dynamodb.endpoint);
    await client.send(put('slow', false));
    dynamodb.latency({ PutItem: 150 });
    const started = performance.now();
    await client.send(put('slow-2', false));
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    dynamodb.latency({});
    dynamodb.refuseUpdates((id) => id === 'slow');
    const update = (id: string) =>
      new UpdateItemCommand({
        TableName: IDEMPOTENCY_TABLE,
        Key: { id: { S: id } },
        UpdateExpression: 'SET #s = :s',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': { S: 'COMPLETED' } },
      });
    await expect(client.send(update('slow'))).rejects.toMatchObject({ $metadata: { httpStatusCode: 500 } });
    await expect(client.send(update('slow-2'))).resolves.toBeDefined();
    dynamodb.refuseUpdates(undefined);
    await expect(client.send(update('slow'))).resolves.toBeDefined();
    client.destroy();
  });
});
