import { SqsError, invalidAttributeValue, invalidParameter } from './errors.js';

/** The settable attributes of a queue, parsed. */
export interface QueueConfig {
  fifo: boolean;
  delaySeconds: number;
  maximumMessageSize: number;
  messageRetentionPeriod: number;
  receiveMessageWaitTimeSeconds: number;
  visibilityTimeout: number;
  redrivePolicy?: { deadLetterTargetArn: string; maxReceiveCount: number } | undefined;
  redriveAllowPolicy?: { redrivePermission: 'allowAll' | 'denyAll' | 'byQueue'; sourceQueueArns: string[] } | undefined;
  contentBasedDeduplication: boolean;
  deduplicationScope: 'queue' | 'messageGroup';
  fifoThroughputLimit: 'perQueue' | 'perMessageGroupId';
  /** Every attribute as set, in AWS's string form, for GetQueueAttributes. */
  raw: Record<string, string>;
}

export const MAX_MESSAGE_SIZE = 1_048_576;

const INTEGER_RANGES: Record<string, readonly [number, number, string]> = {
  DelaySeconds: [0, 900, '0'],
  MaximumMessageSize: [1024, MAX_MESSAGE_SIZE, String(MAX_MESSAGE_SIZE)],
  MessageRetentionPeriod: [60, 1_209_600, '345600'],
  ReceiveMessageWaitTimeSeconds: [0, 20, '0'],
  VisibilityTimeout: [0, 43_200, '30'],
  KmsDataKeyReusePeriodSeconds: [60, 86_400, '300'],
};

const BOOLEANS = ['FifoQueue', 'ContentBasedDeduplication', 'SqsManagedSseEnabled'];
const FIFO_ONLY = ['ContentBasedDeduplication', 'DeduplicationScope', 'FifoThroughputLimit'];
const OTHER = ['Policy', 'RedrivePolicy', 'RedriveAllowPolicy', 'FifoQueue', 'KmsMasterKeyId', 'SqsManagedSseEnabled', ...FIFO_ONLY];

/** Attributes GetQueueAttributes computes rather than stores. */
export const COMPUTED_ATTRIBUTES = [
  'QueueArn',
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
  'CreatedTimestamp',
  'LastModifiedTimestamp',
] as const;

export function isKnownAttributeName(name: string): boolean {
  return Object.hasOwn(INTEGER_RANGES, name) || OTHER.includes(name) || (COMPUTED_ATTRIBUTES as readonly string[]).includes(name);
}

/** `Unknown Attribute <name>.`: AWS's InvalidAttributeName text (recorded in localstack's test_sqs.snapshot.json). */
export function unknownAttribute(name: string, advice?: string): SqsError {
  return new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`, { advice });
}

/**
 * A boolean attribute as SQS reads it: `true`/`false` in any case (`"True"`, as CloudFormation and
 * Python callers send it, is accepted), kept lowercase as GetQueueAttributes returns it; undefined
 * for anything else. Source: localstack's provider reads booleans this way after AWS
 * (localstack-core/localstack/services/sqs/models.py, get_queue_attributes).
 */
export function parseBoolean(text: string): 'true' | 'false' | undefined {
  const lower = text.toLowerCase();
  return lower === 'true' || lower === 'false' ? lower : undefined;
}

/**
 * Normalises one attribute value for comparison and storage (booleans lowercased), so that CreateQueue
 * with `"True"` finds the queue created with `"true"` identical.
 */
export function normalizeAttribute(name: string, value: string): string {
  return BOOLEANS.includes(name) ? (parseBoolean(value) ?? value) : value;
}

/**
 * Parses `attributes` on top of `base` (the current attributes, or none at creation). `FifoQueue` is
 * the model's to decide (it fixes the queue type); here it is only stored. Throws InvalidAttributeName /
 * InvalidAttributeValue / InvalidParameterValue with AWS's texts.
 */
export function parseQueueAttributes(
  attributes: Readonly<Record<string, string>>,
  options: { fifo: boolean; base?: Readonly<Record<string, string>> },
): QueueConfig {
  const raw: Record<string, string> = { ...(options.base ?? {}) };
  const fifo = options.fifo;
  for (const [name, value] of Object.entries(attributes)) {
    if (!Object.hasOwn(INTEGER_RANGES, name) && !OTHER.includes(name)) throw unknownAttribute(name);
    if (!fifo && (name === 'DeduplicationScope' || name === 'FifoThroughputLimit')) {
      // localstack's StandardQueue.validate_queue_attributes (localstack-core/localstack/services/sqs/models.py).
      throw new SqsError('InvalidAttributeName', `You can specify the ${name} only when FifoQueue is set to true.`);
    }
    if (!fifo && FIFO_ONLY.includes(name)) throw unknownAttribute(name, 'it is valid for FIFO queues only (a name ending in .fifo and FifoQueue=true)');
    raw[name] = normalizeAttribute(name, value);
  }
  if (attributes.KmsMasterKeyId && parseBoolean(attributes.SqsManagedSseEnabled ?? '') === 'true') {
    // Recorded: localstack test_sqs.snapshot.json, test_sse_kms_and_sqs_are_mutually_exclusive.
    throw new SqsError('InvalidAttributeName', 'You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.');
  }
  for (const [name, [, , fallback]] of Object.entries(INTEGER_RANGES)) {
    if (name === 'KmsDataKeyReusePeriodSeconds' && raw.KmsMasterKeyId === undefined && raw[name] === undefined) continue;
    raw[name] ??= fallback;
  }
  // Recorded default: "SqsManagedSseEnabled": "true" on a queue created without it (localstack
  // test_sqs.snapshot.json, test_create_and_update_queue_attributes, 14-11-2023).
  raw.SqsManagedSseEnabled ??= raw.KmsMasterKeyId ? 'false' : 'true';
  // Invalid integers: "Invalid value for the parameter DelaySeconds." (the text local-aws-sqs's
  // test/create-queue.test.ts expects from AWS, and moto's InvalidAttributeValue in moto/sqs/exceptions.py).
  const integer = (name: string): number => {
    const range = INTEGER_RANGES[name];
    const text = raw[name];
    if (!range || text === undefined) return 0;
    const value = Number(text);
    if (!/^-?\d+$/.test(text) || value < range[0] || value > range[1]) {
      throw invalidAttributeValue(name, undefined, `use an integer from ${range[0]} to ${range[1]}`);
    }
    return value;
  };
  const boolean = (name: string): boolean => {
    const text = raw[name];
    if (text === undefined) return false;
    const value = parseBoolean(text);
    if (value === undefined) throw invalidAttributeValue(name, undefined, 'use true or false');
    return value === 'true';
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
    const text = raw[name];
    if (text === undefined) return fallback;
    if (!(values as readonly string[]).includes(text)) throw invalidAttributeValue(name, undefined, `use one of ${values.join(', ')}`);
    return text as T;
  };

  if (fifo) {
    raw.FifoQueue = 'true';
    raw.ContentBasedDeduplication ??= 'false';
    // AWS's values are `messageGroup` and `queue`, and `queue` is the default: recorded
    // "DeduplicationScope": "queue" in localstack test_sqs.snapshot.json, test_fifo_set_content_based_deduplication_strategy.
    raw.DeduplicationScope ??= 'queue';
    raw.FifoThroughputLimit ??= 'perQueue';
  }
  const config: QueueConfig = {
    fifo,
    delaySeconds: integer('DelaySeconds'),
    maximumMessageSize: integer('MaximumMessageSize'),
    messageRetentionPeriod: integer('MessageRetentionPeriod'),
    receiveMessageWaitTimeSeconds: integer('ReceiveMessageWaitTimeSeconds'),
    visibilityTimeout: integer('VisibilityTimeout'),
    contentBasedDeduplication: boolean('ContentBasedDeduplication'),
    deduplicationScope: oneOf('DeduplicationScope', ['queue', 'messageGroup'] as const, 'queue'),
    fifoThroughputLimit: oneOf('FifoThroughputLimit', ['perQueue', 'perMessageGroupId'] as const, 'perQueue'),
    raw,
  };
  integer('KmsDataKeyReusePeriodSeconds');
  boolean('SqsManagedSseEnabled');
  if (config.fifoThroughputLimit === 'perMessageGroupId' && config.deduplicationScope !== 'messageGroup') {
    throw invalidAttributeValue('FifoThroughputLimit', undefined, 'perMessageGroupId is allowed only with DeduplicationScope=messageGroup');
  }
  if (raw.RedrivePolicy !== undefined && raw.RedrivePolicy !== '') {
    config.redrivePolicy = parseRedrivePolicy(raw.RedrivePolicy);
  } else {
    delete raw.RedrivePolicy;
  }
  if (raw.RedriveAllowPolicy !== undefined && raw.RedriveAllowPolicy !== '') {
    config.redriveAllowPolicy = parseRedriveAllowPolicy(raw.RedriveAllowPolicy);
  } else {
    delete raw.RedriveAllowPolicy;
  }
  return config;
}

// The RedrivePolicy and RedriveAllowPolicy texts are AWS's, as local-aws-sqs's test/create-queue.test.ts
// expects them (Inqnuam/local-aws-sqs), and as localstack recorded "Invalid value for deadLetterTargetArn."
// (test_sqs.snapshot.json, test_invalid_dead_letter_arn_rejected_before_lookup). The value quoted is the
// caller's own text.
function parseRedrivePolicy(text: string): NonNullable<QueueConfig['redrivePolicy']> {
  const reason = (why: string): SqsError => invalidParameter('RedrivePolicy', text, why);
  const parsed = parseJsonMap(text);
  if (!parsed) throw invalidAttributeValue('RedrivePolicy', 'Redrive policy is not a valid JSON map.');
  const { deadLetterTargetArn, maxReceiveCount } = parsed;
  if (maxReceiveCount === undefined) throw reason('Redrive policy does not contain mandatory attribute: maxReceiveCount.');
  if (deadLetterTargetArn === undefined) throw reason('Redrive policy does not contain mandatory attribute: deadLetterTargetArn.');
  if (Object.keys(parsed).some((key) => key !== 'maxReceiveCount' && key !== 'deadLetterTargetArn')) {
    throw reason('Only following attributes are supported: [maxReceiveCount, deadLetterTargetArn].');
  }
  if (typeof deadLetterTargetArn !== 'string' || !/^arn:[^:]+:[^:]+:[^:]*:[^:]*:.+$/.test(deadLetterTargetArn)) {
    throw reason('Invalid value for deadLetterTargetArn.');
  }
  if (deadLetterTargetArn.split(':')[2] !== 'sqs') throw reason('Only SQS queues are valid resources for deadLetterTargetArn.');
  const count = typeof maxReceiveCount === 'string' && /^-?\d+$/.test(maxReceiveCount) ? Number(maxReceiveCount) : maxReceiveCount;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000) {
    throw reason(`Invalid value for maxReceiveCount: ${String(maxReceiveCount)}, valid values are from 1 to 1000 both inclusive.`);
  }
  return { deadLetterTargetArn, maxReceiveCount: count };
}

function parseRedriveAllowPolicy(text: string): NonNullable<QueueConfig['redriveAllowPolicy']> {
  const unsupported = (): SqsError =>
    invalidAttributeValue('RedriveAllowPolicy', "Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format.");
  const reason = (why: string): SqsError => invalidParameter('RedriveAllowPolicy', text, `Amazon SQS can't create the redrive allow policy. ${why}`);
  const parsed = parseJsonMap(text);
  if (!parsed) throw unsupported();
  const { redrivePermission, sourceQueueArns } = parsed;
  if (Object.keys(parsed).some((key) => key !== 'redrivePermission' && key !== 'sourceQueueArns')) throw unsupported();
  if (redrivePermission !== 'allowAll' && redrivePermission !== 'denyAll' && redrivePermission !== 'byQueue') throw unsupported();
  if (sourceQueueArns !== undefined && (!Array.isArray(sourceQueueArns) || sourceQueueArns.some((a) => typeof a !== 'string'))) {
    throw unsupported();
  }
  const arns = (sourceQueueArns ?? []) as string[];
  if (redrivePermission !== 'byQueue' && arns.length > 0) throw reason('To specify one or more source queue ARNs, you must set redrivePermission to byQueue.');
  if (redrivePermission === 'byQueue' && arns.length === 0) {
    throw reason('When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.');
  }
  if (arns.length > 10) throw reason('The maximum number of source queue ARNs you can specify is 10.');
  return { redrivePermission, sourceQueueArns: arns };
}

function parseJsonMap(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
