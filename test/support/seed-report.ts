import { beforeEach } from 'vitest';
import { REPRODUCE } from './seed.js';

// Every project's setup file: a failed test says which seed its random choices came from, so that the
// failure reproduces (test/support/seed.ts).
beforeEach((context) => {
  context.onTestFailed(() => {
    console.error(`"${context.task.name}" failed with the run's seed: ${REPRODUCE} npx vitest run ... makes the same random choices again.`);
  });
});
