-- The ledger's statements on MySQL 8.0 and MariaDB 10.6+, in the SQL both
-- share. MySQL has no UPDATE ... RETURNING and runs a transaction's plain
-- reads on one snapshot (REPEATABLE READ, its default), so a claim is
-- several statements, put together by the driver (mysql/claim.go): a plain
-- read that answers replays without a lock or a write, an INSERT for a key
-- without a row, and for a key with one a locking read of the latest row
-- and the takeover, decided in Go between the two while the row is locked.
--
-- Times are Unix milliseconds, and the clock is the server's (Now): whole
-- seconds from UNIX_TIMESTAMP(), which counts from the epoch whatever the
-- session's time zone, and the milliseconds of NOW(6)'s fraction, which no
-- time zone changes; both read the statement's start time. (UNIX_TIMESTAMP
-- of a datetime would go through the session's time zone, and be an hour
-- off in the hour a daylight-saving zone repeats.)

-- name: Now :one
SELECT CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED) AS now;

-- name: Get :one
-- The row and the server's clock in one round trip: a replay's whole read,
-- and on a miss the clock the new claim's lease counts from (the row's
-- columns are then NULL, state included), so that the INSERT needs no
-- statement of its own to read it. An aggregate without GROUP BY answers
-- exactly one row whether the key matches or not: over the one row the
-- primary key finds, each MAX is that row's value, byte for byte (a NULL
-- stays NULL); over none, NULL. (A derived table of the clock, left
-- joined to the row, answers the same, but the server materializes it in
-- a temporary table at every read.) sqlc cannot type an aggregate's
-- column (interface{}): the driver converts them (mysql/claim.go). The
-- clock is the statement's start, like the PostgreSQL driver's
-- statement_timestamp(); the row comes from a snapshot taken no later (in
-- a caller's transaction, possibly much earlier), so a row unexpired at
-- that clock was unexpired in the snapshot.
SELECT CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED) AS now,
       MAX(scope) AS scope, MAX(`key`) AS `key`, MAX(fingerprint) AS fingerprint, MAX(state) AS state,
       MAX(lease_token) AS lease_token, MAX(lease_expires_at) AS lease_expires_at, MAX(fence) AS fence,
       MAX(status) AS status, MAX(headers) AS headers, MAX(body) AS body, MAX(created_at) AS created_at,
       MAX(completed_at) AS completed_at, MAX(expires_at) AS expires_at, MAX(committed_at) AS committed_at,
       MAX(kind) AS kind, MAX(failures) AS failures
FROM idempotency_ledger
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key);

-- name: GetShared :one
-- The latest committed row under a shared lock, until the transaction
-- ends: what a claim that found the key taken reads first. Duplicates that
-- waited for the same first request all hold a shared lock on its row
-- already (InnoDB's duplicate-key check takes one), so reading under
-- another never deadlocks them; most such rows stand (a replay), and only
-- a takeover goes on to GetForUpdate.
SELECT scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
LOCK IN SHARE MODE;

-- name: GetForUpdate :one
-- The latest committed row, locked until the transaction ends: what a
-- claim decides a takeover on. It waits for a transaction that holds the
-- row (a duplicate in flight inside another caller's transaction).
SELECT scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
FOR UPDATE;

-- name: ClaimInsert :execrows
-- A new in-flight row with fence 1; fails with a duplicate-key error when
-- the key has a row. It inserts nothing (no row affected) when the server
-- receives it after valid_until (when not NULL): a claim held up on its
-- way after its caller gave up does not win the key.
INSERT INTO idempotency_ledger (
    scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
    created_at, expires_at
) SELECT
    sqlc.arg(scope), sqlc.arg(idempotency_key), sqlc.arg(fingerprint), 'in_flight', sqlc.arg(lease_token),
    sqlc.arg(lease_expires_at), 1, sqlc.arg(created_at), sqlc.arg(expires_at)
FROM DUAL
WHERE CAST(sqlc.narg(valid_until) AS SIGNED) IS NULL
   OR CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED) <= sqlc.narg(valid_until);

-- name: ClaimInsertValues :execrows
-- ClaimInsert for a claim with no valid_until for the server to check (a
-- claim in a caller's transaction, or one that brings its own clock): the
-- same row, as a plain INSERT ... VALUES, which the server runs with less
-- work than an INSERT ... SELECT.
INSERT INTO idempotency_ledger (
    scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
    created_at, expires_at
) VALUES (
    sqlc.arg(scope), sqlc.arg(idempotency_key), sqlc.arg(fingerprint), 'in_flight', sqlc.arg(lease_token),
    sqlc.arg(lease_expires_at), 1, sqlc.arg(created_at), sqlc.arg(expires_at)
);

-- name: ClaimTakeover :execrows
-- Takes over the row read and locked by GetForUpdate, whose fence it
-- names: the new fence, commit mark and count of failed runs were decided
-- from that read. Like ClaimInsert, it changes nothing when received after
-- valid_until.
UPDATE idempotency_ledger
SET fingerprint      = sqlc.arg(fingerprint),
    state            = 'in_flight',
    lease_token      = sqlc.arg(lease_token),
    lease_expires_at = sqlc.arg(lease_expires_at),
    fence            = sqlc.arg(new_fence),
    status           = NULL,
    headers          = NULL,
    body             = NULL,
    kind             = NULL,
    created_at       = sqlc.arg(created_at),
    completed_at     = NULL,
    expires_at       = sqlc.arg(expires_at),
    committed_at     = sqlc.narg(committed_at),
    failures         = sqlc.arg(failures)
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key) AND fence = sqlc.arg(fence)
  AND (CAST(sqlc.narg(valid_until) AS SIGNED) IS NULL
       OR CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED) <= sqlc.narg(valid_until));

-- name: Complete :execrows
-- Stores the outcome if the caller still holds the lease (token and fence).
-- The row always changes (its state), so the rows MySQL reports changed
-- are the rows matched.
UPDATE idempotency_ledger
SET state            = 'completed',
    lease_token      = NULL,
    lease_expires_at = NULL,
    status           = sqlc.arg(status),
    headers          = sqlc.narg(headers),
    body             = sqlc.narg(body),
    kind             = sqlc.narg(kind),
    completed_at     = COALESCE(sqlc.narg(now), CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED)),
    expires_at       = COALESCE(sqlc.narg(now), CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED)) + CAST(sqlc.arg(ttl_millis) AS SIGNED)
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence);

-- name: CompleteReporting :execresult
-- Complete, reporting the completed_at it stored, and whether the record
-- carries a commit mark, as the statement's LAST_INSERT_ID (MySQL has no
-- RETURNING): completed_at * 2, plus 1 for a mark. The ledger's cache keeps
-- what it reports.
-- That changes the session's LAST_INSERT_ID(): the driver uses it only on
-- connections of its own (the pool, its own transactions), never in a
-- caller's transaction.
UPDATE idempotency_ledger
SET state            = 'completed',
    lease_token      = NULL,
    lease_expires_at = NULL,
    status           = sqlc.arg(status),
    headers          = sqlc.narg(headers),
    body             = sqlc.narg(body),
    kind             = sqlc.narg(kind),
    completed_at     = LAST_INSERT_ID(COALESCE(sqlc.narg(now), CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED)) * 2
                                      + (committed_at IS NOT NULL)) DIV 2,
    expires_at       = COALESCE(sqlc.narg(now), CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED)) + CAST(sqlc.arg(ttl_millis) AS SIGNED)
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence);

-- name: Release :execrows
-- Ends an in-flight claim held by the caller, unless it passed its commit
-- point, and counts the failed run; the row stays, released, with its
-- fence, and expires no earlier than lease_millis after the lease it ends
-- would have (as on the other engines: queries/postgres).
UPDATE idempotency_ledger
SET state       = 'released',
    lease_token = NULL,
    failures    = failures + 1,
    expires_at  = GREATEST(expires_at, lease_expires_at + CAST(sqlc.arg(lease_millis) AS SIGNED))
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence)
  AND committed_at IS NULL;

-- name: MarkCommitted :execrows
-- Marks the commit point of the caller's lease, keeping a mark already
-- there, and renews the lease for lease_millis from the moment the row is
-- written (SYSDATE, not the statement's start; see the PostgreSQL query: a
-- mark that waited behind a lock past the lease's end must not leave a
-- retry to declare the answer lost). A statement that
-- changes nothing (the mark there, the lease's end as far) is reported by
-- MySQL as no row: the driver then reads whether the lease holds (Held).
UPDATE idempotency_ledger
SET committed_at = COALESCE(committed_at, sqlc.narg(now), CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED)),
    lease_expires_at = GREATEST(lease_expires_at,
        COALESCE(sqlc.narg(now), CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000 AS SIGNED)) + CAST(sqlc.arg(lease_millis) AS SIGNED))
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence);

-- name: Held :one
-- Whether the lease still holds, for the updates that may change nothing.
SELECT COUNT(*) FROM idempotency_ledger
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence);

-- name: Abandon :exec
-- Ends the lease of a claim whose caller never learned that it won, as on
-- the other engines.
UPDATE idempotency_ledger
SET lease_expires_at = created_at
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token);

-- name: Extend :execrows
-- Never moves a lease back: a client that gave up on a statement (its
-- context ended) closes the connection, but MySQL runs the statement to
-- its end all the same, so an extension that waited for a lock may land
-- after a later one.
UPDATE idempotency_ledger
SET lease_expires_at = GREATEST(lease_expires_at, CAST(sqlc.arg(lease_expires_at) AS SIGNED))
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key)
  AND state = 'in_flight' AND lease_token = sqlc.arg(lease_token) AND fence = sqlc.arg(fence);

-- name: PurgeBatch :execrows
-- Deletes up to batch_size expired rows, oldest expiry first, walking the
-- index on expires_at, so that a batch locks the rows it deletes and the
-- index entries it reads, nothing more. A live lease is never purged.
-- (MySQL's DELETE cannot skip locked rows, and SELECT ... FOR UPDATE SKIP
-- LOCKED followed by a DELETE of the keys it found would need a list of
-- keys sqlc cannot bind; a batch that deadlocks with a claim is tried
-- again by the driver instead.)
DELETE FROM idempotency_ledger
WHERE expires_at <= CAST(sqlc.arg(now) AS SIGNED)
  AND (state = 'completed' OR lease_expires_at <= CAST(sqlc.arg(now) AS SIGNED))
ORDER BY expires_at
LIMIT ?;

-- name: Stats :one
-- Counts rows for the stats command. Unlike the other engines' it reads
-- the whole table: every figure is exact, and it is an operator's query.
SELECT
    CAST(COALESCE(SUM(state = 'in_flight'), 0) AS SIGNED) AS in_flight,
    CAST(COALESCE(SUM(state = 'completed'), 0) AS SIGNED) AS completed,
    CAST(COALESCE(SUM(state = 'released'), 0) AS SIGNED) AS released,
    CAST(COALESCE(SUM(expires_at <= CAST(sqlc.arg(now) AS SIGNED)
        AND (state = 'completed' OR lease_expires_at <= CAST(sqlc.arg(now) AS SIGNED))), 0) AS SIGNED) AS expired,
    CAST(COALESCE(SUM(state = 'in_flight' AND lease_expires_at <= CAST(sqlc.arg(now) AS SIGNED)), 0) AS SIGNED) AS lease_expired,
    CAST(COALESCE(SUM(state = 'in_flight' AND committed_at IS NOT NULL), 0) AS SIGNED) AS committed,
    CAST(COALESCE(MIN(CASE WHEN expires_at <= CAST(sqlc.arg(now) AS SIGNED)
        AND (state = 'completed' OR lease_expires_at <= CAST(sqlc.arg(now) AS SIGNED))
        THEN expires_at END), 0) AS SIGNED) AS oldest_expires_at,
    CAST(COALESCE(MIN(created_at), 0) AS SIGNED) AS oldest_created_at,
    CAST(COALESCE(MAX(created_at), 0) AS SIGNED) AS newest_created_at
FROM idempotency_ledger;

-- name: FindKey :many
-- Released records are left out: they hold no operation, only the key's
-- fence.
SELECT scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE `key` = sqlc.arg(idempotency_key) AND state <> 'released'
ORDER BY scope
LIMIT ?;

-- name: ListInFlight :many
SELECT scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE state = 'in_flight'
ORDER BY created_at, scope, `key`
LIMIT ?;

-- The recorded steps of an operation (schema migration 8).

-- name: StepsGet :many
-- The steps recorded for the key by the operation of the fingerprint.
SELECT name, result
FROM idempotency_steps
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key) AND fingerprint = sqlc.arg(fingerprint);

-- name: StepsExist :one
-- Whether the operation of the fingerprint recorded any step under the key.
SELECT CAST(EXISTS (
    SELECT 1 FROM idempotency_steps AS s
    WHERE s.scope = sqlc.arg(scope) AND s.`key` = sqlc.arg(idempotency_key) AND s.fingerprint = sqlc.arg(fingerprint)
) AS SIGNED) AS found;

-- name: StepRecord :execrows
-- Records a step only while the caller holds the key's lease (token and
-- fence on the in-flight record), with the record's fingerprint and fence;
-- a step of the same name already there (from an operation that ended) is
-- replaced. Affects no row when the lease does not hold. The source row is
-- read locked (INSERT ... SELECT takes a shared lock on it, and LOCK IN
-- SHARE MODE says so), so the guard sees its latest version, and a
-- takeover waits until the step commits.
INSERT INTO idempotency_steps (scope, `key`, name, fingerprint, fence, result, created_at)
SELECT l.scope, l.`key`, sqlc.arg(name), l.fingerprint, l.fence, sqlc.arg(result), sqlc.arg(created_at)
FROM idempotency_ledger AS l
WHERE l.scope = sqlc.arg(scope) AND l.`key` = sqlc.arg(idempotency_key)
  AND l.state = 'in_flight' AND l.lease_token = sqlc.arg(lease_token) AND l.fence = sqlc.arg(fence)
LOCK IN SHARE MODE
ON DUPLICATE KEY UPDATE
    fingerprint = VALUES(fingerprint),
    fence       = VALUES(fence),
    result      = VALUES(result),
    created_at  = VALUES(created_at);

-- name: StepsDelete :execrows
-- Deletes the steps of the operation of the fingerprint once its record
-- is no longer in flight (its outcome stored).
DELETE FROM idempotency_steps
WHERE idempotency_steps.scope = sqlc.arg(scope) AND idempotency_steps.`key` = sqlc.arg(idempotency_key)
  AND idempotency_steps.fingerprint = sqlc.arg(fingerprint)
  AND NOT EXISTS (
    SELECT 1 FROM idempotency_ledger AS l
    WHERE l.scope = idempotency_steps.scope AND l.`key` = idempotency_steps.`key` AND l.state = 'in_flight'
  );

-- name: StepsEnd :execrows
-- Deletes every step recorded under the key: a claim that took its record
-- over as a new operation runs it in the takeover's transaction.
DELETE FROM idempotency_steps
WHERE scope = sqlc.arg(scope) AND `key` = sqlc.arg(idempotency_key);

-- name: StepsPurgeBatch :execrows
-- Deletes up to the limit steps recorded at the cutoff or earlier whose
-- operation ended: no record in flight with their key and fingerprint
-- (the record completed, was purged, released, or taken over by another
-- payload), oldest first.
DELETE FROM idempotency_steps
WHERE idempotency_steps.created_at <= sqlc.arg(before)
  AND NOT EXISTS (
    SELECT 1 FROM idempotency_ledger AS l
    WHERE l.scope = idempotency_steps.scope AND l.`key` = idempotency_steps.`key`
      AND l.state = 'in_flight' AND l.fingerprint = idempotency_steps.fingerprint
  )
ORDER BY idempotency_steps.created_at
LIMIT ?;

-- name: StepsCount :one
SELECT CAST(count(*) AS SIGNED) AS steps FROM idempotency_steps;

-- name: FindSteps :many
-- The steps recorded under the key in any scope, for operators.
SELECT scope, `key`, name, fingerprint, fence, result, created_at
FROM idempotency_steps
WHERE `key` = sqlc.arg(idempotency_key)
ORDER BY scope, created_at, name
LIMIT ?;
