-- Claim is up to two writes, each deciding atomically on its own:
-- ClaimInsert for a key without a row (most claims), and only when the key
-- has a row that Get shows may be taken over, ClaimTakeover, which returns
-- the new fence in the same statement, so a takeover is never committed
-- without its caller learning of it. One upsert with RETURNING did both,
-- but SQLite buffers RETURNING rows in an ephemeral table opened at every
-- execution, which cost about four times the insert itself on the hot path
-- (a key's first claim); the takeover path is rare.

-- name: ClaimInsert :execrows
-- Inserts a new in-flight row with fence 1; affects no row when the key
-- has one.
INSERT INTO idempotency_ledger (
    scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
    status, headers, body, created_at, completed_at, expires_at
) VALUES (
    @scope, @key, @fingerprint, 'in_flight', @lease_token, @lease_expires_at, 1,
    NULL, NULL, NULL, @now, NULL, @expires_at
)
ON CONFLICT (scope, key) DO NOTHING;

-- name: ClaimTakeover :one
-- Takes over the existing row when it has expired or was released (anyone
-- may) or when it is in flight with a lease that ran out and the same
-- fingerprint, and returns its new fence and the operation's count of
-- failed runs. Returns no row when the existing row stands.
UPDATE idempotency_ledger
SET fingerprint      = @fingerprint,
    state            = 'in_flight',
    lease_token      = @lease_token,
    lease_expires_at = @lease_expires_at,
    fence            = fence + 1,
    status           = NULL,
    headers          = NULL,
    body             = NULL,
    kind             = NULL,
    created_at       = @now,
    completed_at     = NULL,
    expires_at       = @expires_at,
    -- An expired record starts afresh; a recovery (@recover) of one that
    -- passed its commit point keeps the mark, since the effect it stands
    -- for happened whatever the new holder does. The CASE reads the row's
    -- columns as they were before this UPDATE.
    committed_at     = CASE
        WHEN expires_at <= @now AND (state <> 'in_flight' OR lease_expires_at <= @now)
        THEN NULL ELSE committed_at END,
    -- The failed runs of the same operation count on; an expired record,
    -- or another fingerprint, is another operation.
    failures         = CASE
        WHEN expires_at <= @now AND (state <> 'in_flight' OR lease_expires_at <= @now) THEN 0
        WHEN fingerprint = @fingerprint THEN failures
        ELSE 0 END
WHERE scope = @scope AND key = @key
  AND (state = 'released' OR (
        expires_at <= @now
        AND (state = 'completed' OR lease_expires_at <= @now)
    ) OR (
        state = 'in_flight'
        AND lease_expires_at <= @now
        AND fingerprint = @fingerprint
        AND (committed_at IS NULL OR CAST(@recover AS INTEGER))
    ))
RETURNING fence, committed_at, failures;

-- name: Get :one
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE scope = @scope AND key = @key;

-- name: Complete :one
-- Stores the outcome if the caller still holds the lease (token and fence),
-- and returns the commit mark it kept, which the ledger's cache keeps (no
-- row when the lease did not hold). The fingerprint is left as it is.
UPDATE idempotency_ledger
SET state            = 'completed',
    lease_token      = NULL,
    lease_expires_at = NULL,
    status           = @status,
    headers          = @headers,
    body             = @body,
    kind             = sqlc.narg(kind),
    completed_at     = @now,
    expires_at       = @expires_at
WHERE scope = @scope AND key = @key
  AND state = 'in_flight' AND lease_token = @lease_token AND fence = @fence
RETURNING committed_at;

-- name: Release :execrows
-- Ends an in-flight claim held by the caller, never a completed row, nor
-- one that passed its commit point (its effect happened, and a retry must
-- not run it again as if it had not), and counts the failed run. The row
-- stays, released: any claim may take it over at once, and it keeps its
-- fence, so that the next holder's fence is greater than every earlier
-- one. It expires no earlier than @lease_millis after the lease it ends
-- would have, so that Purge, which would let the fence start again at 1,
-- leaves it while a holder whose lease ran out may still be at work.
UPDATE idempotency_ledger
SET state       = 'released',
    lease_token = NULL,
    failures    = failures + 1,
    expires_at  = max(expires_at, lease_expires_at + @lease_millis)
WHERE scope = @scope AND key = @key
  AND state = 'in_flight' AND lease_token = @lease_token AND fence = @fence
  AND committed_at IS NULL;

-- name: MarkCommitted :execrows
-- Marks the commit point of the caller's lease (token and fence): its
-- irreversible effect is done. A mark already set keeps its first time, so
-- that a retry of an ambiguous attempt changes nothing else. The lease is
-- renewed for @lease_millis from the moment the row is written: the
-- holder is alive and about to store its answer, and a mark that waited
-- for the write lock past the lease's end must not leave a retry to find
-- the lease run out and the mark there, and declare the answer lost.
-- written_at is NULL but for a ledger with its own clock (Options.Now);
-- SQLite's 'now' is read within the step, after the lock was had.
UPDATE idempotency_ledger
SET committed_at = COALESCE(committed_at, @now),
    lease_expires_at = MAX(lease_expires_at,
        COALESCE(CAST(sqlc.narg(written_at) AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)) + CAST(@lease_millis AS INTEGER))
WHERE scope = @scope AND key = @key
  AND state = 'in_flight' AND lease_token = @lease_token AND fence = @fence;

-- name: Abandon :execrows
-- Ends the lease of a claim whose caller never learned that it won (its
-- context ended while the claim ran, and the write may have committed).
-- The row stays in flight with its fence, as if its holder had vanished at
-- once, so a retry of the same request takes it over without waiting for
-- the lease to run out, and the fence still grows. The token is the
-- claim's own and unguessable, so it alone identifies the lease.
UPDATE idempotency_ledger
SET lease_expires_at = created_at
WHERE scope = @scope AND key = @key
  AND state = 'in_flight' AND lease_token = @lease_token;

-- name: Extend :execrows
UPDATE idempotency_ledger
SET lease_expires_at = @lease_expires_at
WHERE scope = @scope AND key = @key
  AND state = 'in_flight' AND lease_token = @lease_token AND fence = @fence;

-- name: PurgeBatch :execrows
-- Deletes up to @batch_size expired rows, oldest expiry first. A row has
-- expired when expires_at has passed and, if it is in flight, its lease has
-- run out too: a live lease is never purged.
DELETE FROM idempotency_ledger
WHERE rowid IN (
    SELECT e.rowid
    FROM idempotency_ledger AS e
    WHERE e.expires_at <= @now
      AND (e.state = 'completed' OR e.lease_expires_at <= @now)
    ORDER BY e.expires_at
    LIMIT @batch_size
);

-- name: Stats :one
-- Counts rows for the stats command through indexes, never reading the
-- table's rows (reading them all takes seconds on a large table):
--   total: count(*), which SQLite answers by counting the entries of its
--     smallest index page by page, without decoding them: exact;
--   the in-flight figures: through the partial index of in-flight rows,
--     a handful: exact;
--   expires_passed: the rows of the expiry index up to @now, counted one
--     by one, so at most 100,001 of them (about a microsecond each in pure-Go
--     SQLite: 2.5M expired rows took seconds); past that the driver
--     estimates them from first_rowid and last_expired_rowid, the rowids
--     of the oldest record and of the expired row that expires last,
--     since rowids grow with insertion and expiry follows insertion;
--   expires_passed_leased: the in-flight ones there whose lease still
--     holds (in-flight rows again), taken off the count;
--   oldest_expires_at: the first expired row in expiry order, how long the
--     purge is behind;
--   oldest and newest created_at: the two ends of the created_at index.
SELECT
    (SELECT count(*) FROM idempotency_ledger) AS total,
    (SELECT count(*) FROM idempotency_ledger AS f WHERE f.state = 'in_flight') AS in_flight,
    (SELECT count(*) FROM idempotency_ledger AS f
        WHERE f.state = 'in_flight' AND f.lease_expires_at <= @now) AS lease_expired,
    (SELECT count(*) FROM idempotency_ledger AS f
        WHERE f.state = 'in_flight' AND f.committed_at IS NOT NULL) AS committed,
    -- Through the partial index of released rows (migration 7).
    (SELECT count(*) FROM idempotency_ledger AS r WHERE r.state = 'released') AS released,
    (SELECT count(*) FROM (SELECT 1 FROM idempotency_ledger AS e
        WHERE e.expires_at <= @now LIMIT 100001)) AS expires_passed,
    -- The unary + keeps SQLite from reading this through the expiry index
    -- (every expired row, then the table) instead of the in-flight one,
    -- which took seconds with millions of expired records.
    (SELECT count(*) FROM idempotency_ledger AS f
        WHERE f.state = 'in_flight' AND +f.expires_at <= @now AND f.lease_expires_at > @now) AS expires_passed_leased,
    CAST(COALESCE((SELECT min(r.rowid) FROM idempotency_ledger AS r), 0) AS INTEGER) AS first_rowid,
    CAST(COALESCE((SELECT x.rowid FROM idempotency_ledger AS x
        WHERE x.expires_at <= @now ORDER BY x.expires_at DESC LIMIT 1), 0) AS INTEGER) AS last_expired_rowid,
    CAST(COALESCE((SELECT o.expires_at FROM idempotency_ledger AS o
        WHERE o.expires_at <= @now AND (o.state = 'completed' OR o.lease_expires_at <= @now)
        ORDER BY o.expires_at LIMIT 1), 0) AS INTEGER) AS oldest_expires_at,
    CAST(COALESCE((SELECT min(c.created_at) FROM idempotency_ledger AS c), 0) AS INTEGER) AS oldest_created_at,
    CAST(COALESCE((SELECT max(c.created_at) FROM idempotency_ledger AS c), 0) AS INTEGER) AS newest_created_at;

-- name: FindKey :many
-- Every record with the key, in whatever scope, for operators
-- (Ledger.Find). The primary key begins with the scope, so this reads the
-- whole table: it is not for a request's path. Released records are left
-- out: they hold no operation, only the key's fence.
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE key = @key AND state <> 'released'
ORDER BY scope
LIMIT @max_rows;

-- name: ListInFlight :many
-- The records in flight, oldest claim first, for operators
-- (Ledger.InFlight); expired ones included. Reads the partial index of
-- in-flight rows in its order (idemledger_ledger_in_flight), never the
-- completed ones.
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE state = 'in_flight'
ORDER BY created_at, scope, key
LIMIT @max_rows;

-- The recorded steps of an operation (schema migration 8).

-- name: StepsGet :many
-- The steps recorded for the key by the operation of @fingerprint.
SELECT name, result
FROM idempotency_steps
WHERE scope = @scope AND key = @key AND fingerprint = @fingerprint;

-- name: StepsExist :one
-- Whether the operation of @fingerprint recorded any step under the key.
SELECT EXISTS (
    SELECT 1 FROM idempotency_steps AS s
    WHERE s.scope = @scope AND s.key = @key AND s.fingerprint = @fingerprint
) AS found;

-- name: StepRecord :execrows
-- Records a step only while the caller holds the key's lease (token and
-- fence on the in-flight record), with the record's fingerprint and fence;
-- a step of the same name already there (from an operation that ended) is
-- replaced. Affects no row when the lease does not hold.
INSERT INTO idempotency_steps (scope, key, name, fingerprint, fence, result, created_at)
SELECT l.scope, l.key, @name, l.fingerprint, l.fence, @result, @now
FROM idempotency_ledger AS l
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
ON CONFLICT (scope, key, name) DO UPDATE
SET fingerprint = excluded.fingerprint,
    fence       = excluded.fence,
    result      = excluded.result,
    created_at  = excluded.created_at;

-- name: StepsDelete :execrows
-- Deletes the steps of the operation of @fingerprint once its record is
-- no longer in flight (its outcome stored).
DELETE FROM idempotency_steps
WHERE idempotency_steps.scope = @scope AND idempotency_steps.key = @key
  AND idempotency_steps.fingerprint = @fingerprint
  AND NOT EXISTS (
    SELECT 1 FROM idempotency_ledger AS l
    WHERE l.scope = idempotency_steps.scope AND l.key = idempotency_steps.key AND l.state = 'in_flight'
  );

-- name: StepsPurgeBatch :execrows
-- Deletes up to @batch_size steps recorded at @before or earlier whose
-- operation ended: no record in flight with their key and fingerprint
-- (the record completed, was purged, released, or taken over by another
-- payload), oldest first.
DELETE FROM idempotency_steps
WHERE rowid IN (
    SELECT s.rowid
    FROM idempotency_steps AS s
    WHERE s.created_at <= @before
      AND NOT EXISTS (
        SELECT 1 FROM idempotency_ledger AS l
        WHERE l.scope = s.scope AND l.key = s.key
          AND l.state = 'in_flight' AND l.fingerprint = s.fingerprint
      )
    ORDER BY s.created_at
    LIMIT @batch_size
);

-- name: StepsCount :one
SELECT count(*) AS steps FROM idempotency_steps;

-- name: FindSteps :many
-- The steps recorded under the key in any scope, for operators.
SELECT scope, key, name, fingerprint, fence, result, created_at
FROM idempotency_steps
WHERE key = @key
ORDER BY scope, created_at, name
LIMIT @max_rows;
