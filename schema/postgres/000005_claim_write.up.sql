-- The write half of Claim (issue 22): the conditional upsert that takes a
-- key, in a function that the Claim query (queries/postgres/ledger.sql)
-- calls only when the row it read does not stand. A statement that holds
-- an INSERT, even one whose SELECT yields no row, makes the server set the
-- write up at every execution (the table and its indexes opened for
-- writing, the conflict arbiter, the update's projection): that was about
-- a third of a replay's server time. Behind a function call that the
-- query's plan skips, a replay reads the row and writes nothing, at the
-- cost of a plain read; a claim that writes runs the same upsert as before.
--
-- PL/pgSQL, not SQL: it keeps the upsert's plan for the session, where a
-- SQL function (before PostgreSQL 18) plans its body at every call.
-- Nothing in it is schema-qualified, like the Claim query around it: the
-- function and the table it writes are found on the caller's search_path,
-- where the query found the row it read (PostgreSQL replans when the
-- search_path changes). It holds no session state, so it works behind a
-- pooler in transaction mode.
--
-- The arguments: the key, the request's fingerprint, the new lease's token,
-- the clock by which the query judged the row (Unix milliseconds), the
-- lease and the record's time to live (milliseconds), and whether a record
-- past its commit point may be taken over (ledger.Request.Recover). It
-- returns the won lease, or NULLs when the row stood after all (committed
-- by another transaction after the query's read).
CREATE OR REPLACE FUNCTION idemledger_claim_write(
    p_scope text, p_key text, p_fingerprint bytea, p_lease_token text,
    p_now bigint, p_lease_millis bigint, p_ttl_millis bigint, p_recover boolean,
    OUT won_fence bigint, OUT won_lease_expires_at bigint, OUT won_committed_at bigint)
LANGUAGE plpgsql VOLATILE AS $idemledger$
BEGIN
    -- It inserts a new in-flight row, or takes over the existing one when
    -- it has expired (anyone may) or when it is in flight with a lease that
    -- ran out and the same fingerprint. ON CONFLICT decides against the
    -- latest committed row, waiting for an uncommitted one.
    INSERT INTO idempotency_ledger AS l (
        scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
        status, headers, body, created_at, completed_at, expires_at
    )
    VALUES (p_scope, p_key, p_fingerprint, 'in_flight', p_lease_token,
            p_now + p_lease_millis, 1, NULL, NULL, NULL, p_now, NULL, p_now + p_ttl_millis)
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
        -- stands for happened whatever the new holder does.
        committed_at     = CASE
            WHEN l.expires_at <= excluded.created_at
                 AND (l.state = 'completed' OR l.lease_expires_at <= excluded.created_at)
            THEN NULL ELSE l.committed_at END
    WHERE (
            l.expires_at <= excluded.created_at
            AND (l.state = 'completed' OR l.lease_expires_at <= excluded.created_at)
        ) OR (
            l.state = 'in_flight'
            AND l.lease_expires_at <= excluded.created_at
            AND l.fingerprint = excluded.fingerprint
            AND (l.committed_at IS NULL OR p_recover)
        )
    RETURNING l.fence, l.lease_expires_at, l.committed_at
    INTO won_fence, won_lease_expires_at, won_committed_at;
END
$idemledger$;
