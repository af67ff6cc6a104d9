import { Stack, Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as rds from 'aws-cdk-lib/aws-rds';
import type { InvariantViolation } from '../invariants.js';

/**
 * SQS provisioned mode's poller ranges (aws-cdk-lib 2.276 checks the same; CloudFormation caps maximumPollers at
 * 2,000: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-eventsourcemapping-provisionedpollerconfig.html;
 * https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html: "For Amazon SQS events source
 * mappings, default is 2, and minimum 2 required").
 */
export const SQS_POLLERS = { minimum: { least: 2, most: 200 }, maximum: { least: 2, most: 2000 } } as const;
/** One SQS event poller runs up to 10 concurrent invocations (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html). */
export const INVOCATIONS_PER_POLLER = 10;
/** Records one invocation of `inbox()` runs at once unless its `concurrency` option says otherwise: each holds a transaction. */
export const RECORDS_AT_ONCE = 10;

/** What the provisioned-mode checks read at synth. */
export interface SqsPollerFacts {
  readonly pollers: ProvisionedPollerConfig;
  /** `maxConcurrency` as given (Lambda refuses it beside provisioned mode). */
  readonly maxConcurrency: number | undefined;
  readonly batchSize: number;
  /** The function's reserved concurrency, when set. */
  readonly reservedConcurrency: number | undefined;
  /** An upper bound on the cluster's connections, when the cluster is defined in this app; see {@link connectionCeiling}. */
  readonly connectionCeiling: number | undefined;
}

/**
 * Provisioned mode replaces `maxConcurrency`, the limit that keeps a burst from exhausting the database: its ceiling
 * is `maximumPollers` x 10 concurrent invocations, each running up to 10 records (a transaction each) at once. So the
 * pollers must be in SQS's ranges, `maximumPollers` must be set (Lambda's default, 200, allows 2,000 invocations),
 * the ceiling must fit the function's reserved concurrency (a throttled batch goes back to the queue and uses up a
 * receive) and the cluster's connections.
 */
export function checkSqsProvisionedPollers(facts: SqsPollerFacts): InvariantViolation[] {
  const { pollers } = facts;
  const violations: InvariantViolation[] = [];
  const min = resolved(pollers.minimumPollers);
  const max = resolved(pollers.maximumPollers);
  if (facts.maxConcurrency !== undefined && !Token.isUnresolved(facts.maxConcurrency)) {
    const ceiling = facts.maxConcurrency;
    violations.push({
      problem:
        `the SQS source's \`maxConcurrency\` (${ceiling}) and \`provisionedPollers\` are both set, but Lambda takes one or the other: ` +
        `in provisioned mode the ceiling is \`maximumPollers\` x ${INVOCATIONS_PER_POLLER} concurrent invocations.`,
      fix:
        ceiling >= SQS_POLLERS.maximum.least * INVOCATIONS_PER_POLLER
          ? `remove \`maxConcurrency\` and set \`provisionedPollers.maximumPollers\` to ${Math.floor(ceiling / INVOCATIONS_PER_POLLER)} for at most ${ceiling} concurrent invocations.`
          : `remove \`provisionedPollers\` to keep at most ${ceiling} concurrent invocations: provisioned mode cannot go below ` +
            `${SQS_POLLERS.maximum.least} pollers, ${SQS_POLLERS.maximum.least * INVOCATIONS_PER_POLLER} invocations.`,
    });
  }
  if (pollers.pollerGroupName !== undefined) {
    violations.push({
      problem: '`provisionedPollers.pollerGroupName` is set, but poller groups are for Amazon MSK and self-managed Kafka only.',
      fix: 'remove `pollerGroupName`.',
    });
  }
  const range = (name: 'minimumPollers' | 'maximumPollers', value: number | undefined, bounds: { least: number; most: number }) => {
    if (value === undefined || (Number.isInteger(value) && value >= bounds.least && value <= bounds.most)) return;
    violations.push({
      problem: `\`provisionedPollers.${name}\` is ${value}, but an SQS event source takes a whole number from ${bounds.least} to ${bounds.most}.`,
      fix: `set \`${name}\` within ${bounds.least} to ${bounds.most}.`,
    });
  };
  range('minimumPollers', min, SQS_POLLERS.minimum);
  range('maximumPollers', max, SQS_POLLERS.maximum);
  if (pollers.maximumPollers === undefined) {
    violations.push({
      problem:
        '`provisionedPollers.maximumPollers` is not set, so Lambda uses its default of 200 pollers: up to 2,000 concurrent ' +
        'invocations, nothing left of what `maxConcurrency` protects the database from.',
      fix: `set \`maximumPollers\` to what the database can take (each poller: ${INVOCATIONS_PER_POLLER} invocations), e.g. 2.`,
    });
  }
  if (min !== undefined && max !== undefined && min > max) {
    violations.push({
      problem: `\`provisionedPollers.minimumPollers\` (${min}) exceeds \`maximumPollers\` (${max}).`,
      fix: `lower \`minimumPollers\` to at most ${max}, or raise \`maximumPollers\`.`,
    });
  }
  if (max === undefined) return violations;
  const invocations = max * INVOCATIONS_PER_POLLER;
  if (facts.reservedConcurrency !== undefined && facts.reservedConcurrency < invocations) {
    violations.push({
      problem:
        `\`provisionedPollers.maximumPollers\` (${max}) lets Lambda start ${invocations} concurrent invocations, but the function's ` +
        `reserved concurrency is ${facts.reservedConcurrency}: a throttled batch goes back to the queue after its visibility timeout, ` +
        'and each throttle uses up a receive, so messages can reach the dead-letter queue without having run.',
      fix:
        `set \`maximumPollers\` to at most ${Math.max(SQS_POLLERS.maximum.least, Math.floor(facts.reservedConcurrency / INVOCATIONS_PER_POLLER))}, ` +
        `or the reserved concurrency to at least ${invocations}.`,
    });
  }
  const transactions = invocations * Math.min(facts.batchSize, RECORDS_AT_ONCE);
  if (facts.connectionCeiling !== undefined && transactions > facts.connectionCeiling) {
    const fits = Math.floor(facts.connectionCeiling / (INVOCATIONS_PER_POLLER * Math.min(facts.batchSize, RECORDS_AT_ONCE)));
    violations.push({
      problem:
        `\`provisionedPollers.maximumPollers\` (${max}) allows ${transactions} transactions at once (${invocations} invocations x ` +
        `${Math.min(facts.batchSize, RECORDS_AT_ONCE)} records each), more than the at most ${facts.connectionCeiling} connections ` +
        "the cluster's maximum capacity gives: the Data API would answer the rest with StatementTimeoutException " +
        '("Connection is not available"), and every such record fails and comes back.',
      fix:
        (fits >= SQS_POLLERS.maximum.least ? `lower \`maximumPollers\` to ${fits}, ` : '') +
        "raise InboxDatabase `maxCapacity`, or lower `batchSize` (or `inbox()`'s `concurrency`).",
    });
  }
  return violations;
}

/**
 * An upper bound on `max_connections` of a Serverless v2 cluster defined in this app, from its capacity range:
 * Aurora PostgreSQL's default is LEAST(DBInstanceClassMemory / 9531392, 5000)
 * (https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/AuroraPostgreSQL.Managing.html), Serverless v2 sizes
 * the memory by the maximum ACUs at about 2 GiB each, and caps it at 2,000 when the minimum is 0 or 0.5 ACUs
 * (https://repost.aws/articles/ARm5e6RHE3R4mnHS2S-UZUwA). An ACU's usable memory is less than 2 GiB (1 ACU
 * gives 189 connections, not 225), so this never refuses a setting the cluster could take. `undefined` for an
 * imported cluster or a token.
 */
export function connectionCeiling(cluster: rds.IDatabaseCluster): number | undefined {
  if (!(cluster instanceof rds.DatabaseCluster)) return undefined;
  // DatabaseCluster sets the range lazily; resolved, it is what the template will hold.
  const scaling = Stack.of(cluster).resolve((cluster.node.defaultChild as rds.CfnDBCluster).serverlessV2ScalingConfiguration) as
    | rds.CfnDBCluster.ServerlessV2ScalingConfigurationProperty
    | undefined;
  const min = resolved(scaling?.minCapacity);
  const max = resolved(scaling?.maxCapacity);
  if (min === undefined || max === undefined) return undefined;
  const byMemory = Math.floor((max * 2 * 1024 ** 3) / 9_531_392);
  return Math.min(byMemory, min <= 0.5 ? 2000 : 5000);
}

/** The function's reserved concurrency as synthesized (an escape hatch may set it), when set and resolved. */
export function reservedConcurrency(fn: lambda.Function): number | undefined {
  return resolved((fn.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions);
}

function resolved(value: unknown): number | undefined {
  return typeof value === 'number' && !Token.isUnresolved(value) ? value : undefined;
}
