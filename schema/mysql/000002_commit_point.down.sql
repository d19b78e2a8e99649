ALTER TABLE idempotency_ledger DROP COLUMN committed_at;
