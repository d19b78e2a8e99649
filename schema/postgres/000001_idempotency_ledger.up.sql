-- The idempotency ledger: one row per (scope, key). Times are Unix
-- milliseconds, UTC, as on SQLite. See DESIGN.md, "Data model".
-- scope and key compare byte by byte (COLLATE "C"): they are identifiers,
-- not prose, and the primary key index is cheaper without a locale.
CREATE TABLE IF NOT EXISTS idempotency_ledger (
    scope            text COLLATE "C" NOT NULL,
    key              text COLLATE "C" NOT NULL,
    -- SHA-256 of the request payload.
    fingerprint      bytea  NOT NULL CHECK (octet_length(fingerprint) = 32),
    state            text   NOT NULL CHECK (state IN ('in_flight', 'completed')),
    -- Holder of an in-flight claim and until when it holds; NULL once completed.
    lease_token      text,
    lease_expires_at bigint,
    -- Grows by one at every takeover of the row.
    fence            bigint NOT NULL,
    -- The stored outcome; NULL while in flight. headers is the JSON object
    -- of http.Header, kept as bytes so that it reads back exactly as written.
    status           bigint,
    headers          bytea,
    body             bytea,
    created_at       bigint NOT NULL,
    completed_at     bigint,
    -- After it the row may be taken over by anyone and purged (an in-flight
    -- row only once its lease has run out too).
    expires_at       bigint NOT NULL,
    CONSTRAINT idemledger_ledger_pkey PRIMARY KEY (scope, key)
);

CREATE INDEX IF NOT EXISTS idemledger_ledger_expires_at ON idempotency_ledger (expires_at);
