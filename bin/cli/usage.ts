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

The messages a consumer parked (its option onPermanentError is park, from sqs-inbox/parked), through the Data API.

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
