import { describe, expect, it } from 'vitest';
import { alarmsStack, expressionOf, inboxMetric, inputsOf } from './support.js';

describe('the batch fallback alarm', () => {
  it('alarms on a sustained rate of batch sets that fell back to one record at a time, judged only above a minimum of sets', () => {
    // Arrange + Act: defaults, then both thresholds as props.
    const defaults = alarmsStack().byId('ConsumerorderworkerBatchFallbackRate');
    const tuned = alarmsStack({ batchFallbackRatePercent: 30, batchFallbackRateMinSets: 50 }).byId('ConsumerorderworkerBatchFallbackRate');

    // Assess
    expect(defaults.Properties).toMatchObject({
      Threshold: 10,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(expressionOf(defaults)).toBe('IF(FILL(sets, 0) >= 10, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)');
    expect(tuned.Properties).toMatchObject({ Threshold: 30 });
    expect(expressionOf(tuned)).toBe('IF(FILL(sets, 0) >= 50, 100 * FILL(fallbacks, 0) / FILL(sets, 0), 0)');
    expect(inputsOf(tuned)).toEqual({
      sets: [inboxMetric('BatchSets', 'order-worker'), 300, 'Sum'],
      fallbacks: [inboxMetric('BatchFallbacks', 'order-worker'), 300, 'Sum'],
    });
    expect(defaults.Properties.AlarmDescription).toContain('fell back to running each record alone');
  });
});
