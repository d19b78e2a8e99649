-- Back to migration 4's index of in-flight rows, by claim time.
CREATE INDEX IF NOT EXISTS idemledger_ledger_in_flight
    ON idempotency_ledger (created_at, scope, key) WHERE state = 'in_flight';
DROP INDEX IF EXISTS idemledger_ledger_in_flight_key;
