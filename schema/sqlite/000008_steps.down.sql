DROP TRIGGER IF EXISTS idemledger_steps_end;
DROP INDEX IF EXISTS idemledger_steps_created_at;
DROP TABLE IF EXISTS idempotency_steps;
