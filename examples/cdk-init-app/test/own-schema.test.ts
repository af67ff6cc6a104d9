// Run by cdk init's jest: a stack whose InboxDatabase creates the app's own table synthesizes, and the
// table's DDL travels to the migration function, which applies it after the inbox's own sets at deploy.
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { InboxDatabase, MigrationSet } from 'sqs-inbox/cdk';

test("synthesizes an InboxDatabase that carries the app's own migration set to the migration function", () => {
  // Bundling off: a unit test of the template needs no handler bundles.
  const app = new cdk.App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new cdk.Stack(app, 'Ledger');
  new InboxDatabase(stack, 'Inbox', { migrations: [MigrationSet.fromDirectory(path.join(__dirname, '../migrations/credits'))] });
  const migrations = Object.values(Template.fromStack(stack).findResources('Custom::InboxMigration'));
  expect(migrations).toHaveLength(1);
  const properties = migrations[0]!.Properties as { Migrations: string; Sets: unknown };
  expect(properties.Migrations).toBe('inbox,credits');
  expect(JSON.stringify(properties.Sets)).toContain('CREATE TABLE public.credits');
});
