-- The payments worker's effect. Applied at deploy by InboxDatabase, after the inbox's own tables and
-- before the worker's role is granted INSERT on it. Once deployed, never edit this file: add 002_....sql.
CREATE TABLE public.payments (
  payment_id   text        PRIMARY KEY,
  amount_cents integer     NOT NULL,
  paid_at      timestamptz NOT NULL DEFAULT now()
);
