-- Releases before migration 5 claim in one statement of their own and do
-- not call the function.
DROP FUNCTION IF EXISTS idemledger_claim_write(text, text, bytea, text, bigint, bigint, bigint, boolean);
