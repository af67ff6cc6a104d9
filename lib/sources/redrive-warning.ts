import { Annotations } from 'aws-cdk-lib';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** The id of the warning, to acknowledge it: `Annotations.of(consumer).acknowledgeWarning(CONSOLE_REDRIVE_WARNING)`. */
export const CONSOLE_REDRIVE_WARNING = 'sqs-inbox:dlq-console-redrive';

/**
 * Warns that the consumer's dead-letter queue can be redriven by SQS itself (the console's "Start DLQ redrive",
 * StartMessageMoveTask), which gives each message a new messageId: a consumer keyed on the messageId then
 * applies a committed message a second time. The construct cannot see the handler's `key`, so the warning is
 * there for every SQS consumer with a dead-letter queue; one keyed on a producer's key acknowledges it. Nothing
 * in the queues' configuration prevents such a redrive: RedriveAllowPolicy only names the queues that may
 * dead-letter into the queue (denyAll would refuse this consumer's own queue); only IAM can deny the move task.
 */
export function warnConsoleRedrive(consumer: Construct, deadLetterQueue: sqs.IQueue): void {
  Annotations.of(consumer).addWarningV2(
    CONSOLE_REDRIVE_WARNING,
    `Its dead-letter queue ${deadLetterQueue.node.path} can be redriven by SQS (the console's "Start DLQ redrive", ` +
      'StartMessageMoveTask), which gives every message a new messageId: with the handler option key: "message-id", or ' +
      '"auto" for messages without an idempotency-key attribute, a message whose effect committed before it was ' +
      'dead-lettered takes effect a second time. Redrive it with `npx sqs-inbox dlq redrive --dlq <its URL>` instead, ' +
      'which keeps each message\'s key (docs/operations.md, "Dead-letter redrive"), and deny sqs:StartMessageMoveTask to ' +
      "operators. If the handler's key comes from the producer (idempotency-key, an attribute) or from the body, " +
      `acknowledge this warning: Annotations.of(consumer).acknowledgeWarning('${CONSOLE_REDRIVE_WARNING}').`,
  );
}
