// A worker as a user writes one on Aurora DSQL: its handler built at module load, its effect exported for a test.
import { inbox } from '../../../../lambda/inbox/index.js';
import { dsqlFromEnvironment } from '../../../../lambda/inbox/transport/dsql/index.js';

export const apply = async () => {};
export const handler = inbox({ consumer: 'orders', database: dsqlFromEnvironment(), apply });
