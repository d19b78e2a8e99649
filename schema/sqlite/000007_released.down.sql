-- Back to migration 6: released records go (before migration 7, Release
-- deleted them), and so do the failure counts and the wider CHECK, by the
-- same copy as the migration up.
DELETE FROM idempotency_ledger WHERE state = 'released';
CREATE TABLE idemledger_ledger_6 (
    scope            TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    fingerprint      BLOB    NOT NULL CHECK (length(fingerprint) = 32),
    state            TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed')),
    lease_token      TEXT,
    lease_expires_at INTEGER,
    fence            INTEGER NOT NULL,
    status           INTEGER,
    headers          BLOB,
    body             BLOB,
    created_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    expires_at       INTEGER NOT NULL,
    committed_at     INTEGER,
    kind             TEXT,
    PRIMARY KEY (scope, key)
);
INSERT INTO idemledger_ledger_6 (
    scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
    status, headers, body, created_at, completed_at, expires_at, committed_at, kind
)
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind
FROM idempotency_ledger
ORDER BY rowid;
DROP TABLE idempotency_ledger;
ALTER TABLE idemledger_ledger_6 RENAME TO idempotency_ledger;
CREATE INDEX idemledger_ledger_expires_at ON idempotency_ledger (expires_at);
CREATE INDEX idemledger_ledger_in_flight
    ON idempotency_ledger (created_at, scope, key) WHERE state = 'in_flight';
CREATE INDEX idemledger_ledger_created_at ON idempotency_ledger (created_at);
