#!/usr/bin/env -S npx tsx
// The deployable example: `npx cdk synth` and `npx cdk deploy` run this (see cdk.json).
//   -c alarmEmail=you@example.com      subscribe an address to the alarm topic
//   -c deletionProtection=false        let `cdk destroy` delete the database (a final snapshot is kept)
import { createInboxApp } from './inbox-app.js';

createInboxApp().app.synth();
