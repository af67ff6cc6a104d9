-- One row per reservation, its id UNIQUE as any real schema has it: a redelivered insert that ran outside
-- the inbox's transaction fails on it instead of showing as a second row.
CREATE TABLE public.reservations (
  reservation_id text        PRIMARY KEY,
  sku            text        NOT NULL REFERENCES public.stock (sku),
  units          integer     NOT NULL,
  seq            bigserial,
  reserved_at    timestamptz NOT NULL DEFAULT now()
);
