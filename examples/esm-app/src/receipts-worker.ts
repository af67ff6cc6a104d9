// src/receipts-worker.ts: credits an account and hands a receipt on through the outbox
import { SQSClient } from '@aws-sdk/client-sqs';
import { inbox } from 'sqs-inbox';
import { sqsOutbox } from 'sqs-inbox/outbox';
import { applyCredit } from './credits.js';
import type { Credit } from './credits.js';

export const handler = inbox<Credit>({
  // Destination names from INBOX_DESTINATIONS (the InboxConsumer construct sets it; so does runScenario).
  outbox: sqsOutbox({ client: new SQSClient({}) }),
  apply: async (tx, { body }) => {
    await applyCredit(tx, body);
    tx.send({ to: 'receipts', body: { creditId: body.creditId }, groupId: body.account });
  },
});
