import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The example app's own tests (examples/esm-app/test), run against this repository's sources instead of
// the packed package: `sqs-inbox`, `sqs-inbox/outbox`, `sqs-inbox/operations` and `sqs-inbox/local`
// resolve here. The outside-in
// test runs the same files against the tarball.
const source = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export default defineConfig({
  root: source('examples/esm-app'),
  resolve: {
    alias: [
      { find: /^sqs-inbox\/local$/, replacement: source('local/index.ts') },
      { find: /^sqs-inbox\/outbox$/, replacement: source('lambda/inbox/outbox/index.ts') },
      { find: /^sqs-inbox\/operations$/, replacement: source('lambda/inbox/operations.ts') },
      { find: /^sqs-inbox$/, replacement: source('lambda/inbox/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
