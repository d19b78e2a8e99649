WITH clock AS (
    SELECT COALESCE($1::bigint,
                    floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now
), cur AS (
    SELECT c.scope, c.key, c.fingerprint, c.state, c.lease_token, c.lease_expires_at, c.fence,
           c.status, c.headers, c.body, c.created_at, c.completed_at, c.expires_at, c.committed_at, c.kind,
           COALESCE((
                c.expires_at <= clock.now
                AND (c.state = 'completed' OR c.lease_expires_at <= clock.now)
           ) OR (
                c.state = 'in_flight'
                AND c.lease_expires_at <= clock.now
                AND c.fingerprint = $2::bytea
                AND (c.committed_at IS NULL OR $3::boolean)
           ), false) AS open
    FROM idempotency_ledger AS c, clock
    WHERE c.scope = $4::text AND c.key = $5::text
), won AS (
    INSERT INTO idempotency_ledger AS l (
        scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
        status, headers, body, created_at, completed_at, expires_at
    )
    SELECT $4::text, $5::text, $2::bytea, 'in_flight', $6::text,
           clock.now + $7::bigint, 1,
           NULL::bigint, NULL::bytea, NULL::bytea, clock.now, NULL::bigint, clock.now + $8::bigint
    FROM clock
    WHERE NOT EXISTS (SELECT 1 FROM cur AS s WHERE NOT s.open)
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
        -- An expired record starts afresh; a recovery (@recover) of one
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
            AND (l.committed_at IS NULL OR $3::boolean)
        )
    RETURNING l.fence, l.lease_expires_at, l.committed_at
)
SELECT clock.now::bigint AS now,
       COALESCE(w.fence, 0)::bigint AS won_fence,
       COALESCE(w.lease_expires_at, 0)::bigint AS won_lease_expires_at,
       COALESCE(w.committed_at, 0)::bigint AS won_committed_at,
       (r.scope IS NOT NULL)::boolean AS cur_found,
       COALESCE(r.fingerprint, ''::bytea)::bytea AS fingerprint,
       COALESCE(r.state, '')::text AS state,
       COALESCE(r.lease_token, '')::text AS lease_token,
       COALESCE(r.lease_expires_at, 0)::bigint AS lease_expires_at,
       COALESCE(r.fence, 0)::bigint AS fence,
       COALESCE(r.status, 0)::bigint AS status,
       r.headers,
       r.body,
       COALESCE(r.created_at, 0)::bigint AS created_at,
       COALESCE(r.completed_at, 0)::bigint AS completed_at,
       COALESCE(r.expires_at, 0)::bigint AS expires_at,
       COALESCE(r.committed_at, 0)::bigint AS committed_at,
       COALESCE(r.kind, '')::text AS kind
FROM clock
LEFT JOIN won AS w ON true
LEFT JOIN cur AS r ON true
