import { defineConfig } from 'vitest/config';
export default defineConfig({
  resolve: {
    alias: [
      { find: /^sqs-inbox\/local$/, replacement: '/work/main/local/index.ts' },
      { find: /^sqs-inbox$/, replacement: '/work/main/lambda/inbox/index.ts' },
    ],
  },
  test: { root: '/work/main/examples/esm-app', include: ['test/**/*.test.ts'], env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
});
