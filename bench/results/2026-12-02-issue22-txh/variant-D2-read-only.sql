SELECT c.scope, c.key, c.fingerprint, c.state, c.lease_token, c.lease_expires_at, c.fence, c.status, c.headers, c.body, c.created_at, c.completed_at, c.expires_at, c.committed_at, c.kind,
       COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now,
       COALESCE((
                c.expires_at <= COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)
                AND (c.state = 'completed' OR c.lease_expires_at <= COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint))
           ) OR (
                c.state = 'in_flight'
                AND c.lease_expires_at <= COALESCE($7::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)
                AND c.fingerprint = $3::bytea
                AND (c.committed_at IS NULL OR $8::boolean)
           ), false) AS open, $4::text AS b, $5::bigint AS c, $6::bigint AS d
FROM idempotency_ledger AS c WHERE c.scope = $1 AND c.key = $2
