-- As on the other engines: the records that releases before migration 3
-- told by a header mark get their marks back before the kinds go.
UPDATE idempotency_ledger
SET headers = CAST('{"Idemgrpc-Outcome":["1"]}' AS BINARY)
WHERE kind = 'grpc';
UPDATE idempotency_ledger
SET headers = CONCAT('{"Idemhttp-Not-Stored":["', body, '"]}'),
    body = NULL
WHERE kind = 'http.not_stored';
ALTER TABLE idempotency_ledger DROP COLUMN kind;
