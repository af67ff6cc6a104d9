import { Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { InboxConstructError } from '../errors.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';

/** A PostgreSQL that is not an InboxDatabase: RDS, Aurora or your own server, with a Secrets Manager secret. */
export interface InboxPostgresConnection {
  /** The server's host name. */
  readonly host: string;
  /**
   * The server's port.
   * @default 5432
   */
  readonly port?: number | undefined;
  /** The database that holds the inbox table (create it with `migrate()` over `PostgresSession`, see docs/deploy.md). */
  readonly databaseName: string;
  /** A secret `{ "username": ..., "password": ... }` for the consumer's own role (an RDS-generated secret has both). */
  readonly secret: secretsmanager.ISecret;
}

/**
 * Hands a function the connection to a PostgreSQL of your own: sets `INBOX_PG_HOST`, `INBOX_PG_PORT`,
 * `INBOX_PG_DATABASE` and `INBOX_PG_SECRET_ARN`, which `postgresFromEnvironment()` from `sqs-inbox/postgres`
 * reads, and lets it read that secret (and decrypt it with its key), nothing more. The network (the function in
 * the server's VPC, a security group rule to its port, a route to Secrets Manager) is yours to give.
 *
 * @example
 * const worker = new InboxFunction(this, 'Worker', { entry: 'src/worker.ts', environment: { INBOX_CONSUMER: 'orders' },
 *   timeout: Duration.seconds(30), description: 'orders', vpc, securityGroups: [workerSg] });
 * connectToPostgres(worker.function, { host: 'db.internal', databaseName: 'orders', secret });
 */
export function connectToPostgres(fn: lambda.Function, connection: InboxPostgresConnection): void {
  const problems: string[] = [];
  if (!Token.isUnresolved(connection.host) && !/^[A-Za-z0-9.-]+$/.test(connection.host)) {
    problems.push(
      `\`host\` '${connection.host}' is not a host name. Fix: pass the server's DNS name or IP address, e.g. 'orders.abc123.eu-west-1.rds.amazonaws.com'.`,
    );
  }
  const port = connection.port ?? 5432;
  if (!Token.isUnresolved(port) && !(Number.isInteger(port) && port >= 1 && port <= 65_535)) {
    problems.push(`\`port\` ${port} is not a port number. Fix: a whole number from 1 to 65535, or leave it out for 5432.`);
  }
  if (!Token.isUnresolved(connection.databaseName) && !/^[A-Za-z_][A-Za-z0-9_$-]{0,62}$/.test(connection.databaseName)) {
    problems.push(`\`databaseName\` '${connection.databaseName}' is not a database name. Fix: e.g. 'inbox'.`);
  }
  if (problems.length > 0) throw InboxConstructError.of(`connectToPostgres ${fn.node.path}`, problems);
  fn.addEnvironment(INBOX_ENV.PG_HOST, connection.host);
  fn.addEnvironment(INBOX_ENV.PG_PORT, Token.isUnresolved(port) ? Token.asString(port) : String(port));
  fn.addEnvironment(INBOX_ENV.PG_DATABASE, connection.databaseName);
  fn.addEnvironment(INBOX_ENV.PG_SECRET_ARN, connection.secret.secretArn);
  connection.secret.grantRead(fn);
}
