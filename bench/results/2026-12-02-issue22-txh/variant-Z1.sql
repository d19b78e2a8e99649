SELECT clock.now::bigint AS now,
       CASE WHEN c.scope IS NULL OR COALESCE((c.expires_at <= clock.now AND (c.state = 'completed' OR c.lease_expires_at <= clock.now)) OR (c.state = 'in_flight' AND c.lease_expires_at <= clock.now AND c.fingerprint = $3::bytea AND (c.committed_at IS NULL OR $8::boolean)), false) THEN idemledger_claim_write_arr($1::text, $2::text, $3::bytea, $4::text, clock.now,
                                $5::bigint, $6::bigint, $8::boolean) END AS won,
       (c.scope IS NOT NULL)::boolean AS cur_found,
       c.scope, c.key, c.fingerprint, c.state, c.lease_token, c.lease_expires_at, c.fence, c.status, c.headers, c.body, c.created_at, c.completed_at, c.expires_at, c.committed_at, c.kind
FROM (SELECT COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now) AS clock
LEFT JOIN idempotency_ledger AS c ON c.scope = $1::text AND c.key = $2::text
