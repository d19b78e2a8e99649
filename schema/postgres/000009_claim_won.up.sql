-- The claim's write returns a row of a named type (issue 37).
--
-- Its OUT parameters made its result an anonymous record, which the Claim
-- query could only read in FROM, as a lateral join under a one-time
-- filter: every execution set up that join and the function's scan, a
-- replay too, where the filter skipped the call (about 15 us of server
-- time a statement, by pgbench). A named row type lets the query call the
-- function in a CASE expression instead, evaluated only when the claim
-- writes. Its columns keep their names and order, so a statement that
-- reads the function in FROM (the releases before this one) reads it as
-- before. Nothing else changes. The function is dropped and made again
-- (its result type changes): EXECUTE rights granted on it by hand must be
-- granted again.
CREATE TYPE idemledger_claim_won AS (
    won_fence bigint, won_lease_expires_at bigint, won_committed_at bigint, won_failures bigint);
DROP FUNCTION IF EXISTS idemledger_claim_write(text, text, bytea, text, bigint, bigint, bigint, boolean);
CREATE FUNCTION idemledger_claim_write(
    p_scope text, p_key text, p_fingerprint bytea, p_lease_token text,
    p_now bigint, p_lease_millis bigint, p_ttl_millis bigint, p_recover boolean)
RETURNS idemledger_claim_won
LANGUAGE plpgsql VOLATILE AS $idemledger$
DECLARE
    won idemledger_claim_won;
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
    INTO won.won_fence, won.won_lease_expires_at, won.won_committed_at, won.won_failures;
    -- All NULL when nothing was won: the row stands.
    RETURN won;
END
$idemledger$;

