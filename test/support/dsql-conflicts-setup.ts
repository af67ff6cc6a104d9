import { describeConflictRun } from './dsql-conflicts.js';

/** The dsql-conflicts project's setup: says, before anything runs, which suites it holds and what it leaves out. */
export default function setup() {
  console.log(describeConflictRun());
}
