// A worker as a user writes one on the PostgreSQL wire: its handler built at module load, its effect exported for a test.
import { inbox } from '../../../../lambda/inbox/index.js';
import { postgresFromEnvironment } from '../../../../lambda/inbox/transport/postgres/index.js';

export const apply = async () => {};
export const handler = inbox({ consumer: 'orders', database: postgresFromEnvironment(), apply });
