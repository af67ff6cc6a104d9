import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONSUMER_NAME_PATTERN, FIFO_ID_PATTERN, INBOX_ENV } from '../../lambda/inbox/contract.js';

/**
 * The names the runtime shares with the constructs, the testkit and the CLI live once, in lambda/inbox/contract.ts.
 * This finds a copy: an environment variable of the contract spelt out in code (as an object key or an `env.` read),
 * or the consumer-name or FIFO id rule written again as a regular expression.
 */
const CONTRACT = 'lambda/inbox/contract.ts';

function sources(path: string): string[] {
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => sources(join(path, name)));
}

/** The file's code lines, without its comments (which may name a variable in prose). */
function codeLines(text: string): string[] {
  return text.split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line));
}

function copiesOf(file: string, text: string): string[] {
  const names = Object.values(INBOX_ENV).join('|');
  const spelt = new RegExp(`(?:^\\s*|[{,]\\s*)(?:${names})\\s*:|\\benv\\.(?:${names})\\b|\\[\\s*['"](?:${names})['"]\\s*\\]`);
  const rules = [CONSUMER_NAME_PATTERN.source, FIFO_ID_PATTERN.source];
  return codeLines(text).flatMap((line) => [
    ...(spelt.test(line) ? [`${file}: ${line.trim()}`] : []),
    ...rules.filter((rule) => line.includes(rule)).map(() => `${file}: ${line.trim()}`),
  ]);
}

describe('the shared contract', () => {
  it('is the only place the runtime, the constructs, the testkit and the CLI spell its names and rules', () => {
    const files = ['lambda', 'lib', 'local', 'bin'].flatMap(sources).filter((file) => file !== CONTRACT);
    expect(files.flatMap((file) => copiesOf(file, readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('finds a copied variable name, an env read and a copied rule', () => {
    expect(copiesOf('lib/x.ts', '        INBOX_CONSUMER: props.consumerName,')).toHaveLength(1);
    expect(copiesOf('lib/x.ts', '  ...(a ? { INBOX_DESTINATIONS: json } : {}),')).toHaveLength(1);
    expect(copiesOf('lambda/x.ts', '  const arn = env.INBOX_RESOURCE_ARN;')).toHaveLength(1);
    expect(copiesOf('lambda/x.ts', "  const service = process.env['POWERTOOLS_SERVICE_NAME'];")).toHaveLength(1);
    expect(copiesOf('local/x.ts', `const ID = /${FIFO_ID_PATTERN.source}/;`)).toHaveLength(1);
    expect(copiesOf('lib/x.ts', `const NAME = /${CONSUMER_NAME_PATTERN.source}/;`)).toHaveLength(1);
    expect(copiesOf('lib/x.ts', ' * It reaches the handler as `INBOX_CONSUMER`.')).toEqual([]);
    expect(copiesOf('lib/x.ts', '        [INBOX_ENV.CONSUMER]: props.consumerName,')).toEqual([]);
  });

  it('accepts the consumer names and FIFO ids AWS and the runtime accept, and refuses the rest', () => {
    expect(['order-worker', 'a', 'billing:v2.eu_west-1', 'x'.repeat(128)].filter((name) => !CONSUMER_NAME_PATTERN.test(name))).toEqual([]);
    expect(['', '-leading', 'has space', 'x'.repeat(129), 'ünïcode'].filter((name) => CONSUMER_NAME_PATTERN.test(name))).toEqual([]);
    expect(['order-1', '!#$%&()*+,-./:;<=>?@[\\]^_`{|}~', 'x'.repeat(128)].filter((id) => !FIFO_ID_PATTERN.test(id))).toEqual([]);
    expect(['', 'has space', 'x'.repeat(129), 'é'].filter((id) => FIFO_ID_PATTERN.test(id))).toEqual([]);
  });
});
