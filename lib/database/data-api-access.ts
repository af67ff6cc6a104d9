import * as iam from 'aws-cdk-lib/aws-iam';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { InboxConstructError } from '../errors.js';

/** An RDS Data API operation a function may call. */
export type DataApiAction = 'ExecuteStatement' | 'BatchExecuteStatement' | 'BeginTransaction' | 'CommitTransaction' | 'RollbackTransaction';

/** What a transaction needs: the consumer in its default modes and the migration. */
export const TRANSACTION_ACTIONS: readonly DataApiAction[] = ['BeginTransaction', 'CommitTransaction', 'ExecuteStatement', 'RollbackTransaction'];
/** What autocommit statements need: the purge. */
export const STATEMENT_ACTIONS: readonly DataApiAction[] = ['ExecuteStatement'];

/**
 * Grants exactly `actions` of the Data API on `cluster`, and reading `secret`, the only secret these calls
 * may sign in with. Refuses a cluster whose Data API is off, naming the fix.
 */
export function grantDataApi(
  path: string,
  grantee: iam.IGrantable,
  cluster: rds.IDatabaseCluster,
  secret: secretsmanager.ISecret,
  actions: readonly DataApiAction[],
): void {
  // DatabaseCluster and fromDatabaseClusterAttributes keep whether the Data API is on in this field.
  if ((cluster as unknown as { enableDataApi?: boolean }).enableDataApi === false) {
    throw InboxConstructError.of(
      `InboxDatabase ${path}`,
      [
        `the cluster passed in \`cluster\` does not have the Data API enabled. Fix: enable the Data API ` +
          'on the cluster and import it with `DatabaseCluster.fromDatabaseClusterAttributes(this, id, { ..., dataApiEnabled: true })`, ' +
          'or create it with `enableDataApi: true`.',
      ],
      'line',
    );
  }
  iam.Grant.addToPrincipal({
    grantee,
    actions: [...new Set(actions)].sort().map((action) => `rds-data:${action}`),
    resourceArns: [cluster.clusterArn],
  });
  secret.grantRead(grantee);
}
