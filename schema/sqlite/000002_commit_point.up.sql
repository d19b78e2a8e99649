-- The durable commit point (issue 19): when a lease holder marks that its
-- irreversible effect is done (Ledger.Commit), the mark is written here, in
-- Unix milliseconds. A record in flight with a mark is never handed to a
-- takeover as if nothing had happened: once its lease runs out, a retry
-- learns that the operation passed its commit point without an outcome
-- (ledger.ErrCommitted), unless it asked to recover. NULL for records that
-- never passed a commit point, and for every record written before this
-- migration, which therefore read as before. Adding a nullable column
-- without a default rewrites nothing in SQLite: it only edits the schema.
ALTER TABLE idempotency_ledger ADD COLUMN committed_at INTEGER;
