import { Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { InvariantViolation } from '../invariants.js';
import { RECORDS_AT_ONCE } from '../sources/sqs-pollers.js';

/**
 * Throughput of a standard SQS event source mapping on Lambda Managed Instances: 5 MB per second, which cannot
 * be increased (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-quotas.html).
 */
export const MANAGED_INSTANCES_SQS_BYTES_PER_SECOND = 5_000_000;
/** SQS's largest message, and the default `MaximumMessageSize` of a queue: 1 MiB. */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
/** The connections `postgresFromEnvironment()`'s pool opens unless its `max` says otherwise. */
export const DEFAULT_POSTGRES_POOL_SIZE = 2;

/** What the Managed Instances checks read at synth; `undefined`: not set, or an unresolved token. */
export interface ManagedInstancesFacts {
  /** `perExecutionEnvironmentMaxConcurrency`: invocations one execution environment (one process) runs at once. */
  readonly perEnvironmentConcurrency: number | undefined;
  /** `latestPublishedScalingConfig.maxExecutionEnvironments`. */
  readonly maxEnvironments: number | undefined;
  /** The PostgreSQL wire's pool per environment, when the consumer reaches the database through RDS Proxy. */
  readonly poolSize: number | undefined;
  /** An upper bound on the cluster's connections (sqs-pollers.ts `connectionCeiling`), when known. */
  readonly connectionCeiling: number | undefined;
  /** The share of them the proxy may open, in percent, behind a proxy. */
  readonly proxyPercent: number | undefined;
}

/** The facts of a consumer's function on a capacity provider, from the options given to `addFunction`. */
export function managedInstancesFacts(
  options: lambda.CapacityProviderFunctionOptions | undefined,
  rest: Omit<ManagedInstancesFacts, 'perEnvironmentConcurrency' | 'maxEnvironments'>,
): ManagedInstancesFacts {
  return {
    perEnvironmentConcurrency: known(options?.perExecutionEnvironmentMaxConcurrency),
    maxEnvironments: known(options?.latestPublishedScalingConfig?.maxExecutionEnvironments),
    ...rest,
  };
}

/**
 * On Managed Instances one execution environment runs many invocations at once in one process, and every one of
 * them holds database connections: the PostgreSQL wire's pool is shared by the environment's invocations, and
 * each invocation runs up to 10 records (a transaction each) at once. So the connections are bounded only when
 * the environments are: `maxExecutionEnvironments` must be set, and environments x connections each must fit
 * the cluster's (behind a proxy, the proxy's share of them). Behind a proxy, a pool smaller than the invocations
 * of an environment makes records wait for a connection, inside their call timeout.
 */
export function checkManagedInstances(facts: ManagedInstancesFacts): InvariantViolation[] {
  const violations: InvariantViolation[] = [];
  const wire = facts.poolSize !== undefined;
  const perEnvironment = facts.perEnvironmentConcurrency;
  if (wire && perEnvironment !== undefined && facts.poolSize! < perEnvironment) {
    violations.push({
      problem:
        `\`managedInstances.perExecutionEnvironmentMaxConcurrency\` (${perEnvironment}) lets one process run ${perEnvironment} invocations ` +
        `at once, but \`postgresPoolSize\` is ${facts.poolSize}: the invocations wait for a connection, and a wait longer than ` +
        "`inbox()`'s `callTimeoutMs` fails their records.",
      fix:
        `give postgresFromEnvironment({ max }) and \`postgresPoolSize\` at least ${perEnvironment}, or lower ` +
        `\`perExecutionEnvironmentMaxConcurrency\` to ${facts.poolSize}.`,
    });
  }
  // Connections one environment may hold: its pool behind a proxy; through the Data API, a transaction per record at once.
  const perEnvironmentConnections = wire ? facts.poolSize! : perEnvironment === undefined ? undefined : perEnvironment * RECORDS_AT_ONCE;
  if (facts.maxEnvironments === undefined && (wire || facts.connectionCeiling !== undefined)) {
    violations.push({
      problem:
        '`managedInstances.latestPublishedScalingConfig.maxExecutionEnvironments` is not set, so nothing bounds the execution ' +
        `environments, nor the database connections they hold (${wire ? `${facts.poolSize} per environment, its pool` : 'a transaction per record at once, in each invocation'}).`,
      fix: 'set `maxExecutionEnvironments` to what the database can take.',
    });
  }
  const ceiling =
    facts.connectionCeiling === undefined
      ? undefined
      : wire && facts.proxyPercent !== undefined
        ? Math.floor((facts.connectionCeiling * facts.proxyPercent) / 100)
        : facts.connectionCeiling;
  if (ceiling !== undefined && facts.maxEnvironments !== undefined && perEnvironmentConnections !== undefined) {
    const connections = facts.maxEnvironments * perEnvironmentConnections;
    if (connections > ceiling) {
      violations.push({
        problem:
          `${facts.maxEnvironments} execution environments x ${perEnvironmentConnections} connections each may hold ${connections} ` +
          `connections, more than the at most ${ceiling} ${wire ? "the proxy may open (its `maxConnectionsPercent` of the cluster's)" : "the cluster's maximum capacity gives"}: ` +
          'the records that get none fail and come back.',
        fix:
          `lower \`maxExecutionEnvironments\` to ${Math.max(1, Math.floor(ceiling / perEnvironmentConnections))}, ` +
          `${wire ? '`postgresPoolSize` (and the pool)' : '`perExecutionEnvironmentMaxConcurrency`'}, or raise InboxDatabase \`maxCapacity\`.`,
      });
    }
  }
  return violations;
}

/**
 * The SQS event source's throughput on Managed Instances is fixed at 5 MB/s; a batch of the largest messages
 * larger than that takes more than a second of it. A warning, not an error: messages are usually far smaller.
 */
export function sqsThroughputWarning(batchSize: number | undefined): string | undefined {
  if (batchSize === undefined || batchSize * SQS_MAX_MESSAGE_BYTES <= MANAGED_INSTANCES_SQS_BYTES_PER_SECOND) return undefined;
  const fits = Math.floor(MANAGED_INSTANCES_SQS_BYTES_PER_SECOND / SQS_MAX_MESSAGE_BYTES);
  return (
    `On Lambda Managed Instances the SQS event source delivers at most 5 MB/s, which cannot be raised: a batch of ${batchSize} ` +
    `messages of up to 1 MiB each is ${((batchSize * SQS_MAX_MESSAGE_BYTES) / 1_000_000).toFixed(1)} MB, more than a second of it, and ` +
    'the queue backs up when messages are that large. Fix: keep batchSize x the largest message under 5 MB ' +
    `(batchSize ${fits} for 1 MiB messages, or the queue's maximumMessageSize at ${Math.floor(MANAGED_INSTANCES_SQS_BYTES_PER_SECOND / batchSize)} bytes), or run this consumer on Lambda's default compute.`
  );
}

const known = (value: number | undefined) => (value === undefined || Token.isUnresolved(value) ? undefined : value);
