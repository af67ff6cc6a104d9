/**
 * The ways the pipeline's ship stage hands the invoice message on, each through the same inbox (the effect
 * is exactly once in all three) and to the same invoice stage:
 *
 * - `outbox`: `tx.send` writes the message in the claim's transaction; the handler sends it after the
 *   commit, and the periodic sweeper sends what a dead worker left.
 * - `send-in-handler`: sends from `apply`, before the commit. A rollback leaves a message about a
 *   shipment that did not happen (a phantom), and the redelivery sends it again.
 * - `send-after-commit`: sends once the handler's records committed. A worker that dies in between, or
 *   a commit whose answer was lost, never sends it: the message is lost.
 */
export const PIPELINE_VARIANTS = ['outbox', 'send-in-handler', 'send-after-commit'] as const;

/** One of {@link PIPELINE_VARIANTS}. */
export type PipelineVariant = (typeof PIPELINE_VARIANTS)[number];
