import { expect } from 'vitest';
/**
 * The transports the inbox suites run on, one row each. `INBOX_TEST_TRANSPORT` names the row (the default
 * project leaves it unset: the Data API; the `wire` project sets `postgres`, the `dsql` project `dsql`). A row says what a test may
 * need to know of its transport; how its fixture is made is the matching row of `FIXTURES` in inbox.ts.
 * A new transport is one row here and one there.
 */
export const TRANSPORTS = {
  'data-api': {
    /** Which protocol family's expectations apply (see {@link onTransport}). */
    protocol: 'data-api',
    /** The class of the session's failures, as a logged error's `name` shows it. */
    errorName: 'DataApiError',
  },
  postgres: { protocol: 'wire', errorName: 'PostgresError' },
  dsql: { protocol: 'wire', errorName: 'PostgresError' },
} as const satisfies Record<string, { readonly protocol: Protocol; readonly errorName: string }>;

/** The two ways the runtime reaches PostgreSQL; a transport's expectations are its protocol's. */
export type Protocol = 'data-api' | 'wire';

export type TransportName = keyof typeof TRANSPORTS;

function transportFromEnv(value: string | undefined): TransportName {
  if (value === undefined || value === '') return 'data-api';
  if (Object.hasOwn(TRANSPORTS, value)) return value as TransportName;
  throw new Error(
    `INBOX_TEST_TRANSPORT=${value} is not a transport the suites know; use one of: ${Object.keys(TRANSPORTS).join(', ')} (or leave it unset for data-api).`,
  );
}

/** The transport under test. */
export const TRANSPORT: TransportName = transportFromEnv(process.env.INBOX_TEST_TRANSPORT);

/** What the transport under test is. */
export const CURRENT = TRANSPORTS[TRANSPORT];

/**
 * The expectation for the transport under test, where the protocols answer a fault differently: both are
 * written out, side by side, so neither is weakened to fit the other.
 *
 * @example
 * expect(log).toMatch(onTransport({ 'data-api': /InternalServerErrorException/, wire: /\(unavailable\)/ }));
 */
export function onTransport<T>(expectations: Record<Protocol, T>): T {
  return expectations[CURRENT.protocol];
}

/**
 * Asserts that a failed attempt left no transaction open (`count` reads how many are). The local Data API
 * server ends a transaction whose call failed before it answers; on the wire PostgreSQL ends it when it
 * reads the closed connection, a moment after the client sees the failure: soon, and well before the
 * fixtures' idle expiry (300 ms and more), which would otherwise be what ended it.
 */
export async function expectNoOpenTransaction(count: () => Promise<number>): Promise<void> {
  if (CURRENT.protocol === 'wire') await expect.poll(count, { timeout: 250, interval: 10 }).toBe(0);
  else expect(await count()).toBe(0);
}
