/**
 * An error of a local stream model (Kinesis, DynamoDB Streams, Kafka), named after the service's own
 * error code so a reader recognises it: `ResourceNotFoundException`, `InvalidArgumentException`,
 * `UNKNOWN_TOPIC_OR_PARTITION`. Callers branch on `code`, never on the message.
 */
export class StreamModelError extends Error {
  /** The service's error code. */
  readonly code: string;

  constructor(code: string, message: string) {
    super(`${code}: ${message}`);
    this.name = 'StreamModelError';
    this.code = code;
  }
}
