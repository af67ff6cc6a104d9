import { describe, expect, it } from 'vitest';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { inbox, InboxConfigError } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';

const database = { resourceArn: 'arn:aws:rds:us-east-1:1:cluster:c', secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:s', client: new RDSDataClient({ region: 'us-east-1' }) };
const apply = async () => {};

const invalid: [string, Partial<InboxOptions>, RegExp][] = [
  ['consumer', { consumer: '' }, /"consumer".*is not set.*INBOX_CONSUMER/],
  ['consumer', { consumer: '-leading-dash' }, /"consumer".*letters, digits/],
  ['consumer', { consumer: 'has space' }, /"consumer"/],
  ['apply', { apply: undefined }, /"apply".*give `apply/],
  ['statement', { statement: { sql: 'SELECT 1 FROM claimed', params: () => ({}) } }, /"statement".*not both/],
  ['fifo.onFailure', { fifo: { onFailure: 'skip' as never } }, /"fifo\.onFailure".*'skip-group' or 'stop-batch'/],
  ['onPermanentError', { onPermanentError: 'drop' as never }, /"onPermanentError".*'retry' or 'park'/],
  ['concurrency', { concurrency: 0 }, /"concurrency".*positive integer/],
  ['callTimeoutMs', { callTimeoutMs: 1.5 }, /"callTimeoutMs"/],
  ['deadlineMarginMs', { deadlineMarginMs: -1 }, /"deadlineMarginMs"/],
  ['key', { key: 'uuid' as never }, /"key".*not a key strategy/],
  ['key.attribute', { key: { attribute: '' } }, /"key\.attribute"/],
  ['key.attribute', { key: { attribute: 5 as never } }, /"key\.attribute": must be a non-empty message attribute name, e\.g\. \{ attribute: "order-key" \}/],
  ['schema', { schema: 'Inbox; DROP' }, /"schema".*must match/],
  ['database.resourceArn', { database: { secretArn: 's', client: database.client } }, /"database\.resourceArn".*INBOX_RESOURCE_ARN/],
  ['database.secretArn', { database: { resourceArn: 'r', client: database.client } }, /"database\.secretArn".*INBOX_SECRET_ARN/],
];

describe('inbox() options, validated once at cold start', () => {
  it.each(invalid)('names %s and the fix', (option, patch, message) => {
    const options = { consumer: 'order-worker', database, apply, ...patch } as InboxOptions;
    const previous = { ...process.env };
    delete process.env.INBOX_RESOURCE_ARN;
    delete process.env.INBOX_SECRET_ARN;
    delete process.env.INBOX_CONSUMER;
    try {
      let thrown: unknown;
      try {
        inbox(options);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(InboxConfigError);
      expect((thrown as InboxConfigError).option).toBe(option);
      expect((thrown as Error).message).toMatch(message);
    } finally {
      process.env = previous;
    }
  });

  it('reads the consumer and the database from the INBOX_* environment the construct sets', () => {
    const previous = { ...process.env };
    process.env.INBOX_RESOURCE_ARN = 'arn:aws:rds:us-east-1:1:cluster:c';
    process.env.INBOX_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:1:secret:s';
    process.env.INBOX_CONSUMER = 'order-worker';
    try {
      expect(() => inbox({ apply })).not.toThrow();
      process.env.INBOX_CONSUMER = 'not valid!';
      expect(() => inbox({ apply })).toThrow(/"consumer"/);
    } finally {
      process.env = previous;
    }
  });
});
