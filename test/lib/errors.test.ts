import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { InboxConstructError, InboxFunction, InboxQueue } from '../../lib/index.js';
import { testStack } from './support.js';

describe('InboxConstructError', () => {
  it('is what a construct throws for props it cannot deploy, with each problem and its fix apart', () => {
    // Arrange
    const stack = testStack();
    const deadLetterQueue = sqs.Queue.fromQueueArn(stack, 'ExistingDlq', 'arn:aws:sqs:eu-west-1:123456789012:dlq.fifo');

    // Act
    let thrown: unknown;
    try {
      new InboxQueue(stack, 'Orders', { deadLetterQueue });
    } catch (error) {
      thrown = error;
    }

    // Assess
    expect(thrown).toBeInstanceOf(InboxConstructError);
    const error = thrown as InboxConstructError;
    expect(error.name).toBe('InboxConstructError');
    expect(error.subject).toBe('InboxQueue Test/Orders');
    expect(error.problems).toEqual([
      {
        problem: '`deadLetterQueue` is only used with an existing `queue`.',
        fix: 'remove `deadLetterQueue` to get a new one, or pass the existing `queue` it belongs to.',
      },
    ]);
    expect(error.message).toBe(`InboxQueue Test/Orders: ${error.problems[0]!.problem} Fix: ${error.problems[0]!.fix}`);
  });

  it('lists several problems a line each, as the synth-time invariants read', () => {
    const error = InboxConstructError.of('InboxConsumer Stack/Worker', ['`a` is wrong. Fix: set `a`.', '`b` is wrong. Fix: drop `b`.']);
    expect(error.problems).toEqual([
      { problem: '`a` is wrong.', fix: 'set `a`.' },
      { problem: '`b` is wrong.', fix: 'drop `b`.' },
    ]);
    expect(error.message).toBe('InboxConsumer Stack/Worker:\n  - `a` is wrong. Fix: set `a`.\n  - `b` is wrong. Fix: drop `b`.');
  });

  it('names an InboxFunction given neither its entry nor ready code, or both', () => {
    const stack = testStack();
    const shape = { environment: {}, timeout: Duration.seconds(30), description: 'worker' };
    expect(() => new InboxFunction(stack, 'Neither', shape)).toThrow(InboxConstructError);
    expect(() => new InboxFunction(stack, 'Both', { ...shape, entry: 'src/worker.ts', code: lambda.Code.fromInline('export const handler = 1') })).toThrow(
      'InboxFunction Test/Both: `entry` and `code` were both given. Fix: pass exactly one of them.',
    );
  });
});
