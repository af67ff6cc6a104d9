import { describeLeftOut } from './data-api-only.js';

/** The wire project's setup: says, before anything runs, what of test/inbox it leaves to the Data API and why. */
export default function setup() {
  console.log(describeLeftOut());
}
