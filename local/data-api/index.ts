/**
 * The local Data API (package export `sqs-inbox/local/data-api`): a server that speaks the RDS Data API's
 * protocol over PostgreSQL, so `new RDSDataClient({ endpoint })` works unchanged, with its faults
 * (latency, auto-pause, lost answers, 5xx, slow statements) and its call counts.
 */
// First: before any module below makes an SDK client.
import '../quiet-sdk.js';

export { startDataApi, type DataApiServer, type StartDataApiOptions } from './server.js';
export { Faults, type FaultCall } from './faults.js';
export { Stats, type CountedOperation, type Operation } from './stats.js';
