-- The idempotency ledger on MySQL 8.0 and MariaDB 10.6+: one row per
-- (scope, key). Times are Unix milliseconds, UTC, as on the other engines.
-- scope, key and lease_token are binary strings: they compare byte for
-- byte, trailing spaces included, whatever the server's collations (MySQL's
-- and MariaDB's default ones ignore case, MariaDB's PAD SPACE ones trailing
-- spaces, so "Key" and "key " would share a record). Their lengths keep the
-- primary key (255 + 1024 bytes) under InnoDB's 3,072-byte index limit.
-- `key` is a reserved word here: every statement quotes it.
CREATE TABLE IF NOT EXISTS idempotency_ledger (
    scope            VARBINARY(255)  NOT NULL,
    `key`            VARBINARY(1024) NOT NULL,
    -- SHA-256 of the request payload.
    fingerprint      VARBINARY(32)   NOT NULL CHECK (LENGTH(fingerprint) = 32),
    state            VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                     CHECK (state IN ('in_flight', 'completed')),
    -- Holder of an in-flight claim and until when it holds; NULL once completed.
    lease_token      VARBINARY(64),
    lease_expires_at BIGINT,
    -- Grows by one at every takeover of the row.
    fence            BIGINT NOT NULL,
    -- The stored outcome; NULL while in flight.
    status           BIGINT,
    headers          LONGBLOB,
    body             LONGBLOB,
    created_at       BIGINT NOT NULL,
    completed_at     BIGINT,
    -- After it the row may be taken over by anyone and purged (an in-flight
    -- row only once its lease has run out too).
    expires_at       BIGINT NOT NULL,
    PRIMARY KEY (scope, `key`),
    INDEX idemledger_ledger_expires_at (expires_at)
) ENGINE = InnoDB;
