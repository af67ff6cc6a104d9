// The Aurora DSQL functions the package deploys, one bundle (node-postgres and the DSQL signer once, not once a
// function): `schema`, the schema and role-mapping custom resources (deployed with the one role that connects as
// admin); `purge` and `sweep`, the scheduled purge and outbox sweeper (each deployed with a role of its own, which
// holds dsql:DbConnect for its own database role only). The code is shared; what each may do is its IAM role's.
export { handler as schema } from '../dsql-schema/dsql-schema.js';
export { purge, sweep } from '../dsql-maintenance/dsql-maintenance.js';
