// Alarms and the dashboard, the cdk-monitoring-constructs way: the metric factory makes metrics only
// (metric-factory.ts), each alarm family has its file, the dashboard's widgets theirs, InboxAlarms wires them.
export { InboxAlarms } from './inbox-alarms.js';
export type { InboxAlarmsProps } from './inbox-alarms.js';
