import { Names } from 'aws-cdk-lib';
import type { CustomResource, Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { InboxFunction } from '../consumer/inbox-function.js';
import { InboxDsqlDatabase } from '../dsql/inbox-dsql-database.js';
import { functionCode } from '../function-assets.js';
import type { PackageFunction } from '../function-assets.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { STATEMENT_ACTIONS } from './data-api-access.js';
import type { InboxDatabase } from './inbox-database.js';
import { InboxDatabaseRole } from './inbox-database-role.js';
import type { InboxRolePurpose } from './inbox-database-role.js';

/** One of the package's scheduled functions (the purge, the outbox sweeper), as its construct describes it. */
export interface MaintenanceFunctionProps {
  readonly database: InboxDatabase | InboxDsqlDatabase;
  /** The database role it signs in as, its own. */
  readonly roleName: string;
  readonly purpose: Exclude<InboxRolePurpose, 'consumer'>;
  /** Its bundle on Aurora (the Data API), and its handler in the `dsql` bundle on Aurora DSQL. */
  readonly aurora: PackageFunction;
  readonly dsqlHandler: string;
  /** The construct id of the function. */
  readonly id: string;
  /** The prefix of its role mapping's id on Aurora DSQL. */
  readonly mappingPrefix: string;
  /** The role's label in the database role's messages (Aurora). */
  readonly label: string;
  readonly description: string;
  readonly timeout: Duration;
  /** What it reads besides where the database is. */
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention?: logs.RetentionDays | undefined;
}

/** The function, and the database role it signs in as: Aurora's with its secret, or DSQL's role mapping. */
export interface MaintenanceFunction {
  readonly function: lambda.Function;
  readonly logGroup: logs.LogGroup;
  readonly databaseRole?: InboxDatabaseRole;
  readonly roleMapping?: CustomResource;
}

/**
 * A scheduled function of the package's, signed in to the inbox's database as a role of its own, that sends single
 * autocommit statements. On Aurora: an InboxDatabaseRole (its secret, the Data API's statement actions, no
 * transaction calls). On Aurora DSQL: the `dsql` bundle's handler, its role mapped by the schema function, with
 * `dsql:DbConnect` for that role only. The function starts only after its role exists.
 */
export function maintenanceFunction(scope: Construct, props: MaintenanceFunctionProps): MaintenanceFunction {
  const { database, roleName, purpose } = props;
  const logRetention = props.logRetention === undefined ? {} : { logRetention: props.logRetention };
  if (database instanceof InboxDsqlDatabase) {
    const fn = new InboxFunction(scope, props.id, {
      ...functionCode('dsql').source,
      handler: props.dsqlHandler,
      timeout: props.timeout,
      description: `${props.description} (Aurora DSQL)`,
      environment: { ...database.connectionEnvironment(roleName), ...props.environment },
      ...logRetention,
    });
    const roleMapping = database.addRole(`${props.mappingPrefix}${Names.uniqueId(scope)}`, { roleName, grantee: fn.function, purpose });
    fn.function.node.addDependency(roleMapping);
    return { function: fn.function, logGroup: fn.logGroup, roleMapping };
  }
  const databaseRole = new InboxDatabaseRole(scope, 'DatabaseRole', { database, roleName, purpose, label: props.label });
  const fn = new InboxFunction(scope, props.id, {
    ...functionCode(props.aurora).source,
    timeout: props.timeout,
    description: props.description,
    environment: {
      [INBOX_ENV.RESOURCE_ARN]: database.cluster.clusterArn,
      [INBOX_ENV.SECRET_ARN]: databaseRole.secret.secretArn,
      [INBOX_ENV.DATABASE]: database.databaseName,
      ...props.environment,
    },
    ...logRetention,
  });
  databaseRole.grantDataApi(fn.function, STATEMENT_ACTIONS);
  fn.function.node.addDependency(databaseRole.resource);
  return { function: fn.function, logGroup: fn.logGroup, databaseRole };
}
