DROP TABLE IF EXISTS idempotency_ledger;
