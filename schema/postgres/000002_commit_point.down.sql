-- Drops the commit marks: records in flight that passed their commit point
-- become ordinary in-flight records again, which a retry may take over.
ALTER TABLE idempotency_ledger DROP COLUMN IF EXISTS committed_at;
