-- Back to migration 6: released records go (before migration 7, Release
-- deleted them), and so do the failure counts and the wider CHECK.
DELETE FROM idempotency_ledger WHERE state = 'released';
ALTER TABLE idempotency_ledger DROP CONSTRAINT idemledger_ledger_state;
ALTER TABLE idempotency_ledger MODIFY state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
    CHECK (state IN ('in_flight', 'completed'));
ALTER TABLE idempotency_ledger DROP COLUMN failures;
