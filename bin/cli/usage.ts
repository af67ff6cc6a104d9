// The texts the CLI prints for --help and with a misuse: constants only, so printing them loads nothing.

/** What `sqs-inbox migrate --sets` accepts; test/local/cli.test.ts checks it against lambda/functions/migration/migrate.ts. */
export const MIGRATION_SET_NAMES = ['inbox'] as const;

export const USAGE = `sqs-inbox: exactly-once SQS consumers on Aurora PostgreSQL over the RDS Data API

Usage: sqs-inbox <command> [flags]

Commands:
  local       embedded PostgreSQL, the local Data API and the local SQS endpoint, until interrupted
  data-api    embedded PostgreSQL (or an existing server) and the local Data API, until interrupted
  migrate     applies the schema migrations through the Data API
  purge       deletes inbox rows older than the retention
  parked      lists, shows, redrives (back to their queue) or discards a consumer's parked messages
  dlq         redrives a dead-letter queue back to its source queue, keeping each message's key
  claims      imports a hand-rolled dedup table's keys as a consumer's claims (the cut-over)
  help CMD    the flags of one command (same as sqs-inbox CMD --help)

Flags:
  -h, --help      this help
  -v, --version   the version

Exit codes: 0 done, 1 the run failed, 2 misuse (unknown command or flag, missing or bad value).
`;

export const LOCAL_USAGE = `Usage: sqs-inbox local [flags]

Starts embedded PostgreSQL (or uses the server DATABASE_URL names), the local Data API server over it
and the local SQS endpoint, prints their addresses and serves until interrupted (Ctrl-C).

Flags:
  --json         print the addresses as one JSON line                       (default: off, readable lines)
  -h, --help     this help
`;

export const DATA_API_USAGE = `Usage: sqs-inbox data-api [flags]

Starts the local Data API server over PostgreSQL, prints its endpoint and ARNs and serves until
interrupted (Ctrl-C). Any Data API client can use it.

Flags:
  --port N               the port to listen on, 0 to 65535                  (default: a free port)
  --database-url URL     an existing PostgreSQL server                      (default: $DATABASE_URL, else embedded PostgreSQL)
  --json                 print endpoint and ARNs as one JSON line           (default: off, readable lines)
  -h, --help             this help
`;

const DATABASE_FLAGS_USAGE = `Database flags (each defaults to the INBOX_* variable the Lambda functions read):
  --resource-arn ARN     the Aurora cluster ARN, required                   (default: $INBOX_RESOURCE_ARN)
  --secret-arn ARN       the database secret ARN, required                  (default: $INBOX_SECRET_ARN)
  --database NAME        the database                                       (default: $INBOX_DATABASE, else the cluster's)
  --endpoint URL         a local Data API server                            (default: $INBOX_DATA_API_ENDPOINT, else AWS)
  --schema NAME          the inbox's PostgreSQL schema                      (default: inbox)`;

export const MIGRATE_USAGE = `Usage: sqs-inbox migrate [flags]

Applies the schema migrations through the Data API, in one transaction, and prints a JSON report.

Flags:
  --sets LIST            migration sets, comma-separated                    (default: inbox)
                         ${MIGRATION_SET_NAMES.join(', ')}
  --dir DIR              your own set: a folder of <version>_<name>.sql     (default: none)
                         files, named after the folder, applied after --sets
                         by the rules of InboxDatabase's MigrationSet.fromDirectory
  -h, --help             this help

${DATABASE_FLAGS_USAGE}
`;

export const PURGE_USAGE = `Usage: sqs-inbox purge --retention-seconds N [flags]

Deletes inbox rows older than the retention, in bounded batches, and prints a JSON report.
The retention must exceed the longest time a message can still be redelivered (the queue's
retention plus the dead-letter redrive window): a claim purged before the last redelivery of its
message lets that redelivery apply the effect twice. A retention under one day is refused (exit 2)
unless you know the window is shorter and say so with --allow-short-retention.

Flags:
  --retention-seconds N    rows younger than this are kept, at least 86400  (required)
                           (one day), or 1 with --allow-short-retention
  --batch-size N           rows deleted per statement, at least 1           (default: 5000)
  --allow-short-retention  accept a retention under one day                 (default: off)
  -h, --help               this help

${DATABASE_FLAGS_USAGE}
`;

export const PARKED_USAGE = `Usage: sqs-inbox parked <subcommand> --consumer NAME [flags]

The messages a consumer parked (its option onPermanentError is park, from sqs-inbox/operations), through the Data API.

Subcommands:
  list              the messages still parked, oldest first
  show ID           one message, whatever its status, with its body and attributes
  redrive ID...     sends each message back to its SQS queue through the outbox, with its body,
                    attributes, FIFO group and original idempotency key, after releasing the claim its
                    parking made: the consumer applies it once when it comes back. One transaction per
                    message; a message already replayed, redriven or discarded is refused. A send that
                    fails stays in the outbox for the sweeper (sweepOutbox).
  discard ID...     gives messages up: they leave the list; their claim stays, so a later delivery
                    of their key is still a duplicate

redrive and discard ask for confirmation on a terminal; --yes skips it, and is required when stdin
is not a terminal. Stream-parked messages (Kinesis, DynamoDB Streams, Kafka) cannot be redriven:
replay them with parkedMessages(handler).replay(id).

Flags:
  --consumer NAME        the consumer, as given to inbox({ consumer })      (required)
  --json                 print one JSON document instead of tables          (default: off)
  --yes                  redrive or discard without asking                  (default: off, ask)
  --all                  list: also replayed, redriven and discarded ones   (default: off)
  --limit N              list: at most N messages, 1 to 10000               (default: 100)
  --queue-url URL        redrive: send to this queue, not the source queue  (default: from each message's eventSourceARN)
                         (needed for messages parked before that was stored)
  --sqs-endpoint URL     redrive: a local SQS endpoint                      (default: $AWS_ENDPOINT_URL_SQS, else AWS)
  -h, --help             this help

${DATABASE_FLAGS_USAGE}

Exit codes: 0 done (every ID redriven and sent, or discarded), 1 a message was not found, refused,
not sent yet, or the run failed, or the confirmation was declined; 2 misuse.
`;

export const DLQ_USAGE = `Usage: sqs-inbox dlq redrive --dlq URL [flags]

Moves the messages of a dead-letter queue back to their source queue, each stamped with the messageId its
first send got (message attribute sqs-inbox-redriven-message-id), which a consumer with key 'message-id' or
'auto' claims it under: a message whose effect committed before it was dead-lettered is then a duplicate,
and the rest take effect once. SQS's own redrive (the console's, StartMessageMoveTask) gives each message
a new messageId instead, and applies such a message a second time.

It keeps the body, the message attributes and the group id, and on a FIFO queue each group's order. A
message is deleted from the dead-letter queue only after its send succeeded: a run that stops half-way can
be run again (on a FIFO queue its deduplication id, from the dead-lettered messageId, drops a second send
within 5 minutes; on a standard queue the consumer's inbox absorbs it). It prints each message and the
counts moved, skipped and failed. A failed message stays on the dead-letter queue, and on a FIFO queue so
do the later messages of its group.

Flags:
  --dlq URL              the dead-letter queue                              (required)
  --to URL               send every message to this queue                   (default: each message's source queue,
                                                                             from its DeadLetterQueueSourceArn)
  --consumer NAME        skip (delete without a send) each message whose    (default: none, send every message)
                         key this consumer claimed for the same body; needs the database flags
  --dry-run              print what would be done; send and delete nothing  (default: off)
                         (the messages it read stay hidden for 60 seconds;
                         on a FIFO queue it sees at most 10 of each group)
  --max N                at most N messages                                 (default: all)
  --json                 print one JSON report instead of a table           (default: off)
  --sqs-endpoint URL     a local SQS endpoint                               (default: $AWS_ENDPOINT_URL_SQS, else AWS)
  -h, --help             this help

${DATABASE_FLAGS_USAGE}

Exit codes: 0 done (no message failed), 1 a message failed or the run failed, 2 misuse.
`;

export const CLAIMS_USAGE = `Usage: sqs-inbox claims import --from SCHEMA.TABLE --key-column COLUMN --consumer NAME [flags]

Seeds a consumer's claims (inbox.consumed_message) from a hand-rolled dedup table, such as
processed_messages(message_id text primary key, processed_at timestamptz), so that every message the old
consumer processed is a duplicate for the new one. Each key, through --key-template, becomes a claim; in
batches, each one INSERT ... ON CONFLICT DO NOTHING, so it can run again: run it before the new consumer
starts, and again once the old one has stopped (docs/cut-over.md). Keys no consumer could claim under
(over 512 bytes, a control character) are listed, not imported.

Flags:
  --from SCHEMA.TABLE    the old table, lower-case identifiers              (required)
  --key-column COLUMN    its column of processed keys, read as text         (required)
  --consumer NAME        the new consumer, as given to inbox({ consumer })  (required)
  --key-template TEXT    the new key, {key} standing for the old one        (default: {key}, the same key)
  --where COLUMN=TEXT    only the rows whose COLUMN is TEXT, for a table    (default: every row)
                         several consumers share: --where consumer=order-worker
  --batch-size N         keys per statement, 1 to 10000                     (default: 1000)
  --dry-run              count what would be imported; insert nothing       (default: off)
  --json                 print one JSON report                              (default: off, one line)
  -h, --help             this help

${DATABASE_FLAGS_USAGE}

Exit codes: 0 done, 1 the run failed (the batches before it stay imported: run it again), 2 misuse.
`;
