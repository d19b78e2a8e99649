SELECT * FROM idemledger_claim($1::text, $2::text, $3::bytea, $4::text, $5::bigint, $6::bigint, $7::bigint, $8::boolean)
CREATE OR REPLACE FUNCTION idemledger_claim(
    p_scope text, p_key text, p_fingerprint bytea, p_lease_token text,
    p_lease_millis bigint, p_ttl_millis bigint, p_now bigint, p_recover boolean,
    OUT o_now bigint, OUT o_won_fence bigint, OUT o_won_lease_expires_at bigint, OUT o_won_committed_at bigint,
    OUT o_cur_found boolean, OUT o_fingerprint bytea, OUT o_state text, OUT o_lease_token text,
    OUT o_lease_expires_at bigint, OUT o_fence bigint, OUT o_status bigint, OUT o_headers bytea, OUT o_body bytea,
    OUT o_created_at bigint, OUT o_completed_at bigint, OUT o_expires_at bigint, OUT o_committed_at bigint, OUT o_kind text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    c idempotency_ledger%ROWTYPE;
BEGIN
    o_now := COALESCE(p_now, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint);
    SELECT * INTO c FROM idempotency_ledger AS r WHERE r.scope = p_scope AND r.key = p_key;
    o_cur_found := FOUND;
    IF FOUND THEN
        o_fingerprint := c.fingerprint; o_state := c.state; o_lease_token := c.lease_token;
        o_lease_expires_at := c.lease_expires_at; o_fence := c.fence; o_status := c.status;
        o_headers := c.headers; o_body := c.body; o_created_at := c.created_at;
        o_completed_at := c.completed_at; o_expires_at := c.expires_at; o_committed_at := c.committed_at; o_kind := c.kind;
        IF NOT COALESCE((c.expires_at <= o_now AND (c.state = 'completed' OR c.lease_expires_at <= o_now))
                     OR (c.state = 'in_flight' AND c.lease_expires_at <= o_now AND c.fingerprint = p_fingerprint
                         AND (c.committed_at IS NULL OR p_recover)), false) THEN
            RETURN;
        END IF;
    END IF;
    INSERT INTO idempotency_ledger AS l (
        scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
        status, headers, body, created_at, completed_at, expires_at
    )
    VALUES (p_scope, p_key, p_fingerprint, 'in_flight', p_lease_token,
            o_now + p_lease_millis, 1, NULL, NULL, NULL, o_now, NULL, o_now + p_ttl_millis)
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
    INTO o_won_fence, o_won_lease_expires_at, o_won_committed_at;
END
$fn$;
