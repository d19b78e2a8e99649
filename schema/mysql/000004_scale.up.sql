-- The ledger at scale (issue 25), as on the other engines: in-flight
-- records oldest claim first (Ledger.InFlight, inspect -in-flight) and the
-- two ends of created_at through indexes. MySQL has no partial index: the
-- in-flight index leads with the state, so that its in-flight part is one
-- small range of it.
CREATE INDEX idemledger_ledger_in_flight ON idempotency_ledger (state, created_at);
CREATE INDEX idemledger_ledger_created_at ON idempotency_ledger (created_at);
