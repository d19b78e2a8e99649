-- The recorded steps of an operation (issue 36): one row per step a
-- handler finished under a key, so that a retry after a crash or a lost
-- lease returns the step's result instead of running it again. A step
-- belongs to the operation of its record's fingerprint; rows of an
-- operation that ended (completed, or its record gone or reused by
-- another payload) are deleted by Ledger.Purge. Times are Unix
-- milliseconds. Version 7 is another migration's; this one depends on
-- nothing of it. scope, key and name are binary strings, compared byte
-- for byte as in idempotency_ledger; the primary key (255 + 1024 + 255
-- bytes) stays under InnoDB's 3,072-byte index limit.
CREATE TABLE IF NOT EXISTS idempotency_steps (
    scope       VARBINARY(255)  NOT NULL,
    `key`       VARBINARY(1024) NOT NULL,
    -- The step's name, given by the handler.
    name        VARBINARY(255)  NOT NULL,
    -- The fingerprint of the record's request when the step was recorded.
    fingerprint VARBINARY(32)   NOT NULL CHECK (LENGTH(fingerprint) = 32),
    -- The fence of the lease that recorded it.
    fence       BIGINT NOT NULL,
    result      LONGBLOB NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, `key`, name),
    -- Purge walks the steps oldest first.
    INDEX idemledger_steps_created_at (created_at)
) ENGINE = InnoDB;
