-- Drops the outcome kinds. Releases before migration 3 recognise an
-- idemgrpc record and an HTTP answer that was not kept by a mark in their
-- headers, so those records get their marks back first (a not-kept answer's
-- reason moves from the body into its mark).
UPDATE idempotency_ledger
SET headers = CAST('{"Idemgrpc-Outcome":["1"]}' AS BLOB)
WHERE kind = 'grpc';
UPDATE idempotency_ledger
SET headers = CAST('{"Idemhttp-Not-Stored":["' || CAST(body AS TEXT) || '"]}' AS BLOB),
    body = NULL
WHERE kind = 'http.not_stored';
ALTER TABLE idempotency_ledger DROP COLUMN kind;
