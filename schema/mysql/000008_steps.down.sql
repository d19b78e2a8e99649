DROP TABLE IF EXISTS idempotency_steps;
