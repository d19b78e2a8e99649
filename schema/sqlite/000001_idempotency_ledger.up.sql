-- The idempotency ledger: one row per (scope, key). Times are Unix
-- milliseconds, UTC. See DESIGN.md, "Data model".
CREATE TABLE IF NOT EXISTS idempotency_ledger (
    scope            TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    -- SHA-256 of the request payload.
    fingerprint      BLOB    NOT NULL CHECK (length(fingerprint) = 32),
    state            TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed')),
    -- Holder of an in-flight claim and until when it holds; NULL once completed.
    lease_token      TEXT,
    lease_expires_at INTEGER,
    -- Grows by one at every takeover of the row.
    fence            INTEGER NOT NULL,
    -- The stored outcome; NULL while in flight.
    status           INTEGER,
    headers          BLOB,
    body             BLOB,
    created_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    -- After it the row may be taken over by anyone and purged (an in-flight
    -- row only once its lease has run out too).
    expires_at       INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE INDEX IF NOT EXISTS idemledger_ledger_expires_at ON idempotency_ledger (expires_at);
