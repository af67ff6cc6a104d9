import { createHash, randomBytes } from 'node:crypto';
import { dropRole, provisionRole } from '../../lambda/functions/database-roles/database-roles.js';
import type { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import type { LocalStack } from '../stack.js';
import type { StatementFeed } from './outside-writes.js';

// On AWS the handler runs as its consumer's own database role: the inbox's claims plus `databaseGrants`, and
// nothing more. A run given the same grants makes that role with the deployed role's own code
// (lambda/functions/database-roles), so a missing grant, a typo'd table or an UPDATE without the SELECT its
// WHERE needs fails here, not after the deploy.

/**
 * A privilege the consumer's role needs for its effect: the `databaseGrants` of the InboxConsumer construct,
 * which `worker.databaseGrants` gives as they are.
 *
 * @example
 * { table: 'public.reservations', privileges: ['INSERT'] }
 */
export interface ScenarioGrant {
  /** `schema.name` of a table, view or sequence your `setup` creates. */
  readonly table: string;
  /** SELECT, INSERT, UPDATE, DELETE, ... for a table; USAGE, SELECT, UPDATE for a sequence. */
  readonly privileges: readonly string[];
}

/** The database login the handlers use for a run, and how their transport names it. */
export interface ScenarioLogin {
  readonly username: string;
  readonly password: string;
  /** The local Data API's secret standing for the login. */
  readonly secretArn: string;
}

/** A run's consumer role, made after its setup, and dropped with {@link ConsumerRole.drop}. */
export interface ConsumerRole extends ScenarioLogin {
  drop(): Promise<void>;
}

/**
 * Makes the run's consumer role on its database, as the deployed consumer's custom resource makes it
 * (provisionRole, purpose 'consumer'), with `grants`, and a secret for it on the local Data API. The role
 * is the cluster's, so its name carries the run's database.
 */
export async function openConsumerRole(
  runner: string,
  local: LocalStack,
  session: DataApiSession,
  database: string,
  grants: readonly ScenarioGrant[],
  consumer: string,
): Promise<ConsumerRole> {
  if (!Array.isArray(grants)) {
    throw new RangeError(
      `${runner}: databaseGrants must be a list such as [{ table: 'public.orders', privileges: ['SELECT', 'INSERT'] }], or worker.databaseGrants.`,
    );
  }
  // The cluster's: the run's database and a random part, so no two runs (nor a rerun whose pooled connections
  // still log in as the role it dropped) share one.
  const role = `inbox_scenario_${createHash('sha256').update(database).digest('hex').slice(0, 8)}${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  try {
    await provisionRole(
      session,
      {
        role,
        purpose: 'consumer',
        label: `scenario ${database}`,
        grants: grants.map((grant) => ({ on: grant?.table, privileges: grant?.privileges })),
        // Scoped as the deployed role is, to the name its handler claims under (INBOX_CONSUMER, the construct's consumerName).
        consumer,
      },
      { password: async () => password },
    );
  } catch (error) {
    throw new RangeError(
      `${runner}: databaseGrants: ${error instanceof Error ? error.message : String(error)} The deployed consumer's role would fail the same way: ` +
        'grant tables your migrations (the setup) create, by their schema-qualified names.',
      { cause: error },
    );
  }
  const secretArn = `arn:aws:secretsmanager:us-east-1:123456789012:secret:${role}`;
  const removeSecret = local.dataApi.addSecret(secretArn, { username: role, password });
  return {
    username: role,
    password,
    secretArn,
    // Best effort: a role left behind is the embedded cluster's, and must not replace the run's verdict.
    drop: async () => {
      removeSecret();
      await dropRole(session, role).catch((error: unknown) => {
        process.emitWarning(
          `${runner}: could not drop the consumer role ${role} (${error instanceof Error ? error.message : String(error)}); drop it by hand: DROP ROLE ${role}`,
        );
      });
    },
  };
}

/**
 * What the consumer's role was refused while the run's handlers ran (SQLSTATE 42501, "permission denied for
 * table reservations"): the first refusal as one problem line naming the role, the statement (the last one
 * the handlers sent that names the table) and the grant that fixes it.
 */
export class RoleRefusals {
  /** The handlers' latest statements, for the one a refusal names. */
  readonly #recent: string[] = [];
  #first: { error: Error; statement: string | undefined } | undefined;

  constructor(
    readonly role: string,
    /** The consumer the role acts for (row-level security on the inbox's tables). */
    readonly consumer: string,
  ) {}

  /** Starts watching the handlers' statements. */
  watch(feed: StatementFeed): void {
    feed.watch(({ sql }) => {
      if (sql === undefined) return;
      this.#recent.push(sql);
      if (this.#recent.length > RECENT) this.#recent.shift();
    });
  }

  /** Told of each error a record failed with: the transport's, or an ORM's around it (its `cause`). */
  see(error: Error): void {
    if (this.#first !== undefined) return;
    const denied = refusal(error);
    if (denied === undefined) return;
    const name = deniedTable(denied.message)?.split('.').pop()?.toLowerCase();
    const names = name === undefined ? undefined : new RegExp(`(^|[^\\w"])"?${name.replace(/[^\w$]/g, '\\$&')}"?($|[^\\w"])`, 'i');
    // The handler's own statements, not the inbox's (they name its quoted "inbox". tables).
    const statement = names === undefined ? undefined : this.#recent.findLast((sql) => names.test(sql) && !sql.includes(INBOX_SCHEMA));
    this.#first = { error: denied, statement };
  }

  /** The first refusal's problem line, or none. */
  problems(): string[] {
    if (this.#first === undefined) return [];
    const { error, statement } = this.#first;
    if (/row-level security/.test(error.message)) {
      return [
        `the consumer's role ${this.role} acts for consumer '${this.consumer}' (INBOX_CONSUMER, the construct's consumerName), and was refused a claim ` +
          `under another name: ${error.message.replace(/\s+/g, ' ').slice(0, 160)}. Fix: leave the handler's consumer option unset (it reads INBOX_CONSUMER), ` +
          `or make it the construct's consumerName, and give this run that name: env: { ${INBOX_ENV.CONSUMER}: '<consumerName>' }.`,
      ];
    }
    const table = deniedTable(error.message);
    const qualified = table === undefined ? 'schema.table' : table.includes('.') ? table : qualify(table, statement);
    const privileges = statement === undefined ? undefined : privilegesFor(statement);
    const grant = `{ table: '${qualified}', privileges: [${privileges === undefined ? '...' : privileges.map((privilege) => `'${privilege}'`).join(', ')}] }`;
    return [
      `the consumer's role ${this.role} was refused: ${/permission denied[^;]*/.exec(error.message)?.[0] ?? error.message.slice(0, 160)}` +
        (statement === undefined ? '' : `, for ${statement.replace(/\s+/g, ' ').trim().slice(0, 120)}`) +
        `. Fix: add ${grant} to the consumer's databaseGrants, and give this run the same grants ` +
        '(an UPDATE or DELETE whose WHERE reads a column needs SELECT as well; INSERT ... ON CONFLICT DO UPDATE needs INSERT, UPDATE and SELECT).',
    ];
  }
}

/** How many of the handlers' latest statements a refusal is matched against. */
const RECENT = 500;

/** The table a 42501 names: "permission denied for table reservations" (PostgreSQL gives it unqualified). */
function deniedTable(message: string): string | undefined {
  return /permission denied for (?:table|relation|sequence|view) "?([^\s";]+)"?/.exec(message)?.[1];
}

/** The inbox's tables, as every statement of the inbox names them (local/scenario/outside-writes.ts). */
const INBOX_SCHEMA = '"inbox".';

/** The 42501 (insufficient privilege) in `error` or its causes: a transport's error, or the driver's in an ORM's. */
function refusal(error: unknown): Error | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    const { sqlState, code } = at as { sqlState?: unknown; code?: unknown };
    if (sqlState === '42501' || code === '42501') return at;
  }
  return undefined;
}

/** The table as the statement qualifies it (`public.stock`), or with a placeholder schema. */
function qualify(table: string, statement: string | undefined): string {
  const schema =
    statement === undefined ? undefined : new RegExp(`"?(\\w+)"?\\s*\\.\\s*"?${table.replace(/[^\w$]/g, '\\$&')}"?(?![\\w$])`, 'i').exec(statement)?.[1];
  return `${schema?.toLowerCase() ?? '<schema>'}.${table}`;
}

/**
 * What a statement needs on its table, as PostgreSQL checks it: a WHERE, a SET that reads a column or a
 * RETURNING reads the table (SELECT); an upsert needs INSERT, UPDATE and SELECT.
 */
function privilegesFor(statement: string): readonly string[] | undefined {
  const word = /^\s*(\w+)/.exec(statement)?.[1]?.toUpperCase();
  const reads = /\b(?:WHERE|RETURNING)\b/i.test(statement);
  if (word === 'INSERT') {
    if (/\bON\s+CONFLICT\b[\s\S]*\bDO\s+UPDATE\b/i.test(statement)) return ['SELECT', 'INSERT', 'UPDATE'];
    return reads ? ['SELECT', 'INSERT'] : ['INSERT'];
  }
  if (word === 'UPDATE') return ['SELECT', 'UPDATE'];
  if (word === 'DELETE') return reads ? ['SELECT', 'DELETE'] : ['DELETE'];
  if (word === 'SELECT' || word === 'WITH') return ['SELECT'];
  return undefined;
}
