import { defineConfig } from 'vitest/config';

// jest (cdk init's jest.config.js) runs test/**/*.test.ts; vitest runs the *.spec.ts files beside them.
export default defineConfig({ test: { include: ['test/**/*.spec.ts'] } });
