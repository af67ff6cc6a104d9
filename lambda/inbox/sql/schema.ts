import { createHash } from 'node:crypto';
import type { Transaction } from '../transport/transaction.js';
import { sessionOf } from '../transport/transport.js';
import type { InboxTransport } from '../transport/transport.js';
import type { InboxSession } from '../transport/session.js';
import { InboxConfigError, MigrationChangedError } from '../errors.js';
import { described } from '../handler/option-checks.js';
import { MIGRATION_SET_NAME_PATTERN, MIGRATION_SET_NAME_RULE, OUTBOX_ORDER_FUNCTION } from '../contract.js';
import type { InboxMigration, InboxMigrationSet } from '../contract.js';

export type { InboxMigration, InboxMigrationSet };

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** The inbox's tables, as quoted, validated identifiers. */
export interface InboxTables {
  /** The schema: `"inbox"`. */
  readonly schema: string;
  /** The claims: `"inbox"."consumed_message"`. */
  readonly consumed: string;
  /** Parked records: `"inbox"."parked_message"`. */
  readonly parked: string;
  /** Messages to send after the commit: `"inbox"."outbox_message"`. */
  readonly outbox: string;
  /** Applied migrations: `"inbox"."schema_migration"`. */
  readonly migrations: string;
  /** Whether a FIFO group has an older unsent outbox row, of any consumer: `"inbox"."outbox_older_unsent"`. */
  readonly outboxOrder: string;
}

/**
 * Validates the inbox schema name once and returns its quoted table names. Names go into SQL text, so
 * they are checked against `^[a-z_][a-z0-9_]*$` here and never taken from record content.
 */
export function inboxTables(schema = 'inbox', option = 'schema'): InboxTables {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema) || schema.length > 63) {
    const rule = `must match ${IDENTIFIER} and be at most 63 characters, e.g. "inbox"`;
    throw new InboxConfigError(option, typeof schema === 'string' ? `"${schema}" ${rule}` : `${rule}; got ${described(schema)}`);
  }
  const quoted = `"${schema}"`;
  return {
    schema: quoted,
    consumed: `${quoted}."consumed_message"`,
    parked: `${quoted}."parked_message"`,
    outbox: `${quoted}."outbox_message"`,
    migrations: `${quoted}."schema_migration"`,
    outboxOrder: `${quoted}."${OUTBOX_ORDER_FUNCTION.name}"`,
  };
}

/**
 * A migration `migrate()` runs: an {@link InboxMigration} of your own, or one of the inbox's, whose statements are a
 * function of its schema's quoted table names.
 */
export interface Migration extends Omit<InboxMigration, 'statements'> {
  /** One statement per entry (the Data API refuses multi-statement SQL), or the function that writes them from the inbox's tables. */
  readonly statements: readonly string[] | ((tables: InboxTables) => readonly string[]);
}

/**
 * Row-level security's test that a row belongs to a consumer the querying role acts for; true for a role that
 * role_scope does not list. The scalar subquery runs once per statement (an InitPlan), not once per row: a claim
 * pays about 20 microseconds at the database for it (`npm run bench:isolation`).
 */
function inScope(t: InboxTables): string {
  return `coalesce(consumer_name = ANY ((SELECT array_agg(s.consumer_name) FROM ${t.schema}."role_scope" s WHERE s.role_name = current_user)::text[]), true)`;
}

/**
 * The relay's FIFO check, as a function of the table owner's (SECURITY DEFINER): an unsent row of `destination` and
 * `group_id` older than `before_id` that is not among `relaying` holds the caller's row back, whichever consumer wrote
 * it, though the caller's row-level security hides that row. It answers yes or no, never a body or a key; its search
 * path is fixed, so no object of the caller's can stand in for one it names. A NULL group matches nothing, as in the
 * relay's own comparison. One statement, written to run again, so DSQL's migrations share it.
 */
export function outboxOrderFunction(t: InboxTables): string {
  return `CREATE OR REPLACE FUNCTION ${t.outboxOrder}(destination text, group_id text, before_id bigint, relaying bigint[])
     RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
     AS $sqs_inbox$ SELECT EXISTS (
          SELECT 1 FROM ${t.outbox} p
           WHERE p.sent_at IS NULL AND p.destination = $1 AND p.group_id = $2 AND p.id < $3 AND NOT (p.id = ANY ($4))) $sqs_inbox$`;
}

/** PostgreSQL grants EXECUTE on a new function to PUBLIC: the relay's check goes to the consumer roles alone. */
export function outboxOrderRevoke(t: InboxTables): string {
  return `REVOKE EXECUTE ON FUNCTION ${t.outboxOrder}(${OUTBOX_ORDER_FUNCTION.args}) FROM PUBLIC`;
}

/** The inbox's DDL. Append new migrations; never edit one that has shipped. */
export const INBOX_MIGRATIONS: InboxMigrationSet<Migration> = {
  name: 'inbox',
  migrations: [
    {
      version: 1,
      name: 'consumed_message',
      statements: (t) => [
        // The primary key is the only concurrency control: racing claims of one key serialise on it.
        // Not partitioned by time: a unique key on a partitioned table must include the partition key,
        // so a redelivery landing in a newer partition would not conflict.
        `CREATE TABLE IF NOT EXISTS ${t.consumed} (
           consumer_name  text        NOT NULL,
           message_id     text        NOT NULL,
           processed_at   timestamptz NOT NULL DEFAULT now(),
           payload_sha256 bytea,
           PRIMARY KEY (consumer_name, message_id)
         )`,
        `CREATE INDEX IF NOT EXISTS consumed_message_processed_at ON ${t.consumed} (processed_at)`,
      ],
    },
    {
      version: 2,
      name: 'parked_message',
      statements: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.parked} (
           id             bigserial   PRIMARY KEY,
           consumer_name  text        NOT NULL,
           sqs_message_id text        NOT NULL,
           message_key    text,
           body           text        NOT NULL,
           attributes     jsonb       NOT NULL,
           error_class    text        NOT NULL,
           error_message  text        NOT NULL,
           attempt        integer     NOT NULL,
           parked_at      timestamptz NOT NULL DEFAULT now(),
           replayed_at    timestamptz,
           -- True when parking this record made its key's claim: its replay is the key's one effect.
           owns_claim     boolean     NOT NULL DEFAULT false,
           UNIQUE (consumer_name, sqs_message_id)
         )`,
        `CREATE INDEX IF NOT EXISTS parked_message_pending ON ${t.parked} (consumer_name, parked_at) WHERE replayed_at IS NULL`,
      ],
    },
    {
      version: 3,
      name: 'outbox_message',
      statements: (t) => [
        // Written in the claim's transaction by tx.send, sent after the commit by the handler's relay or
        // the sweeper. The idempotency key derives from the consumed message's key and the send's
        // position, so a re-run after a rollback writes the same key, and the receiver's inbox drops a re-send.
        `CREATE TABLE IF NOT EXISTS ${t.outbox} (
           id              bigserial   PRIMARY KEY,
           consumer_name   text        NOT NULL,
           message_key     text        NOT NULL,
           position        integer     NOT NULL,
           idempotency_key text        NOT NULL,
           destination     text        NOT NULL,
           body            text        NOT NULL,
           group_id        text,
           attributes      jsonb       NOT NULL DEFAULT '{}'::jsonb,
           delay_seconds   integer,
           created_at      timestamptz NOT NULL DEFAULT now(),
           sent_at         timestamptz,
           attempts        integer     NOT NULL DEFAULT 0,
           last_error      text,
           UNIQUE (consumer_name, idempotency_key)
         )`,
        // The sweeper reads unsent rows oldest first; the relay asks whether a FIFO group has an older unsent row.
        `CREATE INDEX IF NOT EXISTS outbox_message_unsent ON ${t.outbox} (id) WHERE sent_at IS NULL`,
        `CREATE INDEX IF NOT EXISTS outbox_message_unsent_group ON ${t.outbox} (destination, group_id, id) WHERE sent_at IS NULL`,
        `CREATE INDEX IF NOT EXISTS outbox_message_sent_at ON ${t.outbox} (sent_at) WHERE sent_at IS NOT NULL`,
      ],
    },
    {
      version: 4,
      name: 'parked_message_redrive',
      statements: (t) => [
        // An operator's decision on a parked message, besides a replay: sent back to its queue through the
        // outbox (redriven_at, and where to), or given up (discarded_at). A parked row takes one decision.
        `ALTER TABLE ${t.parked} ADD COLUMN IF NOT EXISTS redriven_at timestamptz`,
        `ALTER TABLE ${t.parked} ADD COLUMN IF NOT EXISTS redriven_to text`,
        `ALTER TABLE ${t.parked} ADD COLUMN IF NOT EXISTS discarded_at timestamptz`,
      ],
    },
    {
      version: 5,
      name: 'consumer_scope',
      statements: (t) => [
        // Which consumers a database role acts for, written when the role is provisioned. A role listed here
        // sees and writes only its consumers' claims and parked messages (row-level security); a role that is
        // not (the purge, the sweeper, a role of your own) is not scoped. The table owner is never scoped.
        `CREATE TABLE IF NOT EXISTS ${t.schema}."role_scope" (
           role_name     text NOT NULL,
           consumer_name text NOT NULL,
           PRIMARY KEY (role_name, consumer_name)
         )`,
        // Read by the policies as the querying role: every role may read it (it names roles and consumers only).
        `GRANT SELECT ON ${t.schema}."role_scope" TO PUBLIC`,
        `ALTER TABLE ${t.consumed} ENABLE ROW LEVEL SECURITY`,
        `CREATE POLICY consumer_scope ON ${t.consumed}
           USING (${inScope(t)})
           WITH CHECK (${inScope(t)})`,
        `ALTER TABLE ${t.parked} ENABLE ROW LEVEL SECURITY`,
        `CREATE POLICY consumer_scope ON ${t.parked}
           USING (${inScope(t)})
           WITH CHECK (${inScope(t)})`,
        // The outbox: a row is written only under the role's own consumers, but every row stays visible, because
        // the relay holds back a FIFO group's row while another consumer's older row of that group is unsent.
        `ALTER TABLE ${t.outbox} ENABLE ROW LEVEL SECURITY`,
        `CREATE POLICY consumer_scope_insert ON ${t.outbox} FOR INSERT
           WITH CHECK (${inScope(t)})`,
        `CREATE POLICY outbox_read ON ${t.outbox} FOR SELECT USING (true)`,
        `CREATE POLICY outbox_mark ON ${t.outbox} FOR UPDATE USING (true)`,
        `CREATE POLICY outbox_remove ON ${t.outbox} FOR DELETE USING (true)`,
      ],
    },
    {
      version: 6,
      name: 'parked_message_payload',
      statements: (t) => [
        // A parked record's payload, byte for byte (Kinesis data and Kafka values are bytes; a body's text is
        // kept as its UTF-8), and its SHA-256, as the claim stores it. Rows parked before keep their body text.
        `ALTER TABLE ${t.parked} ADD COLUMN IF NOT EXISTS payload bytea`,
        `ALTER TABLE ${t.parked} ADD COLUMN IF NOT EXISTS payload_sha256 bytea`,
        `ALTER TABLE ${t.parked} ALTER COLUMN body DROP NOT NULL`,
        // json keeps any JSON text, U+0000 and lone surrogates included (jsonb refuses both, and a record's
        // attributes, a DynamoDB image, can hold them), so storing what a record carries never fails.
        `ALTER TABLE ${t.parked} ALTER COLUMN attributes TYPE json USING attributes::json`,
        // A record is its id and its payload: parking it again stores nothing more, while another record
        // under the same id (a Kafka topic recreated, its offsets restarting) is stored beside it.
        `ALTER TABLE ${t.parked} DROP CONSTRAINT IF EXISTS parked_message_consumer_name_sqs_message_id_key`,
        `CREATE UNIQUE INDEX IF NOT EXISTS parked_message_record ON ${t.parked} (consumer_name, sqs_message_id, payload_sha256)`,
      ],
    },
    {
      version: 7,
      name: 'outbox_scope',
      statements: (t) => [
        // Migration 5 left every outbox row readable, markable and deletable by every role: a consumer could read
        // another's bodies, or mark its unsent rows sent so that they were never delivered. The outbox is scoped as
        // the claims and parked messages are; the relay's FIFO check, which must see other consumers' unsent rows,
        // asks the function below instead of reading them.
        `DROP POLICY IF EXISTS outbox_read ON ${t.outbox}`,
        `DROP POLICY IF EXISTS outbox_mark ON ${t.outbox}`,
        `DROP POLICY IF EXISTS outbox_remove ON ${t.outbox}`,
        `DROP POLICY IF EXISTS consumer_scope_insert ON ${t.outbox}`,
        `CREATE POLICY consumer_scope ON ${t.outbox}
           USING (${inScope(t)})
           WITH CHECK (${inScope(t)})`,
        outboxOrderFunction(t),
        outboxOrderRevoke(t),
      ],
    },
  ],
};

/** What `migrate` did. */
export interface MigrationReport {
  /** The migrations this run applied, in order; empty when everything was up to date. */
  readonly applied: readonly { readonly set: string; readonly version: number; readonly name: string }[];
  /** The highest version of each set after the run. */
  readonly versions: Readonly<Record<string, number>>;
}

/**
 * Applies the inbox's own migrations, then the pending migrations of each of your sets, in one transaction
 * under an advisory lock, so two deployers (or a deployer and `npx sqs-inbox migrate`) never apply one twice,
 * and a failing migration leaves nothing half done. Idempotent. Each applied version is recorded with the
 * checksum of its statements; a migration changed after it was applied is refused with
 * `MigrationChangedError` naming its version (a version applied before checksums were recorded gets its
 * checksum recorded instead), and so is an unapplied migration below the highest applied version of its set.
 * The inbox's own set comes first, as `InboxDatabase` applies it at deploy: a set of yours cannot be ordered
 * before it or named as it.
 *
 * @param database - the transport to run it over (`dataApi({...})`, `postgres(pool)`)
 * @param sets - your own migration sets, applied after the inbox's, in this order. @default []
 * @param schema - the inbox's schema, which also holds the table of applied versions. @default 'inbox'
 *
 * @example
 * await migrate(postgres(pool), [credits]);
 */
export async function migrate(database: InboxTransport, sets: readonly InboxMigrationSet[] = [], schema = 'inbox'): Promise<MigrationReport> {
  return applyMigrations(sessionOf(database), [INBOX_MIGRATIONS, ...ownSets(sets, INBOX_MIGRATIONS, 'migrate')], schema);
}

/**
 * The sets a caller gave `migrate` or `migrateDsql`, to apply after the built-in one it applies first: a set
 * named as that one would be recorded under its versions, so it is refused, naming the fix.
 */
export function ownSets(sets: readonly InboxMigrationSet[], builtIn: InboxMigrationSet<Migration>, operation: string): readonly InboxMigrationSet[] {
  if (!Array.isArray(sets)) {
    throw new InboxConfigError(
      'migrations',
      `${operation}() takes an array of your own migration sets (the inbox's own is applied first); got ${described(sets)}`,
    );
  }
  for (const set of sets) {
    // A set without a string name is refused by checkSet, which says what it got; the name first, since the
    // errors below show it.
    if (typeof set?.name !== 'string') continue;
    checkSetName(set.name);
    // The function form (statements written from the schema's table names) is the inbox's own sets'; in one
    // of yours it would run code the type says is SQL text.
    const coded = Array.isArray(set?.migrations) ? set.migrations.find((migration: InboxMigration) => typeof migration?.statements === 'function') : undefined;
    if (coded !== undefined) {
      throw new InboxConfigError(
        `migrations.${set.name}`,
        `version ${coded.version} ("${coded.name}"): \`statements\` must be an array of SQL strings, one statement each; got a function`,
      );
    }
    if (set?.name === builtIn.name) {
      throw new InboxConfigError(
        'migrations',
        `"${builtIn.name}" is the name of the inbox's own migration set, which ${operation}() applies before yours; leave it out, and give a set of your own a name of its own`,
      );
    }
  }
  return sets;
}

/**
 * What `migrate` does, on a session and with the sets as given, the built-in one among them: for the deploy's
 * migration function and the CLI, which resolve the sets by the names they are given.
 */
export async function applyMigrations(session: InboxSession, sets: readonly InboxMigrationSet<Migration>[], schema = 'inbox'): Promise<MigrationReport> {
  const tables = inboxTables(schema);
  for (const set of sets) checkSet(set);
  const applied: { set: string; version: number; name: string }[] = [];
  const versions: Record<string, number> = {};
  const tx = await session.transaction();
  try {
    // One lock for the whole run: concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL.
    await tx.execute('SELECT pg_advisory_xact_lock(hashtext(:lock))', { lock: `sqs-inbox-migrate:${schema}` });
    await tx.execute(`CREATE SCHEMA IF NOT EXISTS ${tables.schema}`);
    await tx.execute(
      `CREATE TABLE IF NOT EXISTS ${tables.migrations} (
         set_name   text        NOT NULL,
         version    integer     NOT NULL,
         name       text        NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now(),
         checksum   text,
         PRIMARY KEY (set_name, version)
       )`,
    );
    // Tables made before checksums were recorded: their rows keep a null checksum until the next run records it.
    await tx.execute(`ALTER TABLE ${tables.migrations} ADD COLUMN IF NOT EXISTS checksum text`);
    for (const set of sets) {
      const { rows } = await tx.execute(`SELECT version, checksum FROM ${tables.migrations} WHERE set_name = :set`, { set: set.name });
      const recorded = new Map(rows.map((row) => [Number(row.version), row.checksum as string | null]));
      let current = Math.max(0, ...recorded.keys());
      for (const migration of set.migrations) {
        const statements = migrationStatements(migration, tables);
        const checksum = migrationChecksum(statements);
        if (recorded.has(migration.version)) {
          await checkApplied(tx, tables, { set: set.name, migration, recorded: recorded.get(migration.version) ?? null, checksum });
          continue;
        }
        if (migration.version < current) {
          throw new InboxConfigError(
            `migrations.${set.name}`,
            `version ${migration.version} ("${migration.name}") is not applied, but version ${current} is: a migration added ` +
              `below the highest applied version would run after the ones that follow it. Fix: give it a version above ${current}`,
          );
        }
        for (const statement of statements) await tx.execute(statement);
        await tx.execute(`INSERT INTO ${tables.migrations} (set_name, version, name, checksum) VALUES (:set, :version, :name, :checksum)`, {
          set: set.name,
          version: migration.version,
          name: migration.name,
          checksum,
        });
        applied.push({ set: set.name, version: migration.version, name: migration.name });
        current = migration.version;
      }
      versions[set.name] = current;
    }
    await tx.commit();
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
  return { applied, versions };
}

/**
 * Hex SHA-256 of a migration's statements as they run, recorded with its version: a statement edited,
 * added, removed or reordered after the migration was applied changes it.
 */
export function migrationChecksum(statements: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(statements), 'utf8').digest('hex');
}

export function migrationStatements(migration: Migration, tables: InboxTables): readonly string[] {
  return typeof migration.statements === 'function' ? migration.statements(tables) : migration.statements;
}

/** A migration of a set that the database records as applied: the checksum recorded with it (null before checksums), and its own now. */
export interface AppliedMigration {
  readonly set: string;
  readonly migration: Migration;
  readonly recorded: string | null;
  readonly checksum: string;
}

/** An applied migration must be the one that was applied; a row from before checksums gets this one recorded. */
export async function checkApplied(tx: Transaction, tables: InboxTables, { set, migration, recorded, checksum }: AppliedMigration): Promise<void> {
  if (recorded === null) {
    await tx.execute(`UPDATE ${tables.migrations} SET checksum = :checksum WHERE set_name = :set AND version = :version`, {
      checksum,
      set,
      version: migration.version,
    });
  } else if (recorded !== checksum) {
    throw new MigrationChangedError(set, migration.version, migration.name, recorded, checksum);
  }
}

/**
 * Refuses a set's name the constructs refuse at synth, before any transaction: a name PostgreSQL refuses
 * (U+0000) would roll back the sets before it, and one it rewrites (a lone surrogate) or that differs only in
 * case or spaces would record versions a deploy, which holds the same rule, never finds.
 */
function checkSetName(name: string): void {
  if (!MIGRATION_SET_NAME_PATTERN.test(name)) {
    const shown = name.length > 80 ? `a name of ${name.length} characters beginning ${JSON.stringify(name.slice(0, 40))}` : JSON.stringify(name);
    throw new InboxConfigError('migrations', `a migration set's name must be ${MIGRATION_SET_NAME_RULE}, as the constructs check at synth; got ${shown}`);
  }
}

export function checkSet(set: InboxMigrationSet<Migration>): void {
  if (typeof set?.name !== 'string' || !Array.isArray(set.migrations)) {
    throw new InboxConfigError('migrations', `a migration set needs a \`name\` and a \`migrations\` array; got ${described(set)}`);
  }
  checkSetName(set.name);
  let previous = 0;
  for (const migration of set.migrations) {
    const statements = migration?.statements;
    if (typeof statements !== 'function' && !(Array.isArray(statements) && statements.every((s) => typeof s === 'string' && s.trim() !== ''))) {
      throw new InboxConfigError(
        `migrations.${set.name}`,
        `version ${migration?.version} ("${migration?.name}"): \`statements\` must be an array of non-empty SQL strings, one statement each; got ${described(statements)}`,
      );
    }
    if (!Number.isInteger(migration.version) || migration.version <= previous) {
      throw new InboxConfigError(
        `migrations.${set.name}`,
        `versions must be positive integers in increasing order; ${migration.version} ("${migration.name}") follows ${previous}`,
      );
    }
    previous = migration.version;
  }
}
