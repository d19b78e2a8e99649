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
-- A NOT NULL column with a constant default is added without rewriting
-- the table (PostgreSQL 11 and later). The state's CHECK is replaced NOT
-- VALID: every existing row holds one of the two older values, which the
-- new CHECK allows, so there is nothing to scan the table for.
ALTER TABLE idempotency_ledger ADD COLUMN IF NOT EXISTS failures bigint NOT NULL DEFAULT 0;
ALTER TABLE idempotency_ledger DROP CONSTRAINT IF EXISTS idempotency_ledger_state_check;
ALTER TABLE idempotency_ledger ADD CONSTRAINT idemledger_ledger_state
    CHECK (state IN ('in_flight', 'completed', 'released')) NOT VALID;
-- The released records, for Stats to count without reading the table.
-- A release changes the state, which the partial indexes name, so its
-- update was never a HOT one: the entry here costs little more. CREATE
-- INDEX blocks writes while it reads the table once: on a large table,
-- create it CONCURRENTLY by hand first, under the same name and definition,
-- and the IF NOT EXISTS skips it.
CREATE INDEX IF NOT EXISTS idemledger_ledger_released
    ON idempotency_ledger (expires_at) WHERE state = 'released';

-- The claim's write (migration 5) takes a released record over too, for
-- any fingerprint, and returns the record's count of failed runs. Its
-- result changes, so it is dropped and made again: EXECUTE rights granted
-- on it by hand must be granted again.
DROP FUNCTION IF EXISTS idemledger_claim_write(text, text, bytea, text, bigint, bigint, bigint, boolean);
CREATE FUNCTION idemledger_claim_write(
    p_scope text, p_key text, p_fingerprint bytea, p_lease_token text,
    p_now bigint, p_lease_millis bigint, p_ttl_millis bigint, p_recover boolean,
    OUT won_fence bigint, OUT won_lease_expires_at bigint, OUT won_committed_at bigint,
    OUT won_failures bigint)
LANGUAGE plpgsql VOLATILE AS $idemledger$
BEGIN
    -- It inserts a new in-flight row, or takes over the existing one when
    -- it has expired or was released (anyone may) or when it is in flight
    -- with a lease that ran out and the same fingerprint. ON CONFLICT
    -- decides against the latest committed row, waiting for an
    -- uncommitted one.
    INSERT INTO idempotency_ledger AS l (
        scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
        status, headers, body, created_at, completed_at, expires_at, failures
    )
    VALUES (p_scope, p_key, p_fingerprint, 'in_flight', p_lease_token,
            p_now + p_lease_millis, 1, NULL, NULL, NULL, p_now, NULL, p_now + p_ttl_millis, 0)
    ON CONFLICT (scope, key) DO UPDATE SET
        fingerprint      = excluded.fingerprint,
        state            = 'in_flight',
        lease_token      = excluded.lease_token,
        lease_expires_at = excluded.lease_expires_at,
        fence            = l.fence + 1,
        status           = NULL,
        headers          = NULL,
        body             = NULL,
        kind             = NULL,
        created_at       = excluded.created_at,
        completed_at     = NULL,
        expires_at       = excluded.expires_at,
        -- An expired record starts afresh; a recovery (p_recover) of one
        -- that passed its commit point keeps the mark, since the effect it
        -- stands for happened whatever the new holder does. A released
        -- record never carries a mark.
        committed_at     = CASE
            WHEN l.expires_at <= excluded.created_at
                 AND (l.state <> 'in_flight' OR l.lease_expires_at <= excluded.created_at)
            THEN NULL ELSE l.committed_at END,
        -- The failed runs of the same operation count on; an expired
        -- record, or another fingerprint, is another operation.
        failures         = CASE
            WHEN l.expires_at <= excluded.created_at
                 AND (l.state <> 'in_flight' OR l.lease_expires_at <= excluded.created_at)
            THEN 0
            WHEN l.fingerprint = excluded.fingerprint THEN l.failures
            ELSE 0 END
    WHERE l.state = 'released' OR (
            l.expires_at <= excluded.created_at
            AND (l.state = 'completed' OR l.lease_expires_at <= excluded.created_at)
        ) OR (
            l.state = 'in_flight'
            AND l.lease_expires_at <= excluded.created_at
            AND l.fingerprint = excluded.fingerprint
            AND (l.committed_at IS NULL OR p_recover)
        )
    RETURNING l.fence, l.lease_expires_at, l.committed_at, l.failures
    INTO won_fence, won_lease_expires_at, won_committed_at, won_failures;
END
$idemledger$;
