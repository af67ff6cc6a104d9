import type { StoredMessage } from './message.js';
import { isInFlight } from './queue.js';

/**
 * The messages a FIFO ReceiveMessage may return now, in order.
 *
 * What locks a group is its head, the oldest message still in the queue: while the head is in flight,
 * nothing of the group is returned. Once the head is visible again (its timeout ran out, or was changed
 * to 0 or shortened), the group is available at once, even if later messages are still in flight; a
 * receive then takes the visible messages from the head up to the first one that is not visible, so
 * order is never skipped, and extending a later message's timeout does not hide the ones before it.
 * Recorded against SQS in localstack's tests/aws/services/sqs/test_sqs.py
 * (test_fifo_message_group_visibility_after_terminate_visibility_timeout,
 * test_fifo_message_group_visibility_after_change_message_visibility,
 * test_fifo_message_group_visibility_after_partial_delete), all `@markers.aws.validated`.
 *
 * Groups are served in the order of their oldest message; within one call, as many messages of a group
 * as possible before the next group (FIFO-queues-understanding-logic in the SQS developer guide).
 * `takeAway` returns true for a message it moved elsewhere (redrive); the walk then goes on past it.
 */
export function pickFifoMessages(messages: Iterable<StoredMessage>, now: number, max: number, takeAway: (message: StoredMessage) => boolean): StoredMessage[] {
  const groups = new Map<string, StoredMessage[]>();
  for (const message of messages) {
    const group = message.messageGroupId ?? '';
    let list = groups.get(group);
    if (!list) groups.set(group, (list = []));
    list.push(message);
  }
  const picked: StoredMessage[] = [];
  for (const list of groups.values()) {
    if (picked.length >= max) break;
    const head = list[0];
    if (!head || isInFlight(head, now)) continue;
    for (const message of list) {
      if (picked.length >= max) break;
      // In flight or still delayed: later messages of the group wait behind it.
      if (message.visibleAt > now) break;
      if (takeAway(message)) continue;
      picked.push(message);
    }
  }
  return picked;
}
