import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import type { AppProps } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';

/** The feature flags `cdk synth` uses, so unit tests see the same template. */
const cdkJson = JSON.parse(readFileSync(fileURLToPath(new URL('../../cdk.json', import.meta.url)), 'utf8')) as {
  context: Record<string, unknown>;
};

/** A user handler entry for InboxConsumer. */
export const FIXTURE_HANDLER = fileURLToPath(new URL('./fixtures/handler.ts', import.meta.url));

/** Props for an app like `cdk synth`'s, minus esbuild bundling and the built-in CloudFormation validator (cdk.md §4). */
export function testAppProps(context: Record<string, unknown> = {}): AppProps {
  return {
    builtinCloudFormationValidation: false,
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context },
  };
}

/** An app like `cdk synth`'s, minus esbuild bundling and the built-in CloudFormation validator (cdk.md §4). */
export function testApp(): App {
  return new App(testAppProps());
}

/** A bare stack in a fast test app. */
export function testStack(id = 'Test'): Stack {
  return new Stack(testApp(), id);
}

/** Synthesizes and returns the message of the error synthesis throws (fails the test when none). */
export function synthError(stack: Stack): string {
  try {
    Template.fromStack(stack);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected synthesis to fail');
}

/** The logical id of a construct's CloudFormation resource. */
export function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as lambda.CfnFunction);
}

/** Every IAM policy statement in the template. */
export function policyStatements(template: Template): Array<Record<string, unknown>> {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) => (policy as { Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } } }).Properties.PolicyDocument.Statement,
  );
}
