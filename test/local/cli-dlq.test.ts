import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REDRIVEN_MESSAGE_ID_ATTRIBUTE } from '../../lambda/inbox/prepare/keys.js';
import { payloadHash } from '../../lambda/inbox/prepare/keys.js';
import { BIN, cliRun, databaseEnv } from '../support/cli.js';
import { inboxFixture } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { startSqsFixture } from '../support/sqs.js';
import type { SqsFixture } from '../support/sqs.js';

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

let db: InboxFixture;
let f: SqsFixture;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
  db = await inboxFixture('cli_dlq');
  env = databaseEnv(db);
});
afterAll(async () => db.close());
beforeEach(async () => {
  f = await startSqsFixture();
});
afterEach(async () => f.close());

/**
 * Runs the CLI while the local SQS's clock goes on (half a second every 10 ms): the redrive long-polls, and on
 * the fixture's manual clock a poll of an empty queue would never end.
 */
async function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const ticking = setInterval(() => f.clock.advance(500), 10);
  try {
    return await cliRun(args, { AWS_REGION: 'us-east-1', ...env }, children);
  } finally {
    clearInterval(ticking);
  }
}

/** A FIFO queue whose dead-letter queue holds `bodies` (group g1), dead-lettered after one receive each. */
async function deadLettered(name: string, bodies: string[]) {
  const model = f.sqs.model;
  const dlq = model.createQueue(`${name}-dlq.fifo`, { FifoQueue: 'true' });
  const queue = model.createQueue(`${name}.fifo`, {
    FifoQueue: 'true',
    VisibilityTimeout: '30',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
  });
  for (const [index, body] of bodies.entries()) {
    await f.client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body, MessageGroupId: 'g1', MessageDeduplicationId: `d${index}` }));
  }
  const sent = model.peekMessages(queue.name).map((m) => m.messageId);
  while ((await model.receiveMessages({ queue: queue.name, maxNumberOfMessages: 10 })).length > 0) f.clock.advance(31_000);
  f.clock.advance(31_000);
  expect(await model.receiveMessages({ queue: queue.name, maxNumberOfMessages: 10 })).toEqual([]);
  expect(model.peekMessages(dlq.name).map((m) => m.messageId)).toEqual(sent);
  return { dlq, queue, sent };
}

describe('sqs-inbox dlq redrive', () => {
  it('is listed in the help', async () => {
    expect((await run(['--help'])).stdout).toMatch(/\n {2}dlq {9}redrives a dead-letter queue/);
    expect((await run(['dlq', '--help'])).stdout).toContain('Usage: sqs-inbox dlq redrive --dlq URL');
  });

  it.each([
    ['no subcommand', ['dlq'], 'give a subcommand: redrive'],
    ['another subcommand', ['dlq', 'purge'], '"purge" is not a subcommand of dlq'],
    ['no --dlq', ['dlq', 'redrive'], '--dlq is required'],
    ['a --dlq that is no queue URL', ['dlq', 'redrive', '--dlq', 'orders-dlq'], '--dlq "orders-dlq" is not a queue URL'],
    ['a bad --max', ['dlq', 'redrive', '--dlq', 'https://sqs.us-east-1.amazonaws.com/1/q', '--max', '0'], '--max "0" must be a whole number of at least 1'],
    [
      'database flags without --consumer',
      ['dlq', 'redrive', '--dlq', 'https://sqs.us-east-1.amazonaws.com/1/q', '--resource-arn', 'arn:x'],
      '--resource-arn is for --consumer',
    ],
    [
      '--consumer without a database',
      ['dlq', 'redrive', '--dlq', 'https://sqs.us-east-1.amazonaws.com/1/q', '--consumer', 'c'],
      '--resource-arn (or INBOX_RESOURCE_ARN) is required',
    ],
    [
      '--consumer without --to',
      ['dlq', 'redrive', '--dlq', 'https://sqs.us-east-1.amazonaws.com/1/q', '--consumer', 'c', '--resource-arn', 'arn:x', '--secret-arn', 'arn:y'],
      '--consumer needs --to, the queue c consumes',
    ],
  ])('refuses %s with exit 2, naming the fix', async (_, args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it('moves each message back in order, stamped with its first messageId, and prints the counts', async () => {
    const { dlq, queue, sent } = await deadLettered('orders', ['{"n":1}', '{"n":2}']);
    const dry = await run(['dlq', 'redrive', '--dlq', dlq.url, '--sqs-endpoint', f.sqs.endpoint, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('Dry run, nothing sent or deleted: would move 2, would skip 0, failed 0.');
    expect(f.sqs.model.peekMessages(dlq.name)).toHaveLength(2);
    f.clock.advance(61_000);

    const result = await run(['dlq', 'redrive', '--dlq', dlq.url, '--sqs-endpoint', f.sqs.endpoint]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`${sent[0]}\\s+moved\\s+g1\\s+\\S+/${queue.name}\\s+as ${sent[0]}`));
    expect(result.stdout).toContain('Moved 2, skipped 0, failed 0.');
    const back = f.sqs.model.peekMessages(queue.name);
    expect(back.map((m) => [m.body, m.messageAttributes[REDRIVEN_MESSAGE_ID_ATTRIBUTE]?.stringValue])).toEqual([
      ['{"n":1}', sent[0]],
      ['{"n":2}', sent[1]],
    ]);
    expect(f.sqs.model.peekMessages(dlq.name)).toEqual([]);
  });

  it('with --consumer, deletes without a send each message whose key the consumer claimed for its body', async () => {
    const { dlq, queue, sent } = await deadLettered('payments', ['{"n":1}', '{"n":2}']);
    await db.query('INSERT INTO inbox.consumed_message (consumer_name, message_id, payload_sha256) VALUES ($1, $2, $3)', [
      'payment-worker',
      sent[0],
      Buffer.from(payloadHash('{"n":1}')),
    ]);
    const result = await run(
      ['dlq', 'redrive', '--dlq', dlq.url, '--to', queue.url, '--sqs-endpoint', f.sqs.endpoint, '--consumer', 'payment-worker', '--json'],
      env,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      moved: 1,
      skipped: 1,
      failed: 0,
      outcomes: [
        { messageId: sent[0], status: 'skipped' },
        { messageId: sent[1], status: 'moved' },
      ],
    });
    expect(f.sqs.model.peekMessages(queue.name).map((m) => m.body)).toEqual(['{"n":2}']);
  });
});
