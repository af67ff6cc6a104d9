import { Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';

const ROLE_ID = 'SqsInboxLogRetentionRole';

/**
 * The execution role of CDK's log-retention function, which sets the retention of the log group RDS creates
 * for the exported PostgreSQL log. One per stack, since that function is a singleton per stack.
 *
 * Given a role, CDK adds only `logs:PutRetentionPolicy` and `logs:DeleteRetentionPolicy` on `*` to it (the
 * group RDS creates has no resource here to scope the grant to); this role adds the creation of that group and
 * the function's own logging, and nothing else: no `AWSLambdaBasicExecutionRole`, no read of any log data.
 */
export function logRetentionRole(scope: Construct): iam.Role {
  const stack = Stack.of(scope);
  const existing = stack.node.tryFindChild(ROLE_ID);
  if (existing instanceof iam.Role) return existing;
  const role = new iam.Role(stack, ROLE_ID, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: 'Sets the retention of the exported PostgreSQL log group (CDK log-retention function)',
  });
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      // The function creates the log group when RDS has not yet, then sets its retention; it also creates and
      // writes its own log group. Both are named by RDS or Lambda at deploy time, so the grant cannot name them.
      actions: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: ['*'],
    }),
  );
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      "CDK's log-retention function sets the retention of /aws/rds/cluster/<id>/postgresql, a log group RDS creates at " +
      'deploy time with a generated cluster id; CDK grants PutRetentionPolicy/DeleteRetentionPolicy on * for that, and the ' +
      'role may otherwise only create log groups and write its own log lines: it cannot read or delete any log data.',
  });
  return role;
}
