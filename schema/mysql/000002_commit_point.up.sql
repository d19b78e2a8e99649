-- The durable commit point (issue 19), as on the other engines: the time a
-- lease holder marked that its irreversible effect is done, in Unix
-- milliseconds; NULL for records that never passed one.
ALTER TABLE idempotency_ledger ADD COLUMN committed_at BIGINT;
