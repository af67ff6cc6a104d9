import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InboxConstructError } from './errors.js';

/**
 * `.ts` while the example stacks run from this repository's sources, `.js` once they run from the built
 * package: dist/ mirrors the source folders, so the same relative path names their workers in both.
 * Only the example stacks (demo/stacks/) use it: the package's own functions are prebuilt assets
 * (function-assets.ts). It leaves with the example stacks when they leave the `/cdk` entry.
 */
const EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * The path of a runtime module the constructs bundle or fingerprint, relative to lib/ and without its
 * extension (`'../lambda/functions/purge/cleanup'`). Throws, naming the fix, when the package lost the file.
 */
export function runtimeFile(relative: string, what: string): string {
  const file = fileURLToPath(new URL(`${relative}${EXTENSION}`, import.meta.url));
  if (!existsSync(file)) {
    throw InboxConstructError.of(
      'sqs-inbox',
      [`${what} ${file} does not exist. Fix: reinstall the sqs-inbox package (the CDK constructs bundle and fingerprint the runtime files by path).`],
      'line',
    );
  }
  return file;
}
