-- The ledger at scale (issue 25): operators' reads through indexes instead
-- of the whole table, and autovacuum tuned for a table whose rows are all
-- deleted once a TTL later.
--
-- In-flight records, oldest claim first (Ledger.InFlight, idemledger inspect
-- -in-flight, and the in-flight figures of Stats). A partial index holds
-- only the rows in flight: a claim adds its entry, Complete or Release
-- takes it out of the index's visible set, so it stays small.
--
-- CREATE INDEX (not CONCURRENTLY: golang-migrate runs each migration in a
-- transaction) blocks writes to the table while it reads it once: about a
-- second per few million rows. Run the migration in a quiet moment on a
-- large table, or create the indexes CONCURRENTLY by hand first (the IF NOT
-- EXISTS below then skips them).
CREATE INDEX IF NOT EXISTS idemledger_ledger_in_flight
    ON idempotency_ledger (created_at, scope, key) WHERE state = 'in_flight';
-- The oldest and newest record for Stats without reading every row.
CREATE INDEX IF NOT EXISTS idemledger_ledger_created_at ON idempotency_ledger (created_at);
-- Every row is deleted by Purge a TTL after it is written, so dead rows
-- accumulate as fast as rows are inserted. The default scale factor (0.2)
-- lets a 50M-row table gather 10M dead rows before autovacuum starts, and
-- then vacuum them in one long run; 0.02 vacuums in smaller, more frequent
-- runs, so the space of purged rows is reused by new ones sooner and the
-- table stops growing at about its live size plus a day's churn.
-- insert_scale_factor does the same for the visibility map of new rows,
-- which keeps Stats' index-only counts index-only.
ALTER TABLE idempotency_ledger SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
