import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';

/** The DynamoDB operations the bench counts and delays (Powertools' persistence layer uses these). */
export const DYNAMODB_OPERATIONS = ['PutItem', 'UpdateItem', 'GetItem', 'DeleteItem'] as const;
export type DynamoDbOperation = (typeof DYNAMODB_OPERATIONS)[number];

/** Powertools' idempotency table, as its docs create it: partition key `id`. */
export const IDEMPOTENCY_TABLE = 'bench-idempotency';

/**
 * A DynamoDB that runs locally from npm (dynalite: the DynamoDB API over an in-memory LevelDB), with what
 * the bench needs in front of it: a delay per operation (the latency model), call counts per operation,
 * and one fault, an UpdateItem that fails without running for chosen items (the worker that dies after
 * the effect, before Powertools marks the record COMPLETED).
 */
export interface LocalDynamoDb {
  readonly endpoint: string;
  /** Delays each operation by its milliseconds before it runs (0 or absent: none). Replaces the previous delays. */
  latency(byOperation: Partial<Record<DynamoDbOperation, number>>): void;
  /** Calls per operation since the last reset. */
  stats(): Record<DynamoDbOperation, number>;
  resetStats(): void;
  /** From now on an UpdateItem whose key `id` this accepts fails with a 500 without running; undefined clears it. */
  refuseUpdates(when: ((id: string) => boolean) | undefined): void;
  close(): Promise<void>;
}

/** Starts dynalite on a free port and creates the idempotency table. */
export async function startDynamoDb(): Promise<LocalDynamoDb> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const [serve] = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  server.removeAllListeners('request');
  let delays: Partial<Record<DynamoDbOperation, number>> = {};
  let refused: ((id: string) => boolean) | undefined;
  const calls = zeroCounts();
  let endpoint = '';
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const operation = String(request.headers['x-amz-target'] ?? '').split('.')[1] as DynamoDbOperation;
    if (request.headers[INTERNAL] !== undefined) return serve!(request, response);
    if (operation in calls) calls[operation]++;
    const run = () =>
      operation === 'UpdateItem' || operation === 'PutItem'
        ? withBody(request, response, serve!, (body) => {
            if (operation === 'UpdateItem' && refused && refused(String((body as { Key?: { id?: { S?: string } } }).Key?.id?.S))) {
              response.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
              response.end(JSON.stringify({ __type: 'com.amazon.coral.service#InternalFailure', message: 'the worker died before this update (bench fault)' }));
              return true;
            }
            if (operation === 'PutItem' && (body as { ReturnValuesOnConditionCheckFailure?: string }).ReturnValuesOnConditionCheckFailure === 'ALL_OLD') {
              returnOldItemOnConditionFailure(response, endpoint, body as PutItemBody);
            }
            return false;
          })
        : serve!(request, response);
    const delay = delays[operation] ?? 0;
    if (delay > 0) setTimeout(run, delay);
    else run();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = dynamoDbClient(endpoint);
  await client.send(
    new CreateTableCommand({
      TableName: IDEMPOTENCY_TABLE,
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  client.destroy();
  return {
    endpoint,
    latency: (byOperation) => void (delays = { ...byOperation }),
    stats: () => ({ ...calls }),
    resetStats: () => Object.assign(calls, zeroCounts()),
    refuseUpdates: (when) => void (refused = when),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A client as a Lambda function would make one, pointed at the local endpoint. */
export function dynamoDbClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

function zeroCounts(): Record<DynamoDbOperation, number> {
  return Object.fromEntries(DYNAMODB_OPERATIONS.map((operation) => [operation, 0])) as Record<DynamoDbOperation, number>;
}

/** A request the wrapper makes itself (uncounted, undelayed). */
const INTERNAL = 'x-bench-internal';

interface PutItemBody {
  readonly TableName: string;
  readonly Item: Record<string, unknown> & { readonly id?: unknown };
}

/**
 * Reads the request's body and gives it to `intercept`; unless that answered the request itself (true),
 * dynalite gets the request with its body replayed (it reads the body from the request stream).
 */
function withBody(
  request: IncomingMessage,
  response: ServerResponse,
  serve: (request: IncomingMessage, response: ServerResponse) => void,
  intercept: (body: unknown) => boolean,
): void {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    if (intercept(JSON.parse(body.toString('utf8')) as unknown)) return;
    const replay = Object.assign(Object.create(request) as IncomingMessage, {
      on(event: string, listener: (...args: unknown[]) => void) {
        if (event === 'data') setImmediate(() => listener(body));
        else if (event === 'end') setImmediate(() => setImmediate(() => listener()));
        else request.on(event, listener);
        return replay;
      },
    });
    serve(replay, response);
  });
}

/**
 * DynamoDB returns the item a PutItem's condition failed on when asked (`ReturnValuesOnConditionCheckFailure:
 * 'ALL_OLD'`, which Powertools asks for, so that a duplicate costs the one PutItem); dynalite predates that
 * and answers without it, and Powertools then reads the item with a GetItem that DynamoDB would not get.
 * This adds the item to dynalite's ConditionalCheckFailedException, as DynamoDB does (its checksum too).
 */
function returnOldItemOnConditionFailure(response: ServerResponse, endpoint: string, put: PutItemBody): void {
  const end = response.end.bind(response) as (body?: string) => ServerResponse;
  (response as { end: (body?: string) => ServerResponse }).end = (body?: string) => {
    if (response.statusCode !== 400 || !body?.includes('ConditionalCheckFailedException')) return end(body);
    void fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.GetItem',
        [INTERNAL]: '1',
        // dynalite checks that a signature is there, not what it says.
        'x-amz-date': '20200101T000000Z',
        authorization: 'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0',
      },
      body: JSON.stringify({ TableName: put.TableName, Key: { id: put.Item.id }, ConsistentRead: true }),
    })
      .then(async (answer) => (await answer.json()) as { Item?: unknown })
      .then(
        ({ Item }) => {
          const augmented = JSON.stringify({ ...(JSON.parse(body) as object), ...(Item ? { Item } : {}) });
          response.setHeader('x-amz-crc32', crc32(Buffer.from(augmented, 'utf8')));
          response.setHeader('Content-Length', Buffer.byteLength(augmented, 'utf8'));
          end(augmented);
        },
        () => end(body),
      );
    return response;
  };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE), as DynamoDB's x-amz-crc32 header carries it; Node 20 has no zlib.crc32. */
function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
