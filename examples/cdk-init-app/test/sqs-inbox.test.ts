// Run by the jest that `cdk init app --language typescript` set up (its jest.config.js untouched: @swc/jest
// compiles to CommonJS, so every import below is a require of sqs-inbox's CommonJS build).
import { InboxConfigError, PermanentError, inbox } from 'sqs-inbox';
import { InboxConsumer, InboxDatabase, InboxQueue } from 'sqs-inbox/cdk';
import { createProducer } from 'sqs-inbox/producer';
import { sqsOutbox } from 'sqs-inbox/outbox';
import { runScenario, startLocal } from 'sqs-inbox/local';
// The handler's module builds its handler when it loads, and no INBOX_* variable is set here.
import { handler } from '../src/payments-worker';

test('loads every sqs-inbox entry', () => {
  for (const loaded of [inbox, InboxConsumer, InboxDatabase, InboxQueue, createProducer, sqsOutbox, runScenario, startLocal]) {
    expect(typeof loaded).toBe('function');
  }
  expect(new PermanentError('no payment id')).toBeInstanceOf(Error);
});

test('imports the handler module with no INBOX_* set; its first invocation names the setting it lacks', async () => {
  expect(Object.keys(process.env).filter((name) => name.startsWith('INBOX_'))).toEqual([]);
  const invoked = handler({ Records: [] });
  await expect(invoked).rejects.toThrow(InboxConfigError);
  await expect(invoked).rejects.toThrow('inbox option "consumer": is not set');
});
