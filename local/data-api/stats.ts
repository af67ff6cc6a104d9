/** The operations the local Data API serves, named as the SDK commands without "Command". */
export type Operation = 'ExecuteStatement' | 'BatchExecuteStatement' | 'BeginTransaction' | 'CommitTransaction' | 'RollbackTransaction';

/** What the server counts (see {@link Stats.calls}). */
export type CountedOperation = Operation | 'ExecuteSql';

/**
 * Calls received per operation, counted when a request arrives (faulted and refused ones included), so a
 * benchmark can report Data API calls per message.
 *
 * @example
 * server.stats.reset();
 * await handler(event);
 * console.log(server.stats.calls.ExecuteStatement, server.stats.total());
 */
export class Stats {
  /**
   * Calls per operation since the start or the last `reset()`: every {@link Operation}, plus the
   * deprecated `ExecuteSql`, which Aurora Serverless v2 refuses; counted so that a client calling it is visible.
   */
  readonly calls: Record<Operation | 'ExecuteSql', number> = {
    ExecuteStatement: 0,
    BatchExecuteStatement: 0,
    BeginTransaction: 0,
    CommitTransaction: 0,
    RollbackTransaction: 0,
    ExecuteSql: 0,
  };

  /** The number of calls of every operation. */
  total(): number {
    return Object.values(this.calls).reduce((sum, count) => sum + count, 0);
  }

  /** Sets every counter back to 0. */
  reset(): void {
    for (const operation of Object.keys(this.calls) as CountedOperation[]) this.calls[operation] = 0;
  }

  /** @internal Counts one received call. */
  count(operation: CountedOperation): void {
    this.calls[operation] += 1;
  }
}
