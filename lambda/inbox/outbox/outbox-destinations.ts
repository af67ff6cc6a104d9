import { InboxConfigError } from '../errors.js';
import { described } from '../handler/option-checks.js';
import { INBOX_ENV } from '../contract.js';

/** The outbox's destination names and queue URLs, checked when `inbox()` is called. */
export function checkDestinations(destinations: unknown): Readonly<Record<string, string>> {
  if (
    typeof destinations !== 'object' ||
    destinations === null ||
    Array.isArray(destinations) ||
    Object.values(destinations).some((url) => typeof url !== 'string' || !/^https?:\/\//.test(url))
  ) {
    throw new InboxConfigError(
      'outbox.destinations',
      `must map names to queue URLs, e.g. { invoices: 'https://sqs.eu-west-1.amazonaws.com/123456789012/invoices' }; got ${described(destinations)}`,
    );
  }
  return { ...(destinations as Record<string, string>) };
}

/** INBOX_DESTINATIONS (the InboxConsumer construct sets it), or none. */
export function environmentDestinations(env: NodeJS.ProcessEnv): Readonly<Record<string, string>> {
  const json = env[INBOX_ENV.DESTINATIONS];
  if (!json) return {};
  let destinations: unknown;
  try {
    destinations = JSON.parse(json);
  } catch {
    throw new InboxConfigError('outbox.destinations', `${INBOX_ENV.DESTINATIONS} is not JSON: ${json.slice(0, 80)}`);
  }
  return checkDestinations(destinations);
}
