import type { SqsModel } from '../sqs/model.js';
import type { StreamEventSourceOptions } from './options.js';

/**
 * Where the event source sends the record of a discarded batch (DestinationConfig.OnFailure): an SQS
 * queue of the local SqsModel, which receives Lambda's failure-record JSON as the message body, or an
 * in-memory list that collects the same objects.
 */
export type OnFailureDestination = NonNullable<StreamEventSourceOptions<unknown, unknown>['onFailure']>;

/** Adds to `problems` what is wrong with a destination: an unknown type, a missing or FIFO queue. */
export function checkDestination(destination: OnFailureDestination | undefined, problems: string[]): void {
  if (destination === undefined) return;
  if (destination.type === 'memory') {
    if (!Array.isArray(destination.records)) problems.push('onFailure.records must be an array to collect the failure records in.');
    return;
  }
  if (destination.type !== 'sqs') {
    problems.push(`onFailure.type must be 'sqs' or 'memory'; got ${JSON.stringify((destination as { type: unknown }).type)}.`);
    return;
  }
  // The options name only what a user's code sees of the model; sending is its internal side.
  if (typeof (destination.model as Partial<SqsModel>).sendMessage !== 'function') {
    problems.push('onFailure.model must be the local SQS model: local.sqs.model of startLocal() (sqs-inbox/local).');
    return;
  }
  let fifo: boolean;
  try {
    fifo = destination.model.getQueue(destination.queue).fifo;
  } catch {
    problems.push(`onFailure.queue ${destination.queue} does not exist in the SQS model: create it first (model.createQueue).`);
    return;
  }
  if (fifo) {
    problems.push(`onFailure.queue ${destination.queue} is a FIFO queue: the failure record is sent without a MessageGroupId, so use a standard queue.`);
  }
}

/** The destination refused a failure record (its queue was deleted, say); `cause` holds why. */
export class DestinationError extends Error {
  constructor(cause: unknown) {
    super(`the on-failure destination refused the failure record: ${String(cause)}`, { cause });
    this.name = 'DestinationError';
  }
}

/**
 * Sends one failure record to the destination: as the body of an SQS message, or pushed on the list.
 * A refusal throws {@link DestinationError}.
 */
export async function deliver(destination: OnFailureDestination, failureRecord: Record<string, unknown>): Promise<void> {
  if (destination.type === 'memory') {
    destination.records.push(failureRecord);
    return;
  }
  try {
    await (destination.model as SqsModel).sendMessage({ queue: destination.queue, body: JSON.stringify(failureRecord) });
  } catch (error) {
    throw new DestinationError(error);
  }
}
