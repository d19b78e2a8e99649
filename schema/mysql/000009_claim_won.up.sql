-- Nothing to change here: migration 9 gives PostgreSQL's claim write
-- (schema/postgres/000009_claim_won.up.sql) a named row type, so that its
-- Claim query calls it only when it writes. This engine's claim has no
-- such function. Every engine's migrations keep the same versions
-- (schema.Latest). A statement that does nothing, since some drivers
-- refuse an empty one.
SELECT 1;
