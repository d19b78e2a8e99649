-- What a stored outcome is (ledger.Outcome.Kind), as on the other engines;
-- NULL while in flight and for outcomes stored without a kind.
ALTER TABLE idempotency_ledger ADD COLUMN kind VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin;
