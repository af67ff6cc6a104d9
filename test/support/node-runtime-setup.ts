import { describeNodeRun } from './node-runtime.js';

/** A Node.js-version run's setup: says, before anything runs, which suites it holds and why. */
export default function setup() {
  console.log(describeNodeRun());
}
