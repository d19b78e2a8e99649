-- Released records and failure counts, as on the other engines (see
-- schema/sqlite/000007_released.up.sql): Release leaves a record
-- 'released', keeping its fence and its count of failed runs.
ALTER TABLE idempotency_ledger ADD COLUMN failures BIGINT NOT NULL DEFAULT 0;
-- The state's CHECK allows 'released'. Migration 1 wrote it on the column,
-- which MariaDB keeps with the column (a MODIFY without it drops it) and
-- MySQL turns into a table constraint with a generated name (dropped by
-- the statements after it, found by its text; DROP CHECK, which MySQL
-- has from 8.0.16, where DROP CONSTRAINT needs 8.0.19). One statement at a time
-- (see mysql/migrate.go); the variables live in the migration's session.
-- The MODIFY runs as a prepared statement only so that sqlc, which reads
-- these files to learn the table's columns, does not take it for a move
-- of the column to the end of the table (the server keeps its place).
SET @idemledger_modify_state = 'ALTER TABLE idempotency_ledger MODIFY state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL';
PREPARE idemledger_modify_state FROM @idemledger_modify_state;
EXECUTE idemledger_modify_state;
DEALLOCATE PREPARE idemledger_modify_state;
SET @idemledger_drop_check = (
    SELECT COALESCE(MAX(CONCAT('ALTER TABLE idempotency_ledger ',
                               IF(VERSION() LIKE '%MariaDB%', 'DROP CONSTRAINT', 'DROP CHECK'),
                               ' `', tc.CONSTRAINT_NAME, '`')), 'DO 0')
    FROM information_schema.TABLE_CONSTRAINTS AS tc
    JOIN information_schema.CHECK_CONSTRAINTS AS cc
      ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
    WHERE tc.TABLE_SCHEMA = DATABASE() AND tc.TABLE_NAME = 'idempotency_ledger'
      AND tc.CONSTRAINT_TYPE = 'CHECK' AND cc.CHECK_CLAUSE LIKE '%in\_flight%');
PREPARE idemledger_drop_check FROM @idemledger_drop_check;
EXECUTE idemledger_drop_check;
DEALLOCATE PREPARE idemledger_drop_check;
ALTER TABLE idempotency_ledger
    ADD CONSTRAINT idemledger_ledger_state CHECK (state IN ('in_flight', 'completed', 'released'));
