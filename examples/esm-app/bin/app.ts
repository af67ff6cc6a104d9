#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { PaymentsStack } from '../lib/payments-stack.js';

const app = new App();
new PaymentsStack(app, 'PaymentsStack');
