// The same consumer written the way Powertools recommends for an idempotent SQS batch handler
// (docs: idempotency, "Batch integration"; examples/snippets/idempotency/workingWithBatch.ts), with the
// effect as a DynamoDB UpdateCommand through lib-dynamodb. `bench/bundle.ts` bundles it for comparison.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

const processor = new BatchProcessor(EventType.SQS);
const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: 'idempotencyTable' });
const idempotencyConfig = new IdempotencyConfig({ eventKeyJmesPath: 'messageId' });

const processIdempotently = makeIdempotent(
  async (record: SQSRecord) => {
    const { orderId } = JSON.parse(record.body) as { orderId: string };
    await documentClient.send(
      new UpdateCommand({
        TableName: 'orders',
        Key: { orderId },
        UpdateExpression: 'SET shipped = :shipped',
        ExpressionAttributeValues: { ':shipped': true },
      }),
    );
  },
  { persistenceStore, config: idempotencyConfig },
);

export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  idempotencyConfig.registerLambdaContext(context);
  return processPartialResponse(event, processIdempotently, processor, { context });
};
