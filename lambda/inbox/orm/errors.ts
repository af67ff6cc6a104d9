import { InboxError } from '../errors.js';

/**
 * An ORM binding of `sqs-inbox/orm` was given something it cannot bind to: not the `tx` of `apply` or
 * `applyBatch`, a `tx` on the other transport, or a call after `apply` returned. The message names the fix.
 */
export class OrmBindingError extends InboxError {
  override name = 'OrmBindingError';
}
