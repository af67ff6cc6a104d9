import { randomBytes } from 'node:crypto';
import { SqsError, invalidParameter } from './errors.js';
import type { StoredMessage } from './message.js';
import { isInFlight } from './queue.js';
import type { BatchEntryFailure } from './types.js';

/**
 * What a receipt handle still allows, by queue type. The rules come from answers recorded against SQS:
 *
 * - FIFO: a handle works only while its receive is in flight. DeleteMessage after the visibility timeout
 *   (or after ChangeMessageVisibility to 0) is refused with InvalidParameterValue "The receipt handle has
 *   expired." (localstack tests/aws/services/sqs/test_sqs.snapshot.json,
 *   test_fifo_delete_message_with_expired_receipt_handle; the AWS SDK team in aws/aws-sdk-js#1750), while a
 *   delete after the timeout was extended succeeds (localstack PR #13223, test_fifo_delete_after_visibility_timeout_extended).
 * - Standard: DeleteMessage with the latest handle deletes even after the timeout (localstack
 *   test_remove_message_with_old_receipt_handle); an older handle succeeds and deletes nothing (API
 *   reference, DeleteMessage). ChangeMessageVisibility after the timeout answers 200 and changes nothing
 *   (localstack PR #9632, snapshot test_change_message_visibility_after_visibility_timeout_expiration);
 *   any handle of an in-flight message changes it (localstack test_terminate_visibility_timeout_after_receive);
 *   a deleted message cannot be changed (test_change_visibility_on_deleted_message_raises_invalid_parameter_value).
 */
export type HandleVerdict = 'apply' | 'ignore';

/** A new handle for one receive of `messageId` in queue `queueName`. */
export function encodeReceiptHandle(queueName: string, messageId: string): string {
  return Buffer.from(`${queueName}\n${messageId}\n${randomBytes(24).toString('base64')}`, 'utf8').toString('base64');
}

/**
 * The message id in a handle of this queue; ReceiptHandleIsInvalid, with AWS's text, for anything else.
 * Text: the SQS developer guide, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/troubleshooting-api-errors.html,
 * and localstack's test_delete_message_with_illegal_receipt_handle (`The input receipt handle "garbage" is not a valid receipt handle.`).
 */
export function decodeReceiptHandle(queueName: string, receiptHandle: string): string {
  const invalid = new SqsError('ReceiptHandleIsInvalid', `The input receipt handle "${String(receiptHandle)}" is not a valid receipt handle.`);
  if (typeof receiptHandle !== 'string' || !/^[A-Za-z0-9+/]+=*$/.test(receiptHandle)) throw invalid;
  const parts = Buffer.from(receiptHandle, 'base64').toString('utf8').split('\n');
  if (parts.length !== 3 || parts[0] !== queueName || !parts[1]) throw invalid;
  return parts[1];
}

/** A FIFO handle used after its receive ended. DeleteMessageBatch reports it per entry with its own code. */
export class ReceiptHandleExpired extends SqsError {
  constructor(receiptHandle: string) {
    super('InvalidParameterValue', `Value ${receiptHandle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`, {
      advice: 'the visibility timeout ran out before the delete; a FIFO queue refuses it (raise VisibilityTimeout or extend it while working)',
    });
  }

  /**
   * The entry DeleteMessageBatch reports: `ReceiptHandleIsInvalid`, "The receipt handle has expired",
   * as AWS answered a FIFO batch delete in smaskalik/sqsmover#54.
   */
  batchEntry(id: string): BatchEntryFailure {
    return { id, code: 'ReceiptHandleIsInvalid', message: 'The receipt handle has expired', senderFault: true };
  }
}

/** DeleteMessage: delete, or succeed without deleting; throws for an expired FIFO handle. */
export function deleteVerdict(fifo: boolean, message: StoredMessage | undefined, receiptHandle: string, now: number): HandleVerdict {
  if (!message) return 'ignore';
  const current = message.receiptHandle === receiptHandle;
  if (!fifo) return current ? 'apply' : 'ignore';
  if (current && isInFlight(message, now)) return 'apply';
  throw new ReceiptHandleExpired(receiptHandle);
}

/** ChangeMessageVisibility: change, or succeed without changing; throws for a deleted message or an expired FIFO handle. */
export function visibilityVerdict(fifo: boolean, message: StoredMessage | undefined, receiptHandle: string, now: number): HandleVerdict {
  if (!message) {
    throw invalidParameter('ReceiptHandle', receiptHandle, 'Message does not exist or is not available for visibility timeout change.');
  }
  if (!fifo) return isInFlight(message, now) ? 'apply' : 'ignore';
  // FIFO after expiry: no recorded answer found; refused like DeleteMessage, since the handle's receive is over.
  if (message.receiptHandle === receiptHandle && isInFlight(message, now)) return 'apply';
  throw new ReceiptHandleExpired(receiptHandle);
}
