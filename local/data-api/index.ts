export { startDataApi, type DataApiServer, type StartDataApiOptions } from './server.js';
export { Faults, type AutoPauseFault, type DropResponseFault, type FaultCall, type LatencyFault, type ServerErrorFault, type SlowStatementFault } from './faults.js';
export { Stats, type CountedOperation, type Operation } from './stats.js';
export type { SecretCredentials } from './secrets.js';
