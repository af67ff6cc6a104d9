// Run by cdk init's jest: the README's stack, as pasted into lib/payments-stack.ts, builds in a CommonJS app;
// its handler entry and its migrations folder are found from __dirname.
import * as cdk from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PaymentsStack } from '../lib/payments-stack';

test("synthesizes the README's stack: the consumer's function, and the app's own table in the migration", () => {
  // Bundling off: a unit test of the template needs no handler bundles (cdk synth bundles them).
  const app = new cdk.App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const template = Template.fromStack(new PaymentsStack(app, 'Payments'));
  template.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: { INBOX_CONSUMER: 'payments' } } });
  const [migration] = Object.values(template.findResources('Custom::InboxMigration'));
  expect(JSON.stringify(migration?.Properties)).toContain('CREATE TABLE public.payments');
});
