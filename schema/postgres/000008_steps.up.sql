-- The recorded steps of an operation (issue 36): one row per step a
-- handler finished under a key, so that a retry after a crash or a lost
-- lease returns the step's result instead of running it again. A step
-- belongs to the operation of its record's fingerprint; rows of an
-- operation that ended (completed, or its record gone or reused by
-- another payload) are deleted by Ledger.Purge. Times are Unix
-- milliseconds. Version 7 is another migration's; this one depends on
-- nothing of it. Keys compare byte by byte, as in idempotency_ledger.
CREATE TABLE IF NOT EXISTS idempotency_steps (
    scope       text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    -- The step's name, given by the handler.
    name        text COLLATE "C" NOT NULL,
    -- The fingerprint of the record's request when the step was recorded.
    fingerprint bytea  NOT NULL CHECK (octet_length(fingerprint) = 32),
    -- The fence of the lease that recorded it.
    fence       bigint NOT NULL,
    result      bytea  NOT NULL,
    created_at  bigint NOT NULL,
    CONSTRAINT idemledger_steps_pkey PRIMARY KEY (scope, key, name)
);

-- Purge walks the steps oldest first.
CREATE INDEX IF NOT EXISTS idemledger_steps_created_at ON idempotency_steps (created_at);
