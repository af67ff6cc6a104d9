#!/usr/bin/env -S npx tsx
// The deployable example: `npx cdk synth` and `npx cdk deploy` run this (see cdk.json).
//   -c alarmEmail=you@example.com      subscribe an address to the alarm topic
//   -c deletionProtection=false        let `cdk destroy` delete the database (a final snapshot is kept)
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { InboxStack } from '../lib/index.js';

const app = new App();
const alarmEmail: unknown = app.node.tryGetContext('alarmEmail');
const deletionProtection: unknown = app.node.tryGetContext('deletionProtection');
new InboxStack(app, 'InboxStack', {
  ...(typeof alarmEmail === 'string' && alarmEmail.length > 0 ? { alarmEmail } : {}),
  ...(deletionProtection === undefined ? {} : { deletionProtection: String(deletionProtection) !== 'false' }),
});
// cdk-nag's AWS Solutions rules run on every synth; an unacknowledged finding fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
