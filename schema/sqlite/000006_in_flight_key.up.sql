-- Nothing to change here: migration 6 rekeys PostgreSQL's partial index of
-- in-flight rows (schema/postgres/000006_in_flight_key.up.sql), whose old
-- entries stay until VACUUM. This engine removes an index entry when its
-- row changes, and reads those statements through the primary key. Every
-- engine's migrations keep the same versions (schema.Latest). A statement
-- that does nothing, since some drivers refuse an empty one.
SELECT 1;
