-- The app's own ledger, applied at deploy by InboxDatabase before any role is granted on it.
CREATE TABLE public.credits (
  id           bigserial   PRIMARY KEY,
  account_id   text        NOT NULL,
  amount_cents integer     NOT NULL
);
