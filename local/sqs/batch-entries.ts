import { SqsError } from './errors.js';
import type { BatchEntryFailure } from './types.js';

const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * Request-level checks shared by every batch operation, with AWS's texts: `EmptyBatchRequest` (moto's
 * text, moto/sqs/exceptions.py, naming the operation's entry type), `TooManyEntriesInBatchRequest` and
 * `InvalidBatchEntryId` (recorded in localstack's tests/aws/services/sqs/test_sqs.snapshot.json),
 * `BatchEntryIdsNotDistinct` "Id <id> repeated." (moto/sqs/exceptions.py).
 *
 * @param entryType - `SendMessageBatchRequestEntry`, `DeleteMessageBatchRequestEntry` or `ChangeMessageVisibilityBatchRequestEntry`
 */
export function checkBatchEntries(ids: readonly string[], entryType: string): void {
  if (ids.length === 0) throw new SqsError('EmptyBatchRequest', `There should be at least one ${entryType} in the request.`);
  if (ids.length > 10) {
    throw new SqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are 10. You have sent ${ids.length}.`);
  }
  const seen = new Set<string>();
  for (const id of ids) {
    if (typeof id !== 'string' || !BATCH_ENTRY_ID.test(id)) {
      throw new SqsError(
        'InvalidBatchEntryId',
        'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
        {
          advice: `the offending id is ${JSON.stringify(id)}`,
        },
      );
    }
    if (seen.has(id)) throw new SqsError('BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
    seen.add(id);
  }
}

/** One failed entry as SQS reports it in `Failed`. */
export function entryFailure(id: string, error: unknown): BatchEntryFailure {
  if (error instanceof SqsError) return { id, code: error.queryCode, message: error.message, senderFault: error.senderFault };
  return { id, code: 'InternalError', message: String(error), senderFault: false };
}
