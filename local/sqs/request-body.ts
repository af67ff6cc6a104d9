import type { IncomingMessage } from 'node:http';
import { MAX_MESSAGE_SIZE } from './queue-attributes.js';

/**
 * The largest request body the front reads. AWS answers a larger one with HTTP 413 and the plain text
 * `HTTP content length exceeded <limit> bytes.` (recorded by users in aws/aws-sdk-js#479,
 * spring-attic/spring-cloud-aws#111 and subscribepro/subscribepro-magento2-ext#280, all with a limit of
 * 1662976 bytes, from the days of 256 KiB messages). AWS has not published the limit for 1 MiB messages;
 * this one is the largest body a valid request can have: 1 MiB of message data in a batch, every
 * character JSON-escaped to two bytes, plus room for the envelope.
 */
export const MAX_REQUEST_BYTES = 2 * MAX_MESSAGE_SIZE + 64 * 1024;

/**
 * Whether the request is an AWS JSON 1.0 request. SQS serves two protocols on one endpoint and tells
 * them apart by Content-Type; media type parameters (`; charset=utf-8`) are allowed (smithy-lang/smithy,
 * smithy-aws-protocol-tests/model/awsJson1_0/content-type.smithy: servers ignore them).
 */
export function isAwsJson10(req: IncomingMessage): boolean {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  return type === 'application/x-amz-json-1.0';
}
