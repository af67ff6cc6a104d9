import { describe, expect, it } from 'vitest';
import { alarmsStack, expressionOf, inboxMetric, inputsOf, streamAlarms } from './support.js';

describe('the duplicate alarms', () => {
  it('alarms on any key collision', () => {
    const { byId } = alarmsStack();
    expect(byId('KeyCollisions').Properties).toMatchObject({
      ...inboxMetric('KeyCollisions', 'order-worker'),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it("watches the inbox metrics under the consumer's source: a stream's are its own", () => {
    const { alarms } = streamAlarms('kinesis');
    expect(alarms.find((a) => a.id.includes('KeyCollisions'))).toMatchObject(inboxMetric('KeyCollisions', 'stream-worker', 'kinesis'));
  });

  it('alarms on a spike in the duplicate rate, judged only above a minimum volume', () => {
    const tuned = alarmsStack({ duplicateRatePercent: 35, duplicateRateMinRecords: 50 }).byId('DuplicateRate');
    const defaults = alarmsStack().byId('DuplicateRate');
    expect(tuned.Properties.Threshold).toBe(35);
    expect(expressionOf(tuned)).toBe('IF((FILL(dup, 0) + FILL(proc, 0)) >= 50, 100 * FILL(dup, 0) / (FILL(dup, 0) + FILL(proc, 0)), 0)');
    expect(inputsOf(tuned)).toEqual({
      dup: [inboxMetric('Duplicates', 'order-worker'), 300, 'Sum'],
      proc: [inboxMetric('Processed', 'order-worker'), 300, 'Sum'],
    });
    expect(defaults.Properties.Threshold).toBe(20);
    expect(expressionOf(defaults)).toContain('>= 20,');
  });
});
