-- Nothing to change here: migration 5 adds a function to the PostgreSQL
-- schema (schema/postgres/000005_claim_write.up.sql), and every engine's
-- migrations keep the same versions (schema.Latest). A statement that does
-- nothing, since some drivers refuse an empty one.
SELECT 1;
