SELECT clock.now::bigint AS now,
       COALESCE(w.won_fence, 0)::bigint AS won_fence,
       COALESCE(w.won_lease_expires_at, 0)::bigint AS won_lease_expires_at,
       COALESCE(w.won_committed_at, 0)::bigint AS won_committed_at,
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
FROM (
    SELECT COALESCE($1::bigint,
                    floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now
) AS clock
LEFT JOIN LATERAL (
    -- Columns that a missing row (or a nullable column) leaves NULL read
    -- as zero values above, which the driver's Row documents; headers and
    -- body stay nullable bytea.
    SELECT c.scope, c.fingerprint, c.state, c.lease_token, c.lease_expires_at, c.fence,
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
    FROM idempotency_ledger AS c
    WHERE c.scope = $4::text AND c.key = $5::text
) AS r ON true
LEFT JOIN LATERAL (
    SELECT f.won_fence, f.won_lease_expires_at, f.won_committed_at
    FROM idemledger_claim_write($4::text, $5::text, $2::bytea, $6::text,
                                clock.now, $7::bigint, $8::bigint, $3::boolean) AS f
    WHERE r.open IS NOT FALSE
    OFFSET 0
) AS w ON true
