// `sqs-inbox dlq redrive`: moves a dead-letter queue's messages back to their source queue, each stamped with
// its first messageId, so that an inbox consumer keyed on it finds the committed ones duplicates. Flags are
// checked before the library, the AWS SDK and the database are loaded.
import type { DeadLetterOutcome, DeadLetterRedriveReport } from '../../lambda/operations/dead-letter-redrive.js';
import { session } from './database-commands.js';
import { DATABASE_FLAGS, UsageError, atLeast, databaseTarget, endpointFlag, queueUrlFlag, subcommandFlags } from './flags.js';
import type { FlagSpecs, Values } from './flags.js';
import { printable, printableJson } from './printable.js';
import { sqsClient } from './sqs-client.js';
import { table } from './table.js';
import { DLQ_USAGE } from './usage.js';

export const DLQ_FLAGS = {
  dlq: { type: 'string', example: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq' },
  to: { type: 'string', example: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' },
  consumer: { type: 'string', example: 'order-worker' },
  'dry-run': { type: 'boolean' },
  max: { type: 'string', example: '100' },
  json: { type: 'boolean' },
  'sqs-endpoint': { type: 'string', example: 'http://127.0.0.1:9324' },
  ...DATABASE_FLAGS,
} as const satisfies FlagSpecs;

type DlqValues = Values<typeof DLQ_FLAGS>;

/** The database flags: they mean something only with --consumer, whose claims they read. */
const DATABASE_ONLY = ['resource-arn', 'secret-arn', 'database', 'endpoint'] as const;

export async function dlqCommand(args: string[]): Promise<number> {
  const { values, run } = subcommandFlags(args, DLQ_FLAGS, 'dlq', 'redrive', 'sqs-inbox dlq redrive --dlq URL');
  if (run) return redrive(values);
  process.stdout.write(DLQ_USAGE);
  return 0;
}

async function redrive(values: DlqValues): Promise<number> {
  if (!values.dlq) throw new UsageError(`--dlq is required: the dead-letter queue's URL, e.g. --dlq ${DLQ_FLAGS.dlq.example}`);
  queueUrlFlag(values.dlq, '--dlq', DLQ_FLAGS.dlq.example);
  queueUrlFlag(values.to, '--to', DLQ_FLAGS.to.example);
  endpointFlag(values['sqs-endpoint'], DLQ_FLAGS['sqs-endpoint'].example);
  const max = values.max === undefined ? undefined : atLeast(values.max, '--max', 1, DLQ_FLAGS.max.example);
  if (!values.consumer) {
    const given = DATABASE_ONLY.find((flag) => values[flag] !== undefined);
    if (given) throw new UsageError(`--${given} is for --consumer, whose claims it reads: add --consumer NAME, or leave --${given} out`);
  }
  const target = values.consumer ? databaseTarget(values, process.env) : undefined;
  if (values.consumer && !values.to) {
    throw new UsageError(
      `--consumer needs --to, the queue ${values.consumer} consumes: a dead-letter queue may serve several queues, and one consumer's claims say nothing of another queue's messages`,
    );
  }
  const [{ redriveDeadLetters }, client] = await Promise.all([
    import('../../lambda/inbox/operations.js'),
    sqsClient({ endpoint: values['sqs-endpoint'], queueUrl: values.dlq }),
  ]);
  try {
    const report = await redriveDeadLetters({
      client,
      deadLetterQueueUrl: values.dlq,
      destinationQueueUrl: values.to,
      dryRun: values['dry-run'],
      max,
      ...(target ? { consumer: values.consumer, session: await session(target), schema: values.schema } : {}),
    });
    if (values.json) process.stdout.write(`${printableJson(report)}\n`);
    else process.stdout.write(summary(report, values['dry-run']));
    return report.failed === 0 ? 0 : 1;
  } finally {
    client.destroy();
  }
}

function summary(report: DeadLetterRedriveReport, dryRun: boolean): string {
  const rows = report.outcomes.map((outcome) => [
    printable(outcome.messageId),
    outcome.status,
    printable(outcome.groupId ?? '-'),
    printable(outcome.destination ?? '-'),
    printable(detail(outcome)),
  ]);
  const counts = `${dryRun ? 'Dry run, nothing sent or deleted: would move' : 'Moved'} ${report.moved}, ${dryRun ? 'would skip' : 'skipped'} ${report.skipped}, failed ${report.failed}.`;
  return `${rows.length === 0 ? 'The dead-letter queue had no message to move.\n' : table(['MESSAGE ID', 'STATUS', 'GROUP', 'TO', 'DETAIL'], rows)}${counts}\n`;
}

function detail(outcome: DeadLetterOutcome): string {
  if (outcome.reason !== undefined) return outcome.reason;
  if (outcome.status === 'skipped' || outcome.status === 'would-skip') return 'its effect committed: deleted without a send';
  return `as ${outcome.originalMessageId}`;
}
