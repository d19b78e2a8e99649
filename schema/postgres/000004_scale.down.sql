ALTER TABLE idempotency_ledger RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_analyze_scale_factor
);
DROP INDEX IF EXISTS idemledger_ledger_created_at;
DROP INDEX IF EXISTS idemledger_ledger_in_flight;
