-- Back to migration 6: released records go (before migration 7, Release
-- deleted them), and so do the failure counts and the wider CHECK.
DELETE FROM idempotency_ledger WHERE state = 'released';
-- MySQL drops a CHECK with DROP CHECK (8.0.16 and later), MariaDB with
-- DROP CONSTRAINT (which MySQL has only from 8.0.19).
SET @idemledger_drop_check = IF(VERSION() LIKE '%MariaDB%',
    'ALTER TABLE idempotency_ledger DROP CONSTRAINT idemledger_ledger_state',
    'ALTER TABLE idempotency_ledger DROP CHECK idemledger_ledger_state');
PREPARE idemledger_drop_check FROM @idemledger_drop_check;
EXECUTE idemledger_drop_check;
DEALLOCATE PREPARE idemledger_drop_check;
ALTER TABLE idempotency_ledger MODIFY state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
    CHECK (state IN ('in_flight', 'completed'));
ALTER TABLE idempotency_ledger DROP COLUMN failures;
