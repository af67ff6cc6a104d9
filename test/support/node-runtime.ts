/**
 * What the Node.js-version runs (`npm run test:node22`, scripts/on-node.mjs) hold: the suites whose outcome
 * can change with the Node.js version the Lambda runtime gives the code, each with what of Node.js it
 * reaches. The rest of the suite runs once, on the machine's Node, in `npm test`: it tests the inbox's own
 * logic, which no Node.js version changes. The run's setup prints this list.
 */
export const ON_EVERY_NODE: Readonly<Record<string, string>> = {
  'test/package/outside-in.test.ts': 'the packed tarball installed, type-checked, synthesized and its bundled handler run, as users get it',
  'test/package/outside-in-apps.test.ts': 'the same, in the ES module and the CommonJS CDK apps',
  'test/package/outside-in-cdk-init.test.ts': 'the same, in a pristine `cdk init` app with its own jest and vitest',
  'test/package/outside-in-orm.test.ts': "the same, in the ORM recipes' app",
  'test/package/function-assets.test.ts': "the prebuilt function bundles, loaded as Lambda loads index.mjs, in a process of the run's Node",
  'test/package/commonjs.test.ts': "the CommonJS copy, through require() and the package's export conditions",
  'test/inbox/cold-start.test.ts': 'a handler module loaded and checked at its first invocation: module loading, the environment',
  'test/inbox/consumer.test.ts': "the consumer end to end on the Data API: the AWS SDK's client, its retries and abort signals",
  'test/inbox/data-api.test.ts': "the Data API session: the AWS SDK's requests, answers, errors and their classes",
  'test/inbox/idle-sockets.test.ts': "the SDK's HTTPS keep-alive sockets: node:https and its agent",
  'test/inbox/deadline.test.ts': 'the deadline margin: timers, and the calls AbortSignal.timeout ends',
  'test/inbox/faults.test.ts': 'lost answers, resets and timeouts: how node:http and the SDK surface each',
  'test/inbox/payload-text.test.ts': "a record's bytes as text and back (Buffer, the UTF-8 decoders) and its payload hash (node:crypto)",
  'test/inbox/streams/payloads.test.ts': "stream payloads as bytes: base64, bytes that are not UTF-8 (Kafka's TextDecoder), the size limits",
  'test/inbox/adversarial/records.test.ts': 'hostile records from every source, end to end (a few runs)',
  'test/inbox/producer.test.ts': 'the producer: the SQS client, its requests and errors',
  'test/inbox/outbox.test.ts': "the outbox relay: the SQS client's batches and the sweeper",
  'test/inbox/emf-metrics.test.ts': "the metrics as Lambda's log reads them: stdout",
  'test/inbox/logger.test.ts': "the logger's lines as Lambda's log reads them: stdout",
  'test/inbox/transport/postgres.test.ts': 'the wire session: node-postgres over node:net and node:tls',
  'test/inbox/transport/dsql.test.ts': "the dsql() target: its IAM token (the SDK's DSQL signer) and its pools",
  'test/inbox/adversarial/managed-instances.test.ts': "concurrent invocations in one process: each one's request id in node:async_hooks' AsyncLocalStorage",
};

/**
 * The suites a Node.js-version run holds only on the Node.js majors named: the tarball test installs, bundles
 * and synthesizes for minutes, and the constructs' default runtime (nodejs24.x) is where a user's app runs it.
 * `npm test`'s run on the machine's Node leaves them out as well (vitest.config.ts, scripts/test.mjs).
 */
export const ONLY_ON_NODE: Readonly<Record<string, readonly number[]>> = {
  'test/package/outside-in.test.ts': [24],
  'test/package/outside-in-apps.test.ts': [24],
  'test/package/outside-in-cdk-init.test.ts': [24],
  'test/package/outside-in-orm.test.ts': [24],
};

/**
 * What a run on Node.js `major` leaves to the others in `npm test` (scripts/test.mjs, which sets
 * INBOX_TEST_MATRIX for vitest.config.ts): the suites {@link ONLY_ON_NODE} holds for other majors only.
 */
export function onOtherNodesOnly(major: number): string[] {
  return Object.entries(ONLY_ON_NODE)
    .filter(([, majors]) => !majors.includes(major))
    .map(([file]) => file);
}

/** The suites of {@link ON_EVERY_NODE} this process's Node.js major runs. */
export function suitesOfThisNode(): string[] {
  const major = Number(process.versions.node.split('.')[0]);
  return Object.keys(ON_EVERY_NODE).filter((file) => ONLY_ON_NODE[file]?.includes(major) ?? true);
}

/** The list as lines: what a Node.js-version run prints before it starts. */
export function describeNodeRun(): string {
  return [
    `Node.js ${process.versions.node}: ${suitesOfThisNode().length} suites whose outcome can change with the Node.js version:`,
    ...suitesOfThisNode().map((file) => `  ${file}\n      ${ON_EVERY_NODE[file]}`),
  ].join('\n');
}
