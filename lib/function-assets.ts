import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { InboxConstructError } from './errors.js';

/**
 * The functions this package deploys for itself, by asset name, with the source each is built from. The package's
 * build (scripts/build.mjs, which lists the same names) bundles each into `dist/lib/assets/<name>/index.mjs`, so a
 * CDK app deploys them as ready assets, the way aws-cdk-lib deploys its own custom resources: the app bundles only
 * its own handlers, and needs no esbuild for these.
 */
export const PACKAGE_FUNCTIONS = {
  /** The schema migration and database-role custom resources. */
  migration: '../lambda/functions/migration/migrate.ts',
  /** The scheduled purge. */
  purge: '../lambda/functions/purge/cleanup.ts',
  /** The scheduled outbox sweeper. */
  'outbox-sweeper': '../lambda/functions/outbox-sweeper/outbox-sweeper.ts',
  /**
   * The Aurora DSQL functions, one bundle (node-postgres and the signer once): handlers `schema` (the schema and
   * role-mapping custom resources, the one function that connects as DSQL's admin), `purge` and `sweep`.
   */
  dsql: '../lambda/functions/dsql/index.ts',
} as const;

/** The name of one of the package's own functions. */
export type PackageFunction = keyof typeof PACKAGE_FUNCTIONS;

/** How a package function reaches Lambda: its prebuilt asset, or (in this repository) its source to bundle. */
export interface FunctionCode {
  /**
   * InboxFunction's `code` (the ready folder holding `index.mjs` and its source map), or, in this repository's
   * sources, its `entry` (the TypeScript entry, bundled at synth like a user's handler).
   */
  readonly source: { readonly code: lambda.Code } | { readonly entry: string };
  /** True for the prebuilt asset. */
  readonly prebuilt: boolean;
  /** The file whose bytes say when the function's code changed: the bundle, or the entry. */
  readonly file: string;
}

/**
 * The code of one of the package's functions. The installed package has its prebuilt asset; this repository's
 * sources (tests, the example app) have none and bundle the entry instead, or skip bundling as unit tests do.
 */
export function functionCode(name: PackageFunction): FunctionCode {
  const folder = fileURLToPath(new URL(`./assets/${name}/`, import.meta.url));
  const bundle = `${folder}index.mjs`;
  if (existsSync(bundle)) return { source: { code: lambda.Code.fromAsset(folder) }, prebuilt: true, file: bundle };
  const entry = fileURLToPath(new URL(PACKAGE_FUNCTIONS[name], import.meta.url));
  if (existsSync(entry)) return { source: { entry }, prebuilt: false, file: entry };
  throw new InboxConstructError('sqs-inbox', [
    {
      problem: `the ${name} function's prebuilt code ${bundle} does not exist.`,
      fix: 'reinstall the sqs-inbox package (its build puts every function it deploys in dist/lib/assets/).',
    },
  ]);
}
