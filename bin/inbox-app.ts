import { App, Validations } from 'aws-cdk-lib';
import type { AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { InboxStack } from '../lib/index.js';

/** The deployable app: the app and its one stack. */
export interface InboxApp {
  readonly app: App;
  readonly stack: InboxStack;
}

/**
 * Builds the deployable example app that `bin/app.ts` synthesizes, with cdk-nag's AWS Solutions rules
 * registered, so an unacknowledged finding fails synthesis. Context (`-c key=value`):
 * `alarmEmail` subscribes an address to the alarm topic; `deletionProtection=false` lets `cdk destroy`
 * delete the database (a final snapshot is kept).
 *
 * @param props passed to the App (tests pass fast settings); `cdk synth` passes none.
 * @example
 * const { app } = createInboxApp();
 * app.synth();
 */
export function createInboxApp(props: AppProps = {}): InboxApp {
  const app = new App(props);
  const alarmEmail: unknown = app.node.tryGetContext('alarmEmail');
  const deletionProtection: unknown = app.node.tryGetContext('deletionProtection');
  const stack = new InboxStack(app, 'InboxStack', {
    ...(typeof alarmEmail === 'string' && alarmEmail.length > 0 ? { alarmEmail } : {}),
    ...(deletionProtection === undefined ? {} : { deletionProtection: String(deletionProtection) !== 'false' }),
  });
  // cdk-nag's AWS Solutions rules run on every synth; an unacknowledged finding fails it.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
