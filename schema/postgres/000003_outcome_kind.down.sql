-- Drops the outcome kinds. Releases before migration 3 recognise an
-- idemgrpc record and an HTTP answer that was not kept by a mark in their
-- headers, so those records get their marks back first (a not-kept answer's
-- reason moves from the body into its mark).
UPDATE idempotency_ledger
SET headers = convert_to('{"Idemgrpc-Outcome":["1"]}', 'UTF8')
WHERE kind = 'grpc';
UPDATE idempotency_ledger
SET headers = convert_to('{"Idemhttp-Not-Stored":["' || convert_from(body, 'UTF8') || '"]}', 'UTF8'),
    body = NULL
WHERE kind = 'http.not_stored';
ALTER TABLE idempotency_ledger DROP COLUMN IF EXISTS kind;
