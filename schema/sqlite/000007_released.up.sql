-- Released records and failure counts (issue 34).
--
-- Release no longer deletes a record: it leaves it 'released', a state any
-- claim may take over at once whatever its fingerprint, so that a retry
-- runs afresh as before, but the record keeps its fence. The next claim
-- continues the fence where the released one stopped, and business code
-- that refuses writes carrying a fence smaller than one it has seen can
-- still tell every holder of the key apart. A released record is purged
-- like any other once it has expired, and Release moves its expiry to no
-- earlier than a lease after the last lease on it ended, so that no holder
-- whose lease may still be running sees the fence start again at 1.
--
-- failures counts the runs of the operation that ended in Release: a
-- released record keeps it, a claim with the same fingerprint continues
-- it (ledger.Claim.Failures), any other claim starts again at 0. Consumers
-- send a message that keeps failing to the dead-letter path with it.
--
-- SQLite cannot change a CHECK constraint in place: the table is built
-- again with the new one and every row copied, in rowid order so that the
-- rowids keep following insertion (Stats estimates from them). It takes
-- the time of one read and one write of the table (seconds per few
-- million records), holding the write lock throughout.
CREATE TABLE idemledger_ledger_7 (
    scope            TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    fingerprint      BLOB    NOT NULL CHECK (length(fingerprint) = 32),
    state            TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed', 'released')),
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
    failures         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, key)
);
INSERT INTO idemledger_ledger_7 (
    scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
    status, headers, body, created_at, completed_at, expires_at, committed_at, kind
)
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind
FROM idempotency_ledger
ORDER BY rowid;
DROP TABLE idempotency_ledger;
ALTER TABLE idemledger_ledger_7 RENAME TO idempotency_ledger;
CREATE INDEX idemledger_ledger_expires_at ON idempotency_ledger (expires_at);
CREATE INDEX idemledger_ledger_in_flight
    ON idempotency_ledger (created_at, scope, key) WHERE state = 'in_flight';
CREATE INDEX idemledger_ledger_created_at ON idempotency_ledger (created_at);
-- The released records, for Stats to count without reading the table.
CREATE INDEX idemledger_ledger_released ON idempotency_ledger (expires_at) WHERE state = 'released';
