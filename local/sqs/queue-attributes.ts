import { SqsError } from './errors.js';

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
  deduplicationScope: 'messageQueue' | 'messageGroup';
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

const FIFO_ONLY = ['ContentBasedDeduplication', 'DeduplicationScope', 'FifoThroughputLimit'];
const OTHER = [
  'Policy',
  'RedrivePolicy',
  'RedriveAllowPolicy',
  'FifoQueue',
  'KmsMasterKeyId',
  'SqsManagedSseEnabled',
  ...FIFO_ONLY,
];

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
  return name in INTEGER_RANGES || OTHER.includes(name) || (COMPUTED_ATTRIBUTES as readonly string[]).includes(name);
}

/**
 * Parses `attributes` on top of `base` (the current attributes, or none at creation).
 * Throws InvalidAttributeName / InvalidAttributeValue as SQS does.
 */
export function parseQueueAttributes(
  attributes: Readonly<Record<string, string>>,
  options: { creating: boolean; fifo: boolean; base?: Readonly<Record<string, string>> },
): QueueConfig {
  const raw: Record<string, string> = { ...(options.base ?? {}) };
  for (const [name, value] of Object.entries(attributes)) {
    if (!(name in INTEGER_RANGES) && !OTHER.includes(name)) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`);
    }
    if (typeof value !== 'string') {
      throw new SqsError('InvalidAttributeValue', `Invalid value for the parameter ${name}: attribute values are strings.`);
    }
    if (name === 'FifoQueue' && !options.creating) {
      throw new SqsError('InvalidAttributeName', 'FifoQueue can only be set when the queue is created.');
    }
    if (FIFO_ONLY.includes(name) && !options.fifo) {
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}. It is valid for FIFO queues only (name ending in .fifo, FifoQueue=true).`);
    }
    raw[name] = value;
  }
  for (const [name, [, , fallback]] of Object.entries(INTEGER_RANGES)) {
    if (name === 'KmsDataKeyReusePeriodSeconds' && raw.KmsMasterKeyId === undefined && raw[name] === undefined) continue;
    raw[name] ??= fallback;
  }
  const integer = (name: string): number => {
    const range = INTEGER_RANGES[name];
    const text = raw[name];
    if (!range || text === undefined) return 0;
    const value = Number(text);
    if (!/^-?\d+$/.test(text) || value < range[0] || value > range[1]) {
      throw new SqsError(
        'InvalidAttributeValue',
        `Invalid value for the parameter ${name}: ${JSON.stringify(text)}. Use an integer from ${range[0]} to ${range[1]}.`,
      );
    }
    return value;
  };
  const boolean = (name: string, fallback: boolean): boolean => {
    const text = raw[name];
    if (text === undefined) return fallback;
    if (text !== 'true' && text !== 'false') {
      throw new SqsError('InvalidAttributeValue', `Invalid value for the parameter ${name}: ${JSON.stringify(text)}. Use "true" or "false".`);
    }
    return text === 'true';
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
    const text = raw[name];
    if (text === undefined) return fallback;
    if (!(values as readonly string[]).includes(text)) {
      throw new SqsError('InvalidAttributeValue', `Invalid value for the parameter ${name}: ${JSON.stringify(text)}. Use one of ${values.join(', ')}.`);
    }
    return text as T;
  };

  const fifo = options.fifo;
  if (fifo) {
    raw.FifoQueue = 'true';
    raw.ContentBasedDeduplication ??= 'false';
    raw.DeduplicationScope ??= 'messageQueue';
    raw.FifoThroughputLimit ??= 'perQueue';
  }
  const config: QueueConfig = {
    fifo,
    delaySeconds: integer('DelaySeconds'),
    maximumMessageSize: integer('MaximumMessageSize'),
    messageRetentionPeriod: integer('MessageRetentionPeriod'),
    receiveMessageWaitTimeSeconds: integer('ReceiveMessageWaitTimeSeconds'),
    visibilityTimeout: integer('VisibilityTimeout'),
    contentBasedDeduplication: boolean('ContentBasedDeduplication', false),
    deduplicationScope: oneOf('DeduplicationScope', ['messageQueue', 'messageGroup'] as const, 'messageQueue'),
    fifoThroughputLimit: oneOf('FifoThroughputLimit', ['perQueue', 'perMessageGroupId'] as const, 'perQueue'),
    raw,
  };
  integer('KmsDataKeyReusePeriodSeconds');
  boolean('SqsManagedSseEnabled', true);
  if (config.fifoThroughputLimit === 'perMessageGroupId' && config.deduplicationScope !== 'messageGroup') {
    throw new SqsError(
      'InvalidAttributeValue',
      'Invalid value for the parameter FifoThroughputLimit: perMessageGroupId is allowed only with DeduplicationScope=messageGroup.',
    );
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

function parseRedrivePolicy(text: string): NonNullable<QueueConfig['redrivePolicy']> {
  const invalid = (reason: string): SqsError =>
    new SqsError('InvalidAttributeValue', `Invalid value for the parameter RedrivePolicy. Reason: ${reason}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('Redrive policy is not a valid JSON map: use {"deadLetterTargetArn":"arn:aws:sqs:...","maxReceiveCount":5}.');
  }
  if (typeof parsed !== 'object' || parsed === null) throw invalid('Redrive policy must be a JSON map.');
  const { deadLetterTargetArn, maxReceiveCount } = parsed as Record<string, unknown>;
  if (typeof deadLetterTargetArn !== 'string' || !deadLetterTargetArn.startsWith('arn:')) {
    throw invalid('deadLetterTargetArn must be the ARN of an SQS queue.');
  }
  const count = typeof maxReceiveCount === 'string' ? Number(maxReceiveCount) : maxReceiveCount;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000) {
    throw invalid('maxReceiveCount must be an integer from 1 to 1000.');
  }
  return { deadLetterTargetArn, maxReceiveCount: count };
}

function parseRedriveAllowPolicy(text: string): NonNullable<QueueConfig['redriveAllowPolicy']> {
  const invalid = (reason: string): SqsError =>
    new SqsError('InvalidAttributeValue', `Invalid value for the parameter RedriveAllowPolicy. Reason: ${reason}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('not valid JSON: use {"redrivePermission":"allowAll"}.');
  }
  const { redrivePermission, sourceQueueArns } = (parsed ?? {}) as Record<string, unknown>;
  if (redrivePermission !== 'allowAll' && redrivePermission !== 'denyAll' && redrivePermission !== 'byQueue') {
    throw invalid('redrivePermission must be allowAll, denyAll or byQueue.');
  }
  const arns = Array.isArray(sourceQueueArns) ? sourceQueueArns.filter((a): a is string => typeof a === 'string') : [];
  if (redrivePermission === 'byQueue' && (arns.length < 1 || arns.length > 10)) {
    throw invalid('byQueue needs 1 to 10 sourceQueueArns.');
  }
  return { redrivePermission, sourceQueueArns: arns };
}
