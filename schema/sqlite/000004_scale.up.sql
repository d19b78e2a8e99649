-- The ledger at scale (issue 25): operators' reads through indexes instead
-- of the whole table.
--
-- In-flight records, oldest claim first (Ledger.InFlight, idemledger inspect
-- -in-flight, and the in-flight figures of Stats). A partial index holds
-- only the rows in flight, a handful beside millions of completed ones: a
-- claim adds its entry and Complete or Release removes it, so it stays
-- small and costs each write one small B-tree change.
CREATE INDEX IF NOT EXISTS idemledger_ledger_in_flight
    ON idempotency_ledger (created_at, scope, key) WHERE state = 'in_flight';
-- The oldest and newest record for Stats without reading every row.
-- created_at grows with time, so new entries go to the right edge of the
-- index, a page that stays in the cache.
CREATE INDEX IF NOT EXISTS idemledger_ledger_created_at ON idempotency_ledger (created_at);
