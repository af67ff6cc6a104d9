#!/usr/bin/env -S npx tsx
// The deployable example: `npx cdk synth` / `npx cdk deploy` run this (see cdk.json).
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { InboxStack } from '../lib/index.js';

const app = new App();
new InboxStack(app, 'InboxStack', {
  ...(process.env.INBOX_ALARM_EMAIL === undefined ? {} : { alarmEmail: process.env.INBOX_ALARM_EMAIL }),
});
// cdk-nag's AWS Solutions rules run on every synth; any unacknowledged finding fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
