import { InboxError } from '../../../lambda/inbox/index.js';
import type { MaterialCase, Observed } from './consumer-run.js';
import type { Expected } from './expectations.js';
import { MARKER } from './hostile-values.js';
import { EXCLUDED } from './known-defects.js';
import type { LogLine } from './known-defects.js';
import type { Built } from './lambda-sources.js';

// The invariant, judged from the database and the answers, never from the handler's own summary. Per
// message: applied exactly once, or parked with its original cause, or failed as permanent (reported failed
// on every delivery, its cause a PermanentError subclass in the log). Never acknowledged without being
// applied or stored; never a temporary failure for a permanent cause; no body bytes in a log line.

/** The errors a permanent failure is logged with: the inbox's PermanentError subclasses, and the suite's own. */
const PERMANENT = new Set(['PermanentError', 'ParseError', 'KeyError', 'BodyTooLargeError', 'KeyCollisionError', 'RejectedOrder']);

/** What a log line says of a record: its id (by whichever name the source gives it) and its error. */
function aboutRecord(line: LogLine): { id: string | undefined; error: { name: string; message: string } } | undefined {
  const fields = line.extra[0] as Record<string, unknown> | undefined;
  if (!/^record (failed|parked)/.test(line.message) || fields === undefined) return undefined;
  const id = (fields.messageId ?? fields.sequenceNumber ?? fields.record) as string | undefined;
  return { id, error: fields.error as { name: string; message: string } };
}

/** The violations of the invariant the case shows; none when it holds. */
export function violations(material: MaterialCase, observed: Observed): string[] {
  const found: string[] = [];
  const { context } = material;
  const records = material.generations.flat();
  // By copy: SQS delivers a record again as a new object (its receive count one higher).
  const byCopy = new Map(records.map((record) => [record.copy, material.expected.get(record)!]));
  const expected = { get: (record: Built) => byCopy.get(record.copy) };
  const describe = (record: Built) =>
    `record ${record.copy} (${record.entry}, token ${record.token}, id ${record.id ?? 'none'}, ${record.plan.shape}, ${record.plan.payload.kind}, effect ${JSON.stringify(record.plan.effect)})`;

  // Per delivery: the answer names only records of the batch; a throw is the inbox's own; log lines name their causes.
  const acked = new Set<number>();
  const causesLogged = new Map<number, { line: string; name: string }[]>();
  for (const delivery of observed.deliveries) {
    if (delivery.answer.kind === 'thrown') {
      const error = delivery.answer.error as Error;
      if (!(error instanceof InboxError)) found.push(`delivery ${observed.deliveries.indexOf(delivery)} threw ${error?.name}: ${error?.message}`);
    } else {
      for (const id of delivery.answer.foreign) found.push(`the answer names ${id}, which is no record of its batch: the record that failed is taken as done`);
      for (const record of delivery.answer.acked) acked.add(record.copy);
    }
    for (const line of delivery.lines) {
      const about = aboutRecord(line);
      if (!about) continue;
      const named = delivery.batch.filter((record) => record.id === about.id);
      if (named.length === 1) {
        const list = causesLogged.get(named[0]!.copy) ?? [];
        list.push({ line: line.message, name: about.error?.name });
        causesLogged.set(named[0]!.copy, list);
      } else if (!named.some((record) => mayLog(expected.get(record)!, about.error?.name))) {
        // Records without an id share the line's missing id: the cause must be one of theirs.
        found.push(`${line.message} with ${about.error?.name}, a cause of none of the records without an id: ${named.map(describe).join('; ')}`);
      }
    }
    for (const line of delivery.lines) {
      if (JSON.stringify(line).includes(MARKER) && !EXCLUDED.some((defect) => defect.logLine?.(line))) {
        found.push(`a log line holds body bytes (the marker): ${JSON.stringify(line).slice(0, 300)}`);
      }
    }
  }

  const parkedOf = (token: string) => observed.parked.filter((row) => row.token === token);
  const tokens = new Map<string, Built[]>();
  for (const record of records) tokens.set(record.token, [...(tokens.get(record.token) ?? []), record]);

  for (const [token, copies] of tokens) {
    const effects = observed.effects.get(token) ?? 0;
    const parked = parkedOf(token);
    const all = copies.map((copy) => expected.get(copy)!);
    const mustApply = all.some((e) => e.canApply && e.causes.size === 0 && e.blocked === 'no');
    const mayApply = all.some((e) => e.canApply);
    const causes = new Set(all.flatMap((e) => [...e.causes]));
    const who = copies.map(describe).join('; ');
    if (effects > 1) found.push(`${who}: applied ${effects} times`);
    if (mustApply && effects !== 1)
      found.push(`${who}: never applied, though nothing refuses it (parked: ${parked.map((row) => row.errorClass).join(', ') || 'no'})`);
    if (!mayApply && effects > 0) found.push(`${who}: applied, though it must be refused with ${[...causes].join(' or ')}`);
    if (effects > 0 && parked.length > 0) found.push(`${who}: applied and parked (${parked.map((row) => row.errorClass).join(', ')})`);
    if (context.policy === 'retry' && parked.length > 0) found.push(`${who}: parked under onPermanentError 'retry'`);
    for (const row of parked) {
      if (!causes.has(row.errorClass))
        found.push(`${who}: parked as ${row.errorClass}, not its cause (${[...causes].join(' or ') || 'none: it should apply'})`);
    }
    for (const copy of copies) {
      const e = expected.get(copy)!;
      const logged = causesLogged.get(copy.copy) ?? [];
      const wasAcked = acked.has(copy.copy);
      // Never acknowledged without being applied or stored.
      if (wasAcked && effects === 0 && parked.length === 0 && !(copy.raw === null && observed.parked.some((row) => row.token === undefined))) {
        found.push(`${describe(copy)}: acknowledged, but neither applied nor parked: lost`);
      }
      // A permanent cause is never logged as a temporary failure, and a record that can apply is never refused for good.
      for (const { line, name } of logged) {
        const permanent = PERMANENT.has(name);
        if (!e.canApply && !e.causes.has(name)) found.push(`${describe(copy)}: ${line} with ${name}; its cause is ${[...e.causes].join(' or ')}`);
        if (e.canApply && permanent && !e.causes.has(name)) found.push(`${describe(copy)}: ${line} with ${name}, though it can apply`);
        if (e.canApply && line.startsWith('record parked') && e.causes.size === 0) found.push(`${describe(copy)}: parked (${name}), though it can apply`);
      }
      if (!e.canApply && context.policy === 'retry' && wasAcked) found.push(`${describe(copy)}: acknowledged under 'retry', though it fails for good`);
      if (!e.canApply && context.policy === 'retry' && e.blocked === 'no' && copy.id !== undefined && !logged.some(({ name }) => e.causes.has(name))) {
        found.push(`${describe(copy)}: failed, but its cause (${[...e.causes].join(' or ')}) is never logged for it`);
      }
      if (!e.canApply && context.policy === 'park' && e.blocked === 'no' && !wasAcked) {
        found.push(`${describe(copy)}: not parked: reported failed on every delivery (${logged.map(({ name }) => name).join(', ') || 'nothing logged'})`);
      }
    }
  }
  for (const row of observed.parked) {
    if (row.token !== undefined && !tokens.has(row.token)) found.push(`a parked row of no message of the case: ${JSON.stringify(row)}`);
  }
  // A parked row without a token is a null record's; there are no more of them than deliveries of null
  // records: a record without an id is parked at each delivery, since nothing tells it from another
  // (docs/parked-messages.md, "A record is its id and its payload").
  const nulls = observed.deliveries.flatMap((delivery) => delivery.batch).filter((record) => record.raw === null).length;
  const tokenless = observed.parked.filter((row) => row.token === undefined).length;
  if (tokenless > nulls) found.push(`${tokenless} parked rows carry no message, for ${nulls} deliveries of null records`);
  return found;
}

/** Whether a record may be logged failed with this error: one of its causes, or a passing failure when it can apply. */
function mayLog(expected: Expected, name: string): boolean {
  return expected.causes.has(name) || (expected.canApply && !PERMANENT.has(name));
}

/** A readable account of the case, for a counterexample. */
export function account(material: MaterialCase, observed: Observed): string {
  const lines = [`${material.context.source.name}, ${material.context.mode}, ${material.context.policy}; excluded: ${material.excluded.join('; ') || 'none'}`];
  for (const [generation, records] of material.generations.entries()) {
    lines.push(`generation ${generation + 1}:`);
    for (const record of records) {
      const e: Expected = material.expected.get(record)!;
      lines.push(
        `  #${record.copy} ${record.entry} ${record.token} id=${record.id ?? '-'} lane=${record.lane || '-'} ${record.plan.shape} ${record.plan.payload.kind} effect=${JSON.stringify(record.plan.effect)} key=${JSON.stringify(record.producerKey)} -> ${e.canApply ? 'apply' : 'refuse'} ${[...e.causes].join('|')} blocked=${e.blocked}`,
      );
    }
  }
  for (const [index, delivery] of observed.deliveries.entries()) {
    const answer =
      delivery.answer.kind === 'thrown'
        ? `threw ${(delivery.answer.error as Error).name}`
        : `acked ${[...delivery.answer.acked].map((record) => `#${record.copy}`).join(',')}`;
    lines.push(`delivery ${index + 1} (generation ${delivery.generation + 1}): #${delivery.batch.map((record) => record.copy).join(',#')} -> ${answer}`);
    for (const line of delivery.lines) lines.push(`    ${line.level} ${line.message} ${JSON.stringify(line.extra).slice(0, 240)}`);
  }
  lines.push(`effects: ${JSON.stringify(Object.fromEntries(observed.effects))}`);
  lines.push(`parked: ${JSON.stringify(observed.parked)}`);
  return lines.join('\n');
}
