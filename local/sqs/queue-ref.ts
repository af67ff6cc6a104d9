/**
 * How a `QueueUrl` (or, in the in-process API, a name or ARN) names a queue.
 *
 * On AWS a queue URL names one account's queue at one endpoint: a URL with another account id, or a
 * host that is not this endpoint, names a queue that does not exist here, and the answer is
 * QueueDoesNotExist (moto found this against AWS with an arbitrary address, getmoto/moto#3657; the
 * developer guide's JSON error example gives the text,
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html).
 */
export interface QueueScope {
  /** The account whose queues these are. */
  accountId: string;
  /** The region whose queues these are (ARNs name it). */
  region: string;
  /** Hosts (`host:port`, lowercase) that queue URLs of this model may carry. */
  hosts: ReadonlySet<string>;
}

/**
 * The queue name a reference names within `scope`, or undefined when it names no queue of it: a plain
 * name; a URL `<scheme>://<host>/<accountId>/<name>` with a host of the scope and its account id; an ARN
 * `arn:<partition>:sqs:<region>:<accountId>:<name>` of the scope's region and account.
 *
 * @example
 * resolveQueueName('http://127.0.0.1:4566/000000000000/orders', { accountId: '000000000000', region: 'us-east-1', hosts: new Set(['127.0.0.1:4566']) }); // 'orders'
 * resolveQueueName('http://127.0.0.1:4566/111111111111/orders', scope); // undefined: another account
 */
export function resolveQueueName(reference: string, scope: QueueScope): string | undefined {
  if (typeof reference !== 'string' || reference === '') return undefined;
  if (reference.startsWith('arn:')) {
    const [, , service, region, account, name, ...rest] = reference.split(':');
    return service === 'sqs' && region === scope.region && account === scope.accountId && name && rest.length === 0 ? name : undefined;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(reference)) {
    let url: URL;
    try {
      url = new URL(reference);
    } catch {
      return undefined;
    }
    if (!scope.hosts.has(url.host.toLowerCase())) return undefined;
    const segments = url.pathname.split('/').filter((s) => s !== '');
    return segments.length === 2 && segments[0] === scope.accountId ? segments[1] : undefined;
  }
  if (reference.includes('/')) return nameInPath(reference.replace(/[?#].*$/, ''), scope.accountId);
  return reference;
}

/** The lowercase `host:port` of an endpoint URL, as `URL.host` gives it. */
export function hostOf(endpoint: string): string | undefined {
  try {
    return new URL(endpoint).host.toLowerCase();
  } catch {
    return undefined;
  }
}

function nameInPath(path: string, accountId: string): string | undefined {
  const segments = path.split('/').filter((s) => s !== '');
  if (segments.length === 1) return segments[0];
  if (segments.length === 2 && segments[0] === accountId) return segments[1];
  return undefined;
}

/**
 * The queue name in a queue name, URL or ARN, as SQS resolves its `QueueUrl` parameter; undefined for an
 * empty or non-string value. It does not check the account or host: {@link resolveQueueName} does.
 *
 * @example
 * queueNameOf('http://127.0.0.1:4566/000000000000/orders.fifo'); // 'orders.fifo'
 */
export function queueNameOf(nameOrUrl: string): string | undefined {
  if (typeof nameOrUrl !== 'string' || nameOrUrl === '') return undefined;
  if (nameOrUrl.startsWith('arn:')) return nameOrUrl.split(':').at(-1);
  if (nameOrUrl.includes('/')) {
    const path = nameOrUrl.replace(/[?#].*$/, '').replace(/\/+$/, '');
    return path.split('/').at(-1);
  }
  return nameOrUrl;
}
