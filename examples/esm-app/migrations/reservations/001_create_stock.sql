-- The reservations worker's stock. Applied by InboxDatabase after the inbox's own tables; one statement
-- per file, so that a test's runScenario({ setup }) can run each file as it is. Never edit once deployed.
CREATE TABLE public.stock (
  sku       text    PRIMARY KEY,
  available integer NOT NULL
);
