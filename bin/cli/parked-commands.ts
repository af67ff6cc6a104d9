// `sqs-inbox parked`: list, show, redrive and discard one consumer's parked messages through the Data API.
// The subcommand, its IDs and its flags are checked (and --yes is demanded off a terminal) before the
// library, the AWS SDK and the database are loaded.
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import type { ParkedMessage } from '../../lambda/inbox/parked/store.js';
import type { RedriveResult } from '../../lambda/inbox/parked/redrive.js';
import { session } from './database-commands.js';
import { DATABASE_FLAGS, UsageError, databaseTarget, endpointFlag, parseFlags, queueUrlFlag, wholeNumber } from './flags.js';
import { sqsClient } from './sqs-client.js';
import { table } from './table.js';
import type { FlagsTarget, FlagSpecs, Values } from './flags.js';
import { printable, printableCell, printableJson, printableLines } from './printable.js';
import { PARKED_USAGE } from './usage.js';

export const PARKED_FLAGS = {
  consumer: { type: 'string', example: 'order-worker' },
  json: { type: 'boolean' },
  yes: { type: 'boolean' },
  all: { type: 'boolean' },
  limit: { type: 'string', example: '20' },
  'queue-url': { type: 'string', example: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo' },
  'sqs-endpoint': { type: 'string', example: 'http://127.0.0.1:9324' },
  ...DATABASE_FLAGS,
} as const satisfies FlagSpecs;

type ParkedValues = Values<typeof PARKED_FLAGS>;

const SUBCOMMANDS = ['list', 'show', 'redrive', 'discard'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

/** The flags that mean something to one subcommand only: given to another, they are a mistake. */
const ONLY_FOR: Readonly<Record<string, readonly Subcommand[]>> = {
  all: ['list'],
  limit: ['list'],
  'queue-url': ['redrive'],
  'sqs-endpoint': ['redrive'],
  yes: ['redrive', 'discard'],
};

/** What one run of `sqs-inbox parked` was asked to do, checked. */
interface Request {
  readonly subcommand: Subcommand;
  readonly ids: readonly number[];
  readonly consumer: string;
  readonly values: ParkedValues;
  readonly target: FlagsTarget;
}

export async function parkedCommand(args: string[]): Promise<number> {
  const { positionals, flags } = splitPositionals(args);
  const values = parseFlags(PARKED_FLAGS, flags);
  if (values.help) {
    process.stdout.write(PARKED_USAGE);
    return 0;
  }
  const request = checked(positionals, values);
  if ((request.subcommand === 'redrive' || request.subcommand === 'discard') && !values.yes && !process.stdin.isTTY) {
    throw new UsageError(
      `${request.subcommand} changes the inbox and asks first, but stdin is not a terminal to ask on: add --yes to ${request.subcommand} without asking`,
    );
  }
  switch (request.subcommand) {
    case 'list':
      return list(request);
    case 'show':
      return show(request);
    case 'discard':
      return discard(request);
    case 'redrive':
      return redrive(request);
  }
}

/** The subcommand and its IDs are positionals among the flags; parseFlags takes flags only. */
function splitPositionals(args: string[]): { positionals: string[]; flags: string[] } {
  const options: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, spec] of Object.entries(PARKED_FLAGS)) options[name] = { type: spec.type };
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const positional = new Set(tokens.filter((token) => token.kind === 'positional').map((token) => token.index));
  return { positionals: args.filter((_, index) => positional.has(index)), flags: args.filter((_, index) => !positional.has(index)) };
}

function checked(positionals: string[], values: ParkedValues): Request {
  const [name, ...rest] = positionals;
  if (name === undefined)
    throw new UsageError('give a subcommand: list, show ID, redrive ID... or discard ID..., e.g. sqs-inbox parked list --consumer order-worker');
  if (!(SUBCOMMANDS as readonly string[]).includes(name)) {
    throw new UsageError(`"${name}" is not a subcommand of parked: choose one of ${SUBCOMMANDS.join(', ')}`);
  }
  const subcommand = name as Subcommand;
  for (const [flag, subcommands] of Object.entries(ONLY_FOR)) {
    const given = values[flag as keyof ParkedValues];
    if (given !== undefined && given !== false && !subcommands.includes(subcommand)) {
      throw new UsageError(`--${flag} is for ${subcommands.join(' and ')}, not ${subcommand}`);
    }
  }
  if (subcommand === 'list' && rest.length > 0) throw new UsageError(`list takes no ID; to see one message: sqs-inbox parked show ${rest[0]} --consumer NAME`);
  if (subcommand === 'show' && rest.length !== 1)
    throw new UsageError(`show takes exactly one ID, e.g. sqs-inbox parked show 7 --consumer order-worker; got ${rest.length}`);
  if ((subcommand === 'redrive' || subcommand === 'discard') && rest.length === 0) {
    throw new UsageError(
      `${subcommand} needs the IDs of the messages (as parked list shows them), e.g. sqs-inbox parked ${subcommand} 7 8 --consumer order-worker`,
    );
  }
  const ids = [...new Set(rest.map(parkedId))];
  if (!values.consumer) throw new UsageError('--consumer is required: the consumer name given to inbox({ consumer }), e.g. --consumer order-worker');
  if (values.limit !== undefined) wholeNumber(values.limit, '--limit', 1, 10_000, '20');
  queueUrlFlag(values['queue-url'], '--queue-url', PARKED_FLAGS['queue-url'].example);
  endpointFlag(values['sqs-endpoint'], PARKED_FLAGS['sqs-endpoint'].example);
  return { subcommand, ids, consumer: values.consumer, values, target: databaseTarget(values, process.env) };
}

function parkedId(text: string): number {
  const id = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(id) || id < 1) {
    throw new UsageError(`"${text}" is not a parked message ID: IDs are whole numbers of at least 1, as sqs-inbox parked list shows them`);
  }
  return id;
}

async function store(request: Request) {
  const { parkedMessageStore } = await import('../../lambda/inbox/operations.js');
  return parkedMessageStore({ session: await session(request.target), consumer: request.consumer, schema: request.values.schema });
}

/**
 * The consumers with a claim in the database (a parked message has one too), at most 100, read by a loose
 * index scan of the claims' primary key (consumer_name, message_id): one probe per consumer, however many
 * claims each has, where a DISTINCT would read them all.
 */
const KNOWN_CONSUMERS_SQL = (consumed: string) => `
  WITH RECURSIVE known (consumer_name) AS (
    (SELECT consumer_name FROM ${consumed} ORDER BY consumer_name LIMIT 1)
    UNION ALL
    SELECT (SELECT c.consumer_name FROM ${consumed} c WHERE c.consumer_name > known.consumer_name ORDER BY c.consumer_name LIMIT 1)
      FROM known WHERE known.consumer_name IS NOT NULL
  )
  SELECT consumer_name FROM known WHERE consumer_name IS NOT NULL LIMIT :limit`;

/**
 * When `--consumer` names no consumer this database has seen, what to say instead of "no parked
 * messages": a typo would otherwise read as a clean bill of health.
 */
async function unknownConsumer(request: Request): Promise<string | undefined> {
  const { inboxTables } = await import('../../lambda/inbox/sql/schema.js');
  const { rows } = await (await session(request.target)).executeIdempotent(KNOWN_CONSUMERS_SQL(inboxTables(request.values.schema).consumed), { limit: 100 });
  const known = rows.map((row) => String(row.consumer_name));
  if (known.includes(request.consumer)) return undefined;
  const consumers = known.length === 0 ? 'none has claimed a message yet' : `the consumers here: ${known.map((name) => printable(name)).join(', ')}`;
  return `no consumer "${printable(request.consumer)}" has claimed a message in this database (${consumers}); check --consumer, as given to inbox({ consumer })`;
}

async function list(request: Request): Promise<number> {
  const limit = request.values.limit === undefined ? 100 : Number(request.values.limit);
  const all = request.values.all;
  const messages = await (await store(request)).list({ includeReplayed: all, includeRedriven: all, includeDiscarded: all, limit });
  const unknown = messages.length === 0 ? await unknownConsumer(request) : undefined;
  if (unknown !== undefined) {
    process.stderr.write(`sqs-inbox parked: ${unknown}\n`);
    return 1;
  }
  if (request.values.json) return printJson({ consumer: request.consumer, messages }, 0);
  if (messages.length === 0) {
    process.stdout.write(`No ${all ? '' : 'still '}parked messages for consumer "${printable(request.consumer)}".\n`);
    return 0;
  }
  process.stdout.write(listTable(messages));
  const more = messages.length === limit ? `; the oldest ${limit} shown, --limit shows more` : '';
  process.stdout.write(
    `\n${messages.length} ${all ? '' : 'still '}parked message${messages.length === 1 ? '' : 's'} for consumer "${printable(request.consumer)}"${more}.\n`,
  );
  return 0;
}

async function show(request: Request): Promise<number> {
  const id = request.ids[0]!;
  const message = await (await store(request)).show(id);
  if (request.values.json) printJson({ consumer: request.consumer, message: message ?? null }, 0);
  else if (message) process.stdout.write(details(message, request.consumer));
  if (!message) process.stderr.write(`sqs-inbox parked: consumer "${printable(request.consumer)}" has no parked message ${id}\n`);
  return message ? 0 : 1;
}

async function discard(request: Request): Promise<number> {
  const parked = await store(request);
  if (!request.values.yes && !(await confirmed(request, await found(request.ids, (id) => parked.show(id)), 'Discard'))) return declined();
  const results = await parked.discard(request.ids);
  if (request.values.json) printJson({ consumer: request.consumer, results }, 0);
  else
    process.stdout.write(
      table(
        ['ID', 'RESULT'],
        results.map((result) => [String(result.id), result.status]),
      ),
    );
  return results.every((result) => result.status === 'discarded') ? 0 : 1;
}

async function redrive(request: Request): Promise<number> {
  const [library, client] = await Promise.all([import('../../lambda/inbox/operations.js'), redriveClient(request)]);
  const database = await session(request.target);
  if (!request.values.yes) {
    const reader = library.parkedMessageStore({ session: database, consumer: request.consumer, schema: request.values.schema });
    if (!(await confirmed(request, await found(request.ids, (id) => reader.show(id)), 'Redrive'))) return declined();
  }
  const queueUrl = request.values['queue-url'];
  const results = await library.redriveParked(
    { session: database, consumer: request.consumer, client, schema: request.values.schema, ...(queueUrl ? { queueUrl } : {}) },
    request.ids,
  );
  if (request.values.json) printJson({ consumer: request.consumer, results }, 0);
  else process.stdout.write(table(['ID', 'RESULT', 'QUEUE', 'DETAIL'], results.map(redriveRow)));
  return results.every((result) => result.status === 'redriven' && result.sent) ? 0 : 1;
}

/** The SQS client redrive sends with: AWS, or --sqs-endpoint / AWS_ENDPOINT_URL_SQS. */
async function redriveClient(request: Request) {
  // The queues' region: the one --queue-url names, else the environment's, else the cluster's (a consumer
  // and its database usually share one).
  return sqsClient({
    endpoint: request.values['sqs-endpoint'],
    queueUrl: request.values['queue-url'],
    fallbackRegion: /^arn:aws[\w-]*:rds:([a-z0-9-]+):/.exec(request.target.resourceArn)?.[1],
  });
}

/** The messages behind `ids`, for the confirmation. */
async function found(ids: readonly number[], show: (id: number) => Promise<ParkedMessage | undefined>): Promise<(ParkedMessage | number)[]> {
  return Promise.all(ids.map(async (id) => (await show(id)) ?? id));
}

/** Shows what is about to change on stderr and asks on the terminal; true for y or yes. */
async function confirmed(request: Request, messages: readonly (ParkedMessage | number)[], verb: 'Redrive' | 'Discard'): Promise<boolean> {
  process.stderr.write(
    table(
      ['ID', 'STATUS', 'ERROR', 'TO'],
      messages.map((message) =>
        typeof message === 'number'
          ? [String(message), 'not found', '', '']
          : [
              String(message.id),
              message.status,
              printableCell(`${message.errorClass}: ${message.errorMessage}`, 50),
              verb === 'Redrive' ? shown(destination(message, request.values['queue-url'])) : '',
            ],
      ),
    ),
  );
  const { createInterface } = await import('node:readline');
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const one = messages.length === 1;
  const what = verb === 'Redrive' ? (one ? 'back to its queue' : 'back to their queues') : 'for good';
  const answer = await new Promise<string>((resolve) => {
    prompt.once('close', () => resolve(''));
    prompt.question(`${verb} ${messages.length} parked message${one ? '' : 's'} of consumer "${printable(request.consumer)}" ${what}? [y/N] `, resolve);
  });
  prompt.close();
  return /^y(es)?$/i.test(answer.trim());
}

function declined(): number {
  process.stderr.write('sqs-inbox parked: nothing done.\n');
  return 1;
}

function printJson(document: unknown, code: number): number {
  process.stdout.write(`${printableJson(document)}\n`);
  return code;
}

function listTable(messages: readonly ParkedMessage[]): string {
  return table(
    ['ID', 'STATUS', 'PARKED AT', 'ATTEMPT', 'KEY', 'ERROR'],
    messages.map((m) => [
      String(m.id),
      m.status,
      m.parkedAt.toISOString(),
      String(m.attempt),
      printableCell(m.key ?? '-', 36),
      printableCell(`${m.errorClass}: ${m.errorMessage}`, 60),
    ]),
  );
}

/** One message, a field a line; the error and the body may take several, indented under their first. */
function details(m: ParkedMessage, consumer: string): string {
  const at = (date: Date | null) => date?.toISOString() ?? '-';
  const sqs = m.attributes.record === undefined;
  const attributes = Object.entries(m.attributes.messageAttributes ?? {}).map(([name, value]) => {
    const { stringValue, dataType } = (value ?? {}) as { stringValue?: unknown; dataType?: unknown };
    return `${printable(name)}=${stringValue === undefined ? `(${shown(dataType ?? '?')})` : shown(stringValue)}`;
  });
  const lines: [string, string | string[]][] = [
    ['id', String(m.id)],
    ['consumer', printable(consumer)],
    ['status', m.status],
    ['message id', printable(m.sqsMessageId)],
    ['key', m.key === null ? '- (none usable)' : printable(m.key)],
    ['owns claim', m.ownsClaim ? 'yes (a delivery of its key is a duplicate until it is redriven)' : 'no'],
    ['error', printableLines(`${m.errorClass}: ${m.errorMessage}`)],
    ['attempt', String(m.attempt)],
    ['parked at', at(m.parkedAt)],
    ['replayed at', at(m.replayedAt)],
    ['redriven at', m.redrivenAt ? `${at(m.redrivenAt)} to ${printable(m.redrivenTo ?? '?')}` : '-'],
    ['discarded at', at(m.discardedAt)],
    ['source', sqs ? shown(m.attributes.eventSourceARN ?? '- (not stored: redrive needs --queue-url)') : 'a stream record (replay it; it cannot be redriven)'],
  ];
  if (sqs) {
    lines.push(['group id', shown(m.attributes.attributes?.MessageGroupId ?? '-')]);
    lines.push(['attributes', attributes.length > 0 ? attributes.join(', ') : '-']);
  }
  const width = Math.max(...lines.map(([label]) => label.length)) + 2;
  const field = ([label, value]: [string, string | string[]]) => `${label.padEnd(width)}${[value].flat().join(`\n${' '.repeat(width)}`)}`;
  return `${lines.map(field).join('\n')}\nbody\n${indent(prettyBody(m.body))}\n`;
}

/** A value of the stored attributes, which hold whatever the record held: a string as it is, else as JSON. */
function shown(value: unknown): string {
  return printable(typeof value === 'string' ? value : String(JSON.stringify(value)));
}

function redriveRow(result: RedriveResult): string[] {
  const detail =
    result.status === 'redriven'
      ? result.sent
        ? 'sent'
        : (result.message ?? 'not sent yet')
      : result.refusal
        ? `${result.refusal}: ${result.message}`
        : (result.message ?? '');
  return [String(result.id), result.status, printable(result.queueUrl ?? '-'), printable(detail)];
}

function destination(message: ParkedMessage, queueUrl: string | undefined): string {
  if (queueUrl) return queueUrl;
  if (message.attributes.record !== undefined) return '(stream record: refused)';
  return message.attributes.eventSourceARN ?? '(unknown: refused without --queue-url)';
}

/** The body as JSON indented, when it is JSON; else its lines. */
function prettyBody(body: string): string[] {
  try {
    return printableJson(JSON.parse(body), 2).split('\n');
  } catch {
    return printableLines(body);
  }
}

function indent(lines: readonly string[]): string {
  return lines.map((line) => `  ${line}`).join('\n');
}
