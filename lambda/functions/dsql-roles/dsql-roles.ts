import type { CloudFormationCustomResourceEvent } from 'aws-lambda';

/** A statement of the role mapping, as InboxDsqlDatabase writes it (lib/dsql/dsql-role-sql.ts). */
export interface DsqlStatement {
  readonly sql: string;
  /** "Already exists" (SQLSTATE 42710) counts as done: DSQL has no `IF NOT EXISTS` for roles or IAM grants. */
  readonly ignoreDuplicate?: boolean;
}

/** The properties of `Custom::InboxDsqlRole`. */
export interface DsqlRoleProperties {
  /** `<clusterId>.dsql.<region>.on.aws`. */
  readonly Endpoint: string;
  readonly Region: string;
  readonly Role: string;
  readonly IamRoleArn: string;
  /** JSON of {@link DsqlStatement}[]. */
  readonly Statements: string;
}

/** What the function needs of a node-postgres client signed in as DSQL's `admin`. */
export interface AdminClient {
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
}

const IAM_ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;

/**
 * Runs the statements one at a time, each in its own transaction (autocommit): Aurora DSQL takes one DDL or
 * DCL statement per transaction. Stops at the first failure, naming the statement; "already exists" counts as
 * done where the statement allows it, so a rerun (an Update) is harmless.
 */
export async function applyDsqlStatements(client: AdminClient, statements: readonly DsqlStatement[]): Promise<{ ran: number; alreadyDone: number }> {
  let ran = 0;
  let alreadyDone = 0;
  for (const [index, statement] of statements.entries()) {
    try {
      await client.query(statement.sql);
      ran++;
    } catch (error) {
      if (statement.ignoreDuplicate === true && (error as { code?: string }).code === '42710') {
        alreadyDone++;
        continue;
      }
      throw new Error(`role mapping statement ${index + 1} of ${statements.length} failed: ${statement.sql}: ${(error as Error).message}`, { cause: error });
    }
  }
  return { ran, alreadyDone };
}

/**
 * The `Custom::InboxDsqlRole` handler (Provider framework onEvent), with the way it signs in passed in: maps the
 * role on Create and Update; on Delete keeps it (the role may own data, and removing a consumer must not
 * break a redeploy of it).
 */
export function dsqlRoleHandler(connect: (properties: DsqlRoleProperties) => Promise<AdminClient>) {
  return async (event: CloudFormationCustomResourceEvent) => {
    const properties = event.ResourceProperties as unknown as DsqlRoleProperties;
    const physicalResourceId = `sqs-inbox-dsql-role:${properties.Endpoint}:${properties.Role}`;
    if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId };
    if (!IAM_ROLE_ARN.test(properties.IamRoleArn)) {
      throw new Error(`IamRoleArn "${properties.IamRoleArn}" is not an IAM role ARN; the role mapping grants a role to an IAM role only.`);
    }
    const statements = JSON.parse(properties.Statements) as DsqlStatement[];
    const client = await connect(properties);
    try {
      const report = await applyDsqlStatements(client, statements);
      console.log(JSON.stringify({ message: 'dsql role mapped', role: properties.Role, iamRoleArn: properties.IamRoleArn, ...report }));
      return { PhysicalResourceId: physicalResourceId, Data: { Ran: report.ran, AlreadyDone: report.alreadyDone } };
    } finally {
      await client.end().catch(() => {});
    }
  };
}

/** Signs in as DSQL's `admin` with a fresh admin token, over TLS (DSQL's certificates chain to Amazon's public roots). */
async function connectAsAdmin(properties: DsqlRoleProperties): Promise<AdminClient> {
  const [{ DsqlSigner }, pg] = await Promise.all([import('@aws-sdk/dsql-signer'), import('pg')]);
  const token = await new DsqlSigner({ hostname: properties.Endpoint, region: properties.Region }).getDbConnectAdminAuthToken();
  const client = new (pg.default ?? pg).Client({
    host: properties.Endpoint,
    port: 5432,
    user: 'admin',
    database: 'postgres',
    password: token,
    ssl: { rejectUnauthorized: true },
  });
  await client.connect();
  return client;
}

/** The Lambda entry point of the DSQL role function: the only function with `dsql:DbConnectAdmin`. */
export const handler = dsqlRoleHandler(connectAsAdmin);
