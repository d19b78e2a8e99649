-- The recorded steps of an operation (issue 36): one row per step a
-- handler finished under a key, so that a retry after a crash or a lost
-- lease returns the step's result instead of running it again. A step
-- belongs to the operation of its record's fingerprint; rows of an
-- operation that ended (completed, or its record gone or reused by
-- another payload) are deleted by Ledger.Purge. Times are Unix
-- milliseconds. Version 7 is another migration's; this one depends on
-- nothing of it.
CREATE TABLE IF NOT EXISTS idempotency_steps (
    scope       TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    -- The step's name, given by the handler.
    name        TEXT    NOT NULL,
    -- The fingerprint of the record's request when the step was recorded.
    fingerprint BLOB    NOT NULL CHECK (length(fingerprint) = 32),
    -- The fence of the lease that recorded it.
    fence       INTEGER NOT NULL,
    result      BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key, name)
);

-- Purge walks the steps oldest first.
CREATE INDEX IF NOT EXISTS idemledger_steps_created_at ON idempotency_steps (created_at);

-- A claim that takes a record over as a new operation (the record had
-- expired, or the claim brings another fingerprint: the cases in which
-- ClaimTakeover starts the count of failures again) ends the steps of the
-- operations before, in the claim's own statement: a new operation must
-- never resume an old one's steps, nor its retries after a crash. Only a
-- claim's takeover sets fence, so the trigger fires for nothing else; a
-- takeover of the same operation (a lease that ran out, a release) keeps
-- them.
CREATE TRIGGER IF NOT EXISTS idemledger_steps_end
AFTER UPDATE OF fence ON idempotency_ledger
FOR EACH ROW
WHEN OLD.fingerprint <> NEW.fingerprint OR (
    OLD.expires_at <= NEW.created_at
    AND (OLD.state <> 'in_flight' OR OLD.lease_expires_at <= NEW.created_at))
BEGIN
    DELETE FROM idempotency_steps WHERE scope = NEW.scope AND key = NEW.key;
END;
