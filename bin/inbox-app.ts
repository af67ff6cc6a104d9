import { App, Validations } from 'aws-cdk-lib';
import type { AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { InboxStack } from '../demo/stacks/inbox-stack.js';
import { InboxStreamsStack } from '../demo/stacks/inbox-streams-stack.js';
import { InboxDsqlStack } from '../demo/stacks/inbox-dsql-stack.js';
import { InboxProxyStack } from '../demo/stacks/inbox-proxy-stack.js';

/** The deployable app: the app, its stack, and the stream example when asked for. */
export interface InboxApp {
  readonly app: App;
  readonly stack: InboxStack;
  /** The stream example (`-c streams=true`), sharing `stack`'s database. */
  readonly streams?: InboxStreamsStack;
  /** The example on the PostgreSQL wire through RDS Proxy (`-c proxy=true`). */
  readonly proxy?: InboxProxyStack;
  /** The example on Aurora DSQL (`-c dsqlEntry=<entry>`). */
  readonly dsql?: InboxDsqlStack;
}

/**
 * Builds the deployable example app that `bin/app.ts` synthesizes, with cdk-nag's AWS Solutions rules
 * registered, so an unacknowledged finding fails synthesis. Context (`-c key=value`):
 * `alarmEmail` subscribes an address to the alarm topic; `deletionProtection=false` lets `cdk destroy`
 * delete the database (a final snapshot is kept); `invoices=true` gives the order worker an outbox destination
 * `invoices` (a FIFO queue) and adds the outbox relay; `streams=true` adds `InboxStreamsStack`, one consumer per
 * stream source on the same database, with `mskClusterArn`, `kafkaBootstrapServers` (comma-separated) and
 * `kafkaSecretName` naming the Kafka clusters it reads; `proxy=true` adds `InboxProxyStack` (the order worker on the
 * PostgreSQL wire through RDS Proxy); `dsqlEntry=<file>` adds `InboxDsqlStack` with that worker on Aurora DSQL.
 *
 * @param props passed to the App (tests pass fast settings); `cdk synth` passes none.
 * @example
 * const { app } = createInboxApp();
 * app.synth();
 */
export function createInboxApp(props: AppProps = {}): InboxApp {
  const app = new App(props);
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    return value === undefined || value === null || String(value).length === 0 ? undefined : String(value);
  };
  const alarmEmail = context('alarmEmail');
  const deletionProtection = context('deletionProtection');
  const stack = new InboxStack(app, 'InboxStack', {
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
    ...(deletionProtection === undefined ? {} : { deletionProtection: deletionProtection !== 'false' }),
    ...(context('invoices') === 'true' ? { invoices: true } : {}),
  });
  let streams: InboxStreamsStack | undefined;
  if (context('streams') === 'true') {
    const mskClusterArn = context('mskClusterArn');
    const bootstrapServers = context('kafkaBootstrapServers');
    const kafkaSecretName = context('kafkaSecretName');
    streams = new InboxStreamsStack(app, 'InboxStreamsStack', {
      database: stack.database,
      ...(stack.alarms.topic === undefined ? {} : { alarmTopic: stack.alarms.topic }),
      ...(mskClusterArn === undefined ? {} : { mskClusterArn }),
      ...(bootstrapServers === undefined ? {} : { kafkaBootstrapServers: bootstrapServers.split(',').map((s) => s.trim()) }),
      ...(kafkaSecretName === undefined ? {} : { kafkaSecretName }),
    });
  }
  // The example on the PostgreSQL wire (`-c proxy=true`) and on Aurora DSQL (`-c dsqlEntry=<your worker's entry>`).
  const proxy = context('proxy') === 'true' ? new InboxProxyStack(app, 'InboxProxyStack') : undefined;
  const dsqlEntry = context('dsqlEntry');
  const dsql = dsqlEntry === undefined ? undefined : new InboxDsqlStack(app, 'InboxDsqlStack', { entry: dsqlEntry });
  // cdk-nag's AWS Solutions rules run on every synth; an unacknowledged finding fails it.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, ...(streams === undefined ? {} : { streams }), ...(proxy === undefined ? {} : { proxy }), ...(dsql === undefined ? {} : { dsql }) };
}
