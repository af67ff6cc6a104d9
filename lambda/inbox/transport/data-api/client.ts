import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { RDSDataClient } from '@aws-sdk/client-rds-data';

/**
 * How long `inbox()`'s default client keeps an idle connection for reuse. Below every idle timeout on the
 * way to the Data API that AWS documents: Elastic Load Balancing closes a connection idle for 60 seconds by
 * default (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-load-balancer-attributes.html#connection-idle-timeout),
 * a NAT gateway drops one idle for 350 seconds (https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-troubleshooting.html#nat-gateway-troubleshooting-timeout),
 * and the Data API publishes no figure of its own. A connection reused past its endpoint's timeout answers the next call with a reset,
 * which for a statement inside a transaction fails the record. Reconnecting after 15 idle seconds costs
 * one TLS handshake.
 */
export const IDLE_SOCKET_TIMEOUT_MS = 15_000;

/**
 * Calls in flight at once through `inbox()`'s default client, one connection each: 64 invocations (what Lambda
 * Managed Instances runs at once per vCPU for Node.js by default, in one process) x 10 records each (`inbox()`'s
 * default `concurrency`). A call beyond it waits in the agent for a connection, and that wait counts against
 * `callTimeoutMs`: a timeout, and an ambiguous failure, for a call that was never sent. The Data API pools the
 * database connections itself, so this bounds sockets, not database connections; 640 stays well inside
 * Lambda's 1,024 file descriptors.
 */
export const MAX_SOCKETS = 640;

/**
 * The client `inbox()` makes when none is given: no SDK retries (sqs-inbox decides which calls are safe to
 * send twice), and connections that are not reused once idle for `idleSocketTimeoutMs`. Node's own agent
 * timeout drops them with a timer, which does not run while Lambda has the process frozen; so each call
 * also drops, before it is sent, every idle connection older than that by the clock: the first call after
 * a thaw opens a new connection instead of writing into one the endpoint closed during the freeze.
 */
export function defaultDataApiClient(
  config: ConstructorParameters<typeof RDSDataClient>[0] & object,
  idleSocketTimeoutMs = IDLE_SOCKET_TIMEOUT_MS,
  now: () => number = Date.now,
): RDSDataClient {
  const http = idleLimited(HttpAgent, idleSocketTimeoutMs, now);
  const https = idleLimited(HttpsAgent, idleSocketTimeoutMs, now);
  const client = new RDSDataClient({
    ...config,
    // The SDK retries 5xx and socket errors by re-sending the call. Inside a transaction that can run a
    // statement twice, and a commit retry only ever says "not found": sqs-inbox decides retries itself.
    maxAttempts: 1,
    requestHandler: { httpAgent: http.agent, httpsAgent: https.agent },
  });
  client.middlewareStack.add(
    (next) => (args) => {
      http.dropStale();
      https.dropStale();
      return next(args);
    },
    { step: 'finalizeRequest', name: 'sqsInboxDropStaleSockets' },
  );
  return client;
}

/** A keep-alive agent whose idle sockets are dropped after `idleMs`, by timer and by `dropStale()`. */
function idleLimited(Base: typeof HttpAgent, idleMs: number, now: () => number): { agent: HttpAgent; dropStale: () => void } {
  const idleSince = new WeakMap<Duplex, number>();
  class IdleLimitedAgent extends Base {
    override keepSocketAlive(socket: Duplex): void {
      idleSince.set(socket, now());
      super.keepSocketAlive(socket);
    }
  }
  const agent = new IdleLimitedAgent({ keepAlive: true, maxSockets: MAX_SOCKETS, timeout: idleMs });
  const dropStale = () => {
    for (const sockets of Object.values(agent.freeSockets)) {
      for (const socket of [...(sockets ?? [])] as Socket[]) {
        if (now() - (idleSince.get(socket) ?? now()) < idleMs) continue;
        // Documented by Node: 'agentRemove' takes a socket out of the agent's pool.
        socket.emit('agentRemove');
        socket.destroy();
      }
    }
  };
  return { agent, dropStale };
}
