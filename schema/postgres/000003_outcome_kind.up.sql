-- What a stored outcome is (issue 21): "value" for Mutate's JSON value,
-- "http" for an HTTP response, "http.not_stored" for an HTTP operation whose
-- answer was not kept, "grpc" for idemgrpc's and idemconnect's layout; the
-- writer names it (ledger.Outcome.Kind). NULL while in flight, for outcomes
-- stored without a kind, and for every record completed before this
-- migration: their readers still recognise them by the marks those records
-- carry. A nullable column without a default is added without rewriting the
-- table.
ALTER TABLE idempotency_ledger ADD COLUMN IF NOT EXISTS kind text;
