import type { DataApiSession } from '../../lambda/inbox/transport/data-api/session.js';
import { selectByKey } from '../../local/scenario/effects.js';
import { problemsOf, readVerdict } from '../../local/scenario/judge.js';
import type { DoubleEffect, OutOfOrderEffect, JudgedMessage, Verdict } from '../../local/scenario/judge.js';
import type { RunQueue, SqsScenarioSource } from '../../local/scenario/sqs.js';
import { INVOICES, INVOICE_CONSUMER, PHANTOMS, SHIPMENTS, SHIP_CONSUMER } from './tables.js';

/** What one stage of a pipeline run did, judged from the database and its queues. */
export interface PipelineStage {
  /** Orders the stage had to apply: every order produced (ship), every order shipped (invoice). */
  readonly expected: number;
  /** Orders applied at least once. */
  readonly applied: number;
  /** Orders applied more than once, with how many times. */
  readonly doubleEffects: readonly DoubleEffect[];
  /** Effects beyond the first, summed over orders. */
  readonly extraEffects: number;
  /** Expected orders not applied, not parked, not in the stage's dead-letter queue. */
  readonly lostKeys: readonly string[];
  /** Expected orders parked by the stage's inbox (poison). */
  readonly parked: number;
  /** Expected orders in the stage's dead-letter queue. */
  readonly deadLettered: number;
  /** Orders first applied after a later order of the same customer (FIFO group), none of them dead-lettered. */
  readonly outOfOrder: readonly OutOfOrderEffect[];
}

/** The invoice stage, with the invoices of orders that were not shipped when they were invoiced. */
export interface InvoiceStage extends PipelineStage {
  /** Orders invoiced while not shipped, or never shipped: their invoice message was a phantom. */
  readonly phantomKeys: readonly string[];
}

/** Both stages of a run. */
export interface PipelineVerdict {
  readonly ship: PipelineStage;
  readonly invoice: InvoiceStage;
  /** One line per problem of either stage; empty when both applied every order exactly once, in order, with no phantom. */
  readonly problems: string[];
}

/**
 * Judges both stages. The ship stage against the orders produced, as runScenario judges one consumer; the
 * invoice stage against the orders shipped: an order shipped and never invoiced is lost between the stages,
 * and one invoiced while not shipped had a phantom message.
 */
export async function judgePipeline(
  session: DataApiSession,
  source: SqsScenarioSource,
  sent: readonly JudgedMessage[],
  invoices: RunQueue,
  run: { readonly completed: boolean; readonly timeoutMs: number; readonly left: number },
): Promise<PipelineVerdict> {
  const shipDeadLettered = source.deadLettered(source.input);
  const shipVerdict = await readVerdict(session, SHIPMENTS, sent, parkedBy(SHIP_CONSUMER, 'message_key'), shipDeadLettered);
  // The invoice stage's messages: one per order shipped, in its customer's group, in the order the shipments committed.
  const shippedFirst = new Map(
    (await selectByKey(session, 'SELECT order_id AS key, min(id) AS seq FROM public.pipeline_shipment GROUP BY order_id')).map((row) => [
      String(row.key),
      Number(row.seq),
    ]),
  );
  const handedOn: JudgedMessage[] = sent
    .filter((message) => shippedFirst.has(message.key))
    .sort((a, b) => shippedFirst.get(a.key)! - shippedFirst.get(b.key)!)
    .map(({ key, groupId }, position) => ({ key, groupId, position, poison: false }));
  // Its records' keys are the senders' idempotency keys; the order is in the body.
  const invoiceDeadLettered = source.deadLettered(invoices, (message) => orderOf(message.body));
  const invoiceVerdict = await readVerdict(
    session,
    INVOICES,
    handedOn,
    parkedBy(INVOICE_CONSUMER, "(convert_from(payload, 'UTF8')::jsonb)->>'orderId'"),
    invoiceDeadLettered,
  );
  const phantomKeys = (await selectByKey(session, PHANTOMS)).map((row) => String(row.key));
  const ship = stage(shipVerdict, sent.length);
  const invoice = { ...stage(invoiceVerdict, handedOn.length), phantomKeys };
  const problems = [
    ...problemsOf(shipVerdict, run.completed, run.timeoutMs, run.left),
    // An invoice for an order never shipped is a phantom: said once, below.
    ...problemsOf({ ...invoiceVerdict, unexpectedKeys: [] }, true, run.timeoutMs, 0).map((problem) => `invoice stage: ${problem}`),
  ];
  if (phantomKeys.length > 0) {
    problems.push(
      `invoice stage: ${phantomKeys.length} order(s) invoiced while not shipped (a phantom invoice message): ${phantomKeys.slice(0, 10).join(', ')}${phantomKeys.length > 10 ? ', ...' : ''}`,
    );
  }
  return { ship, invoice, problems };
}

function parkedBy(consumer: string, key: string): string {
  return `SELECT ${key} AS key FROM inbox.parked_message WHERE consumer_name = '${consumer}'`;
}

function orderOf(body: string): string {
  try {
    return String((JSON.parse(body) as { orderId?: unknown }).orderId ?? '');
  } catch {
    return '';
  }
}

function stage(verdict: Verdict, expected: number): PipelineStage {
  return {
    expected,
    applied: verdict.applied,
    doubleEffects: verdict.doubleEffects,
    extraEffects: verdict.extraEffects,
    lostKeys: verdict.lostKeys,
    parked: verdict.parked,
    deadLettered: verdict.deadLettered,
    outOfOrder: verdict.outOfOrder,
  };
}
