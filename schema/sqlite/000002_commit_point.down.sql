-- Drops the commit marks: records in flight that passed their commit point
-- become ordinary in-flight records again, which a retry may take over.
-- ALTER TABLE ... DROP COLUMN needs SQLite 3.35 or later (modernc.org/sqlite
-- bundles a newer one).
ALTER TABLE idempotency_ledger DROP COLUMN committed_at;
