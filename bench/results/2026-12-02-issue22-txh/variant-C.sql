SELECT clock.now::bigint AS now,
       COALESCE(w.a[1], 0)::bigint AS won_fence,
       COALESCE(w.a[2], 0)::bigint AS won_lease_expires_at,
       COALESCE(w.a[3], 0)::bigint AS won_committed_at,
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
FROM (SELECT COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now) AS clock
LEFT JOIN LATERAL (
    SELECT c.*, COALESCE((
                c.expires_at <= clock.now
                AND (c.state = 'completed' OR c.lease_expires_at <= clock.now)
           ) OR (
                c.state = 'in_flight'
                AND c.lease_expires_at <= clock.now
                AND c.fingerprint = $3::bytea
                AND (c.committed_at IS NULL OR $8::boolean)
           ), false) AS open
    FROM idempotency_ledger AS c
    WHERE c.scope = $1::text AND c.key = $2::text
) AS r ON true
CROSS JOIN LATERAL (
    SELECT CASE WHEN r.open IS NOT FALSE THEN idemledger_claim_write_arr($1::text, $2::text, $3::bytea, $4::text, clock.now,
                                $5::bigint, $6::bigint, $8::boolean) END AS a
    OFFSET 0
) AS w
