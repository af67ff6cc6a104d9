import { createHash, randomUUID } from 'node:crypto';
import type { AttributeValue } from 'aws-lambda';
import { SystemClock } from '../../sqs/clock.js';
import type { Clock } from '../../sqs/clock.js';
import { ChangeSignal } from '../change-signal.js';
import { StreamModelError } from '../errors.js';
import { ShardLog } from '../shard-log.js';
import { fromImage, toImage, toImageValue, utilDynamoDb } from './images.js';
import type { StreamImage } from './images.js';

/** A stream record as GetRecords returns it, with the creation time in epoch ms. */
export interface DynamoDbStreamRecord {
  shardId: string;
  /** 32 hex characters. */
  eventId: string;
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  /** A decimal string; compare as BigInt. */
  sequenceNumber: string;
  /** The item's key attributes, as AttributeValues (binary as base64). */
  keys: Record<string, AttributeValue>;
  /** The item after the change, with NEW_IMAGE or NEW_AND_OLD_IMAGES. */
  newImage?: Record<string, AttributeValue> | undefined;
  /** The item before the change, with OLD_IMAGE or NEW_AND_OLD_IMAGES. */
  oldImage?: Record<string, AttributeValue> | undefined;
  /** Approximately the UTF-8 size of what the record carries. */
  sizeBytes: number;
  streamViewType: 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';
  /** Epoch milliseconds on the model's clock. */
  createdMs: number;
}

type StoredChange = Omit<DynamoDbStreamRecord, 'shardId' | 'sequenceNumber' | 'createdMs'>;

interface Table {
  info: ReturnType<DynamoDbModel['describeTable']>;
  keyNames: string[];
  items: Map<string, StreamImage>;
  logs: Map<string, ShardLog<StoredChange>>;
  changes: ChangeSignal;
}

const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;
const VIEW_TYPES: readonly StreamViewType[] = ['KEYS_ONLY', 'NEW_IMAGE', 'OLD_IMAGE', 'NEW_AND_OLD_IMAGES'];
/** DynamoDB Streams keeps stream records for 24 hours. */
const STREAM_RETENTION_MS = 24 * 3_600_000;

/**
 * In-process DynamoDB table with a stream: put, update and delete items (plain objects, marshalled to
 * AttributeValues here), each change written as a stream record (INSERT, MODIFY, REMOVE) of the
 * table's StreamViewType to the shard its key hashes to, so one item's changes stay in order on one
 * shard; records expire after 24 hours. A write that changes nothing writes no stream record, as
 * DynamoDB Streams does. Queries, indexes, conditions and shard roll-over are not modeled.
 *
 * @example
 * const ddb = new DynamoDbModel({ clock: local.sqs.model.clock }) // or a Clock of your own, to move time by hand;
 * ddb.createTable('orders', { partitionKey: 'id', shardCount: 2 });
 * ddb.putItem('orders', { id: 'o-1', status: 'NEW' });
 * ddb.updateItem('orders', { id: 'o-1' }, { status: 'PAID' });
 */
export class DynamoDbModel {
  /** The clock creation times and the retention run on. */
  readonly clock: Clock;
  /** The region in ARNs. */
  readonly region: string;
  /** The account id in ARNs. */
  readonly accountId: string;
  readonly #tables = new Map<string, Table>();
  #nextSequence: bigint;

  constructor(
    options: {
      /** The clock creation times and the stream's 24-hour retention run on. @default a new SystemClock */
      clock?: Clock | undefined;
      /** The region in table and stream ARNs. @default 'us-east-1' */
      region?: string | undefined;
      /** The account id in ARNs. @default '000000000000' */
      accountId?: string | undefined;
      /**
       * The first stream sequence number. DynamoDB's are decimal strings of 21 to 40 digits; starting
       * near a power of ten lets a test prove they are compared as numbers, not text.
       * @default 100000000000000000000n (21 digits)
       */
      firstSequenceNumber?: bigint | undefined;
    } = {},
  ) {
    this.clock = options.clock ?? new SystemClock();
    this.region = options.region ?? 'us-east-1';
    this.accountId = options.accountId ?? '000000000000';
    this.#nextSequence = options.firstSequenceNumber ?? 10n ** 20n;
    if (this.#nextSequence < 0n) throw new RangeError('DynamoDbModel: firstSequenceNumber must not be negative.');
    // Its items go through the SDK's marshalling: a missing package is named now, not at the first write.
    utilDynamoDb();
  }

  /** CreateTable with a stream enabled. */
  createTable(
    name: string,
    options: {
      /** The partition key attribute name. */
      partitionKey: string;
      /** The sort key attribute name, if the table has one. */
      sortKey?: string | undefined;
      /** What stream records hold (StreamSpecification.StreamViewType). @default 'NEW_AND_OLD_IMAGES' */
      streamViewType?: 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES' | undefined;
      /** Stream shards; an item's key hash picks its shard, so one item's changes stay in order on one shard. @default 1 */
      shardCount?: number | undefined;
    },
  ): ReturnType<DynamoDbModel['describeTable']> {
    if (!TABLE_NAME.test(name)) throw validation(`table name ${JSON.stringify(name)} must be 3 to 255 of a-z, A-Z, 0-9, _ . -`);
    if (this.#tables.has(name)) throw new StreamModelError('ResourceInUseException', `Table already exists: ${name}`);
    const viewType = options.streamViewType ?? 'NEW_AND_OLD_IMAGES';
    if (!VIEW_TYPES.includes(viewType)) throw validation(`streamViewType must be one of ${VIEW_TYPES.join(', ')}; got ${String(viewType)}`);
    const shardCount = options.shardCount ?? 1;
    if (!Number.isInteger(shardCount) || shardCount < 1) throw validation(`shardCount must be a positive integer; got ${shardCount}`);
    if (typeof options.partitionKey !== 'string' || options.partitionKey === '') throw validation('partitionKey must name the key attribute');
    const now = this.clock.now();
    const created = new Date(now).toISOString().replace('Z', '');
    const shardIds = Array.from({ length: shardCount }, (_, i) => `shardId-${String(now).padStart(20, '0')}-${shortHash(`${name}/${i}`)}`);
    const arn = `arn:aws:dynamodb:${this.region}:${this.accountId}:table/${name}`;
    const info: ReturnType<DynamoDbModel['describeTable']> = { name, arn, streamArn: `${arn}/stream/${created}`, streamViewType: viewType, shardIds };
    this.#tables.set(name, {
      info,
      keyNames: [options.partitionKey, ...(options.sortKey ? [options.sortKey] : [])],
      items: new Map(),
      logs: new Map(shardIds.map((id) => [id, new ShardLog<StoredChange>(STREAM_RETENTION_MS)])),
      changes: new ChangeSignal(),
    });
    return { ...info, shardIds: [...shardIds] };
  }

  /** DescribeTable: the ARNs, the stream view type and the stream's shards. */
  describeTable(name: string): {
    name: string;
    arn: string;
    /** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<created>`: the event source ARN. */
    streamArn: string;
    streamViewType: 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';
    shardIds: string[];
  } {
    const info = this.#table(name).info;
    return { ...info, shardIds: [...info.shardIds] };
  }

  /** PutItem: INSERT when the key is new, MODIFY when the item changes, nothing when it is the same. */
  putItem(table: string, item: Record<string, unknown>): void {
    const t = this.#table(table);
    const marshalled = toImage(item);
    this.#write(t, this.#keyOf(t, marshalled), marshalled);
  }

  /**
   * UpdateItem with SET of `set` and REMOVE of `remove`: creates the item (INSERT) when the key is
   * new, as UpdateItem does; MODIFY when something changed; nothing when nothing did.
   */
  updateItem(table: string, key: Record<string, unknown>, set: Record<string, unknown>, remove: readonly string[] = []): void {
    const t = this.#table(table);
    const keyItem = this.#keyOf(t, toImage(key));
    for (const name of [...Object.keys(set), ...remove]) {
      if (t.keyNames.includes(name)) throw validation(`cannot update attribute ${name}: it is part of the key`);
    }
    const current = t.items.get(canonicalText(keyItem));
    const next: StreamImage = { ...(current ?? keyItem) };
    for (const [name, value] of Object.entries(set)) next[name] = toImageValue(value);
    for (const name of remove) delete next[name];
    this.#write(t, keyItem, next);
  }

  /** DeleteItem: REMOVE with the old image; nothing when there is no such item. */
  deleteItem(table: string, key: Record<string, unknown>): void {
    const t = this.#table(table);
    this.#write(t, this.#keyOf(t, toImage(key)), undefined);
  }

  /** GetItem, as a plain object (a copy); undefined when absent. */
  getItem(table: string, key: Record<string, unknown>): Record<string, unknown> | undefined {
    const t = this.#table(table);
    const item = t.items.get(canonicalText(this.#keyOf(t, toImage(key))));
    return item ? fromImage(item) : undefined;
  }

  /**
   * GetRecords from a stream shard: up to `limit` records after `after`, or from the trim horizon.
   * @internal
   */
  readShard(table: string, shardId: string, after: bigint | undefined, limit = 1000): DynamoDbStreamRecord[] {
    return this.#log(table, shardId)
      .after(after, limit)
      .map((entry) => ({ ...entry.value, shardId, sequenceNumber: String(entry.position), createdMs: entry.arrivalMs }));
  }

  /**
   * The sequence numbers at a shard's trim horizon and tip, undefined when it holds no record.
   * @internal
   */
  shardBounds(table: string, shardId: string): { oldest: bigint | undefined; newest: bigint | undefined } {
    const log = this.#log(table, shardId);
    return { oldest: log.oldest?.position, newest: log.newest?.position };
  }

  /**
   * Fires whenever the table's stream gets a record.
   * @internal
   */
  changes(table: string): { subscribe(listener: () => void): () => void } {
    return this.#table(table).changes;
  }

  /** Stores (or deletes, with `next` undefined) an item and writes the stream record of the change. */
  #write(table: Table, key: StreamImage, next: StreamImage | undefined): void {
    const id = canonicalText(key);
    const previous = table.items.get(id);
    if (next === undefined && previous === undefined) return;
    if (next !== undefined && previous !== undefined && canonicalText(next) === canonicalText(previous)) return;
    if (next === undefined) table.items.delete(id);
    else table.items.set(id, next);
    const eventName = previous === undefined ? 'INSERT' : next === undefined ? 'REMOVE' : 'MODIFY';
    const view = table.info.streamViewType;
    const newImage = view === 'NEW_IMAGE' || view === 'NEW_AND_OLD_IMAGES' ? next : undefined;
    const oldImage = view === 'OLD_IMAGE' || view === 'NEW_AND_OLD_IMAGES' ? previous : undefined;
    const change: StoredChange = {
      eventId: randomUUID().replaceAll('-', ''),
      eventName,
      keys: key,
      ...(newImage ? { newImage } : {}),
      ...(oldImage ? { oldImage } : {}),
      // Approximate: the UTF-8 size of what the record carries.
      sizeBytes: Buffer.byteLength(JSON.stringify({ key, newImage, oldImage }), 'utf8'),
      streamViewType: view,
    };
    const shardId = table.info.shardIds[shardIndex(id, table.info.shardIds.length)] ?? '';
    const log = this.#log(table.info.name, shardId);
    log.append({ position: this.#nextSequence, arrivalMs: this.clock.now(), value: change });
    this.#nextSequence += 1n;
    table.changes.notify();
  }

  /** The key attributes of an item, checked: present, and of a key type (S, N or B). */
  #keyOf(table: Table, item: StreamImage): StreamImage {
    const key: StreamImage = {};
    for (const name of table.keyNames) {
      const value: AttributeValue | undefined = item[name];
      if (!value) throw validation(`One of the required keys was not given a value: ${name}`);
      if (value.S === undefined && value.N === undefined && value.B === undefined) {
        throw validation(`key attribute ${name} must be a string, number or binary`);
      }
      key[name] = value;
    }
    return key;
  }

  #log(table: string, shardId: string): ShardLog<StoredChange> {
    const log = this.#table(table).logs.get(shardId);
    if (!log) throw new StreamModelError('ResourceNotFoundException', `Shard ${shardId} of the stream of table ${table} does not exist.`);
    log.trim(this.clock.now());
    return log;
  }

  #table(name: string): Table {
    const table = this.#tables.get(name);
    if (!table) throw new StreamModelError('ResourceNotFoundException', `Requested resource not found: Table: ${name} not found`);
    return table;
  }
}

/** The shard of a key: its MD5 modulo the shard count, stable for the life of the table. */
function shardIndex(keyText: string, shardCount: number): number {
  return Number(BigInt(`0x${createHash('md5').update(keyText, 'utf8').digest('hex')}`) % BigInt(shardCount));
}

function shortHash(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex').slice(0, 8);
}

function validation(message: string): StreamModelError {
  return new StreamModelError('ValidationException', message);
}

/** A stable text for an item or key: attribute names sorted at every level, so equal items give equal text. */
function canonicalText(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    typeof inner === 'object' && inner !== null && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/** Options of {@link DynamoDbModel}. */
export type DynamoDbModelOptions = NonNullable<ConstructorParameters<typeof DynamoDbModel>[0]>;

/** What a table's stream records hold (StreamSpecification.StreamViewType). */
export type StreamViewType = DynamoDbStreamRecord['streamViewType'];
