import { Token } from 'aws-cdk-lib';
import { CONSUMER_NAME_PATTERN, CONSUMER_NAME_RULE } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/**
 * The runtime refuses other names at cold start; refusing them here moves that failure to synth. `subject` names the
 * consumer, e.g. `InboxConsumer App/Worker`.
 */
export function validateConsumerName(subject: string, name: string): void {
  if (Token.isUnresolved(name) || CONSUMER_NAME_PATTERN.test(name)) return;
  const suggestion = name
    .replace(/[^A-Za-z0-9._:-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  throw InboxConstructError.of(
    subject,
    [
      `\`consumerName\` ${name.length === 0 ? 'is empty' : `'${name}' is not a valid consumer name`}: ` +
        `it must be ${CONSUMER_NAME_RULE}. ` +
        `Fix: use e.g. '${suggestion.length > 0 ? suggestion : 'order-worker'}'.`,
    ],
    'line',
  );
}
