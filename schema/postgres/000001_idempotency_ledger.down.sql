DROP INDEX IF EXISTS idemledger_ledger_expires_at;
DROP TABLE IF EXISTS idempotency_ledger;
