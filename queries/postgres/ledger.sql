-- The PostgreSQL queries of the ledger: the same statements as
-- queries/sqlite, with one difference. Times that decide leases and expiry
-- come from the database's clock, so that replicas whose clocks disagree
-- still agree on who holds a key: every statement that needs "now" takes
-- the nullable parameter @now and uses the server's statement_timestamp()
-- (Unix milliseconds) when it is NULL. statement_timestamp(), not now():
-- now() is frozen at the start of the caller's transaction, which may be
-- long before the claim. A non-NULL @now (ledger.Options.Now) replaces the
-- clock, for tests that move time by hand.
--
-- The statements that may wait for another transaction's row lock take
-- the nullable parameter @lock_timeout (milliseconds, as text): when it is
-- not NULL they set lock_timeout for their own transaction alone
-- (set_config(..., true)), so that a lease-mode statement on the pool,
-- whose autocommit transaction is the statement, gives up a lock wait
-- before its lease ends (55P03) instead of waiting until the lock is gone
-- and then writing, long after its caller stopped listening. The value is
-- set in the statement's first subquery (OFFSET 0, volatile, so neither
-- merged nor left out), which the plan runs before the row is locked;
-- lock_timeout is read when a lock wait begins. Inside a caller's
-- transaction the drivers pass NULL, and the statement changes no setting.

-- name: Now :one
-- The database's clock, in Unix milliseconds, for Purge's cut-off and Stats.
SELECT floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint AS now;

-- name: Claim :one
-- One statement that reads the key's row first (r) and writes only when
-- that row does not stand: then it calls idemledger_claim_write (schema/
-- postgres/000009_claim_won.up.sql), which inserts a new in-flight row, or
-- takes over the existing one when it has expired or was released (anyone
-- may) or when it is in flight with a lease that ran out and the same
-- fingerprint. It always returns one row, the clock (now) by which r was
-- judged and one of three things, told by state: 'won', with the won lease
-- in fence, lease_expires_at, committed_at and failures; the row as r read
-- it (its own state); or '' when nothing was won and the key had no row.
--
-- @valid_until (nullable) is the latest clock at which the claim may still
-- write: a statement that reaches the server later (it was held up on the
-- way, by a silent network, after its caller gave up) writes nothing and
-- says so in late, so that a claim nobody waits for any more does not
-- hold the key for a whole lease. The clock is statement_timestamp(), the
-- time the server received the statement. @lock_timeout (nullable) is set
-- for the write alone, just before it: a replay sets nothing.
--
-- The won lease shares the row's columns rather than having its own: a
-- replay is answered from this row alone, and every column costs the
-- client its decoding at every execution (database/sql's scanning most).
--
-- When r shows a standing row (completed and unexpired, in flight under a
-- live lease, or another fingerprint and unexpired) the CASE that calls
-- the function takes its ELSE: nothing is inserted, no row is locked, no
-- transaction id is assigned, and the plan holds no scan of the function
-- for the executor to set up (the lateral join under a one-time filter that
-- did this before migration 9 cost a replay about 15 us of server time). A
-- replay is then one round trip and one plain read. This is safe because a
-- standing row only changes by its own lease holder (Complete, Release,
-- Extend, Abandon) or once it has expired, and expiry is judged by the
-- same clock as r: the answer the ledger derives from r was true at the
-- statement's snapshot.
--
-- When r shows no row, or a row that may be taken over, the function's
-- upsert decides against the latest committed row, waiting for an
-- uncommitted one (a duplicate in another transaction waits until the first
-- commits or rolls back). If that row stands after all (it was committed
-- after r's snapshot), nothing is won and r is stale or absent: the ledger
-- reads the row again (Get) to explain.
--
-- x's OFFSET 0 keeps it whole, so that the function is called once, in
-- x's won column, where a merged x would copy the call into every
-- reference to one of won's fields (a call each, the later ones finding
-- the first one's row). OFFSET 0 keeps clock whole too, so that the
-- clock's expression is computed once and the rest of the statement
-- reads its value, where a merged subquery copies the expression into
-- every place that names it, which cost a replay's claim server time at
-- every execution. r is kept whole by LIMIT 1 rather than OFFSET 0: it
-- tells the planner what the primary key guarantees, one row at most,
-- which its estimate from the table's statistics may not. On a table whose
-- rows shared one scope and whose statistics were stale it estimated two,
-- and the generic plan, kept by the connection until the next ANALYZE,
-- read the row through a bitmap scan and set up a Memoize node at every
-- execution (the server CPU they cost: BENCHMARKS.md, "PostgreSQL replays
-- and TxHandler beside their floors").
SELECT x.now::bigint AS now,
       (CASE WHEN (x.won).won_fence IS NOT NULL THEN 'won' ELSE COALESCE(x.state, '') END)::text AS state,
       (CASE WHEN (x.won).won_fence IS NOT NULL THEN (x.won).won_fence ELSE COALESCE(x.fence, 0) END)::bigint AS fence,
       (CASE WHEN (x.won).won_fence IS NOT NULL THEN (x.won).won_lease_expires_at
             ELSE COALESCE(x.lease_expires_at, 0) END)::bigint AS lease_expires_at,
       (CASE WHEN (x.won).won_fence IS NOT NULL THEN COALESCE((x.won).won_committed_at, 0)
             ELSE COALESCE(x.committed_at, 0) END)::bigint AS committed_at,
       (CASE WHEN (x.won).won_fence IS NOT NULL THEN (x.won).won_failures
             ELSE COALESCE(x.failures, 0) END)::bigint AS failures,
       COALESCE(x.fingerprint, ''::bytea)::bytea AS fingerprint,
       COALESCE(x.lease_token, '')::text AS lease_token,
       COALESCE(x.status, 0)::bigint AS status,
       x.headers,
       x.body,
       COALESCE(x.created_at, 0)::bigint AS created_at,
       COALESCE(x.completed_at, 0)::bigint AS completed_at,
       COALESCE(x.expires_at, 0)::bigint AS expires_at,
       COALESCE(x.kind, '')::text AS kind,
       (x.open IS NOT FALSE AND sqlc.narg(valid_until)::bigint IS NOT NULL
        AND x.now > sqlc.narg(valid_until)::bigint)::boolean AS late
FROM (
    SELECT clock.now, r.fingerprint, r.state, r.lease_token, r.lease_expires_at, r.fence,
           r.status, r.headers, r.body, r.created_at, r.completed_at, r.expires_at, r.committed_at,
           r.kind, r.failures, r.open,
           CASE WHEN r.open IS NOT FALSE
                     AND (sqlc.narg(valid_until)::bigint IS NULL OR clock.now <= sqlc.narg(valid_until)::bigint)
                     AND (sqlc.narg(lock_timeout)::text IS NULL
                          OR set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) IS NOT NULL)
                THEN idemledger_claim_write(@scope::text, @key::text, @fingerprint::bytea, @lease_token::text,
                                            clock.now, @lease_millis::bigint, @ttl_millis::bigint, @recover::boolean)
           END AS won
    FROM (
        SELECT COALESCE(sqlc.narg(now)::bigint,
                        floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now
        OFFSET 0
    ) AS clock
    LEFT JOIN LATERAL (
        -- Columns that a missing row (or a nullable column) leaves NULL
        -- read as zero values above, which the driver's Row documents;
        -- headers and body stay nullable bytea.
        SELECT c.fingerprint, c.state, c.lease_token, c.lease_expires_at, c.fence,
               c.status, c.headers, c.body, c.created_at, c.completed_at, c.expires_at, c.committed_at, c.kind,
               c.failures,
               COALESCE(c.state = 'released' OR (
                    c.expires_at <= clock.now
                    AND (c.state = 'completed' OR c.lease_expires_at <= clock.now)
               ) OR (
                    c.state = 'in_flight'
                    AND c.lease_expires_at <= clock.now
                    AND c.fingerprint = @fingerprint::bytea
                    AND (c.committed_at IS NULL OR @recover::boolean)
               ), false) AS open
        FROM idempotency_ledger AS c
        WHERE c.scope = @scope::text AND c.key = @key::text
        LIMIT 1
    ) AS r ON true
    OFFSET 0
) AS x;

-- name: Get :one
-- The row, and the clock at the read ("now"), by which a lost claim is
-- explained (in flight for how long, or expired in between).
SELECT sqlc.embed(idempotency_ledger),
       COALESCE(sqlc.narg(now)::bigint,
                floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)::bigint AS now
FROM idempotency_ledger
WHERE scope = @scope AND key = @key;

-- name: Complete :one
-- Stores the outcome if the caller still holds the lease (token and fence),
-- and returns the times it stored, which the ledger's cache keeps (no row
-- when the lease did not hold). The fingerprint is left as it is.
UPDATE idempotency_ledger AS l
SET state            = 'completed',
    lease_token      = NULL,
    lease_expires_at = NULL,
    status           = @status,
    headers          = @headers,
    body             = @body,
    kind             = sqlc.narg(kind),
    completed_at     = clock.now,
    expires_at       = clock.now + @ttl_millis::bigint
FROM (
    SELECT COALESCE(sqlc.narg(now)::bigint,
                    floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now,
           CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
    OFFSET 0
) AS clock
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
RETURNING l.completed_at, l.committed_at;

-- name: CompleteSteps :one
-- Complete for an operation that recorded steps: when it stores the
-- outcome it deletes every step recorded under the key, in the same
-- statement (the DELETE reads the UPDATE's RETURNING, so it deletes
-- nothing when the lease did not hold). Returns how many records it
-- completed, 1 or 0.
WITH done AS (
    UPDATE idempotency_ledger AS l
    SET state            = 'completed',
        lease_token      = NULL,
        lease_expires_at = NULL,
        status           = @status,
        headers          = @headers,
        body             = @body,
        kind             = sqlc.narg(kind),
        completed_at     = clock.now,
        expires_at       = clock.now + @ttl_millis::bigint
    FROM (
        SELECT COALESCE(sqlc.narg(now)::bigint,
                        floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now,
               CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                    ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
        OFFSET 0
    ) AS clock
    WHERE l.scope = @scope AND l.key = @key
      AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
    RETURNING l.scope, l.key
), gone AS (
    DELETE FROM idempotency_steps AS s
    USING done
    WHERE s.scope = done.scope AND s.key = done.key
)
SELECT count(*)::bigint AS completed FROM done;

-- name: Release :execrows
-- Ends an in-flight claim held by the caller, never a completed row, nor
-- one that passed its commit point (its effect happened, and a retry must
-- not run it again as if it had not), and counts the failed run. The row
-- stays, released: any claim may take it over at once, and it keeps its
-- fence, so that the next holder's fence is greater than every earlier
-- one. It expires no earlier than @lease_millis after the lease it ends
-- would have, so that Purge, which would let the fence start again at 1,
-- leaves it while a holder whose lease ran out may still be at work.
UPDATE idempotency_ledger AS l
SET state       = 'released',
    lease_token = NULL,
    failures    = l.failures + 1,
    expires_at  = GREATEST(l.expires_at, l.lease_expires_at + @lease_millis::bigint)
FROM (
    SELECT CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
    OFFSET 0
) AS cfg
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
  AND l.committed_at IS NULL;

-- name: MarkCommitted :execrows
-- Marks the commit point of the caller's lease (token and fence): its
-- irreversible effect is done. A mark already set keeps its first time, so
-- that a retry of an ambiguous attempt changes nothing else. The lease is
-- renewed for @lease_millis from the moment the row is had: the holder is
-- alive and about to store its answer, and a mark that waited behind a
-- lock past the lease's end must not leave a retry to find the lease run
-- out and the mark there, and declare the answer lost. That moment is
-- clock_timestamp() read once h's locking read (lk) has the row: an
-- UPDATE computes its new values before it waits for a row that another
-- transaction only locked, so read there the clock would be the
-- statement's start. lk names clock, so that clock (and the lock timeout
-- it sets) comes first.
UPDATE idempotency_ledger AS l
SET committed_at = COALESCE(l.committed_at, h.now),
    lease_expires_at = GREATEST(l.lease_expires_at, COALESCE(sqlc.narg(now)::bigint, h.had) + @lease_millis::bigint)
FROM (
    SELECT clock.now, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS had
    FROM (
        SELECT COALESCE(sqlc.narg(now)::bigint,
                        floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now,
               CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                    ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
        OFFSET 0
    ) AS clock,
    LATERAL (
        SELECT 1 AS one FROM idempotency_ledger AS x
        WHERE x.scope = @scope AND x.key = @key
          AND x.state = 'in_flight' AND x.lease_token = @lease_token AND x.fence = @fence
          AND clock.lock_timeout IS NOT DISTINCT FROM clock.lock_timeout
        FOR UPDATE OF x
    ) AS lk
    OFFSET 0
) AS h
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence;


-- name: Abandon :execrows
-- Ends the lease of a claim whose caller never learned that it won (its
-- context ended while the claim ran, and the write may have committed).
-- The row stays in flight with its fence, as if its holder had vanished at
-- once, so a retry of the same request takes it over without waiting for
-- the lease to run out, and the fence still grows. The token is the
-- claim's own and unguessable, so it alone identifies the lease.
UPDATE idempotency_ledger AS l
SET lease_expires_at = l.created_at
FROM (
    SELECT CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
    OFFSET 0
) AS cfg
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token;

-- name: Extend :one
-- Pushes the lease forward if the caller still holds it; returns the new
-- end of the lease, or no row.
UPDATE idempotency_ledger AS l
SET lease_expires_at = clock.now + @lease_millis::bigint
FROM (
    SELECT COALESCE(sqlc.narg(now)::bigint,
                    floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now,
           CASE WHEN sqlc.narg(lock_timeout)::text IS NULL THEN NULL
                ELSE set_config('lock_timeout', sqlc.narg(lock_timeout)::text, true) END AS lock_timeout
    OFFSET 0
) AS clock
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
RETURNING l.lease_expires_at;

-- name: PurgeBatch :one
-- Deletes up to @batch_size expired rows, oldest expiry first, from
-- @after on (0: from the start), and returns how many and the latest
-- expires_at among them, where the next batch starts. A row has expired
-- when expires_at has passed and, if it is in flight, its lease has run
-- out too: a live lease is never purged. SKIP LOCKED lets purgers on
-- several replicas run at once: each takes rows that no other transaction
-- holds (another purger's batch, a claim taking the row over), so none
-- waits for another and their lock orders cannot cross into a deadlock.
-- The lower bound is what keeps batches cheap: the rows deleted before
-- stay in the expiry index as dead entries until VACUUM, and a batch
-- that started from the head of the index stepped over all of them, and
-- each batch was slower than the one before; from @after, the index
-- descends straight to the first row not yet deleted.
-- The rows are deleted where the lock found them (ctid), not looked up
-- again by primary key: with random keys, each lookup read a page of the
-- primary-key index of its own, most of a batch's time. A ctid
-- is safe here: the row stays locked from the sub-select to the DELETE, so
-- nothing moves or replaces it; and if the lock had to follow a newer
-- version, that version is not visible to the DELETE's snapshot and is
-- left alone.
-- The batch's transaction commits as any other, waiting for its WAL to
-- reach the disk. Committed asynchronously, a batch left its WAL for the
-- next request that committed to flush, and the requests beside the purge
-- waited for it; flushing its own costs the purge no rows a second, since
-- the default pause between batches hides the flush (BENCHMARKS.md,
-- "PostgreSQL purge").
WITH purged AS (
    DELETE FROM idempotency_ledger AS d
    WHERE d.ctid = ANY (ARRAY(
        SELECT e.ctid
        FROM idempotency_ledger AS e
        WHERE e.expires_at <= @now AND e.expires_at >= @after
          AND (e.state = 'completed' OR e.lease_expires_at <= @now)
        ORDER BY e.expires_at
        LIMIT @batch_size
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING d.expires_at
)
SELECT count(*)::bigint AS deleted, COALESCE(max(p.expires_at), 0)::bigint AS last_expires_at
FROM purged AS p;

-- name: Stats :one
-- Counts rows for the stats command through indexes, never reading the
-- table's rows (reading them all takes seconds on a large table).
--   total: the planner's row count (pg_class.reltuples, as of the last
--     VACUUM or ANALYZE, autovacuum's included), an estimate; an exact
--     count(*) when the table was never analyzed (reltuples < 0);
--     total_estimated says which;
--   the in-flight figures: exact, in one scan of the partial index of
--     in-flight rows and their rows (a scan per figure read them up to four
--     times: the statement read 8,864 buffers with 50,000 records in flight
--     and 150,000 completed, 5,657 in one scan);
--   expired: the entries of the expiry index up to @now (an index-only
--     scan where the visibility map allows), counted up to 100,001 (counting
--     millions takes most of a second); past that the drivers ask the
--     planner for its estimate instead; less the in-flight rows there whose
--     lease still holds;
--   released: exact, the entries of the partial index of released rows;
--   oldest_expires_at: the first expired row in expiry order;
--   oldest and newest created_at: exact, the ends of the created_at index.
WITH f AS (
    SELECT count(*) AS in_flight,
           count(*) FILTER (WHERE f.lease_expires_at <= @now::bigint) AS lease_expired,
           count(*) FILTER (WHERE f.committed_at IS NOT NULL) AS committed,
           count(*) FILTER (WHERE f.expires_at <= @now::bigint AND f.lease_expires_at > @now::bigint) AS expires_passed_leased
    FROM idempotency_ledger AS f
    WHERE f.state = 'in_flight'
)
SELECT
    COALESCE((SELECT CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END
        FROM pg_catalog.pg_class AS c WHERE c.oid = 'idempotency_ledger'::regclass),
        (SELECT count(*) FROM idempotency_ledger))::bigint AS total,
    COALESCE((SELECT c.reltuples >= 0
        FROM pg_catalog.pg_class AS c WHERE c.oid = 'idempotency_ledger'::regclass), false)::boolean AS total_estimated,
    f.in_flight,
    f.lease_expired,
    f.committed,
    -- Through the partial index of released rows (migration 7).
    (SELECT count(*) FROM idempotency_ledger AS r WHERE r.state = 'released') AS released,
    (SELECT count(*) FROM (SELECT 1 FROM idempotency_ledger AS e
        WHERE e.expires_at <= @now::bigint LIMIT 100001) AS capped) AS expires_passed,
    f.expires_passed_leased,
    COALESCE((SELECT o.expires_at FROM idempotency_ledger AS o
        WHERE o.expires_at <= @now::bigint AND (o.state = 'completed' OR o.lease_expires_at <= @now::bigint)
        ORDER BY o.expires_at LIMIT 1), 0)::bigint AS oldest_expires_at,
    COALESCE((SELECT min(c.created_at) FROM idempotency_ledger AS c), 0)::bigint AS oldest_created_at,
    COALESCE((SELECT max(c.created_at) FROM idempotency_ledger AS c), 0)::bigint AS newest_created_at
FROM f;

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
LIMIT @max_rows::bigint;

-- name: ListInFlight :many
-- The records in flight, oldest claim first, for operators
-- (Ledger.InFlight); expired ones included. Reads the partial index of
-- in-flight rows (idemledger_ledger_in_flight_key, schema migration 6),
-- never the completed ones, and sorts the few it finds by claim time.
SELECT scope, key, fingerprint, state, lease_token, lease_expires_at, fence,
       status, headers, body, created_at, completed_at, expires_at, committed_at, kind, failures
FROM idempotency_ledger
WHERE state = 'in_flight'
ORDER BY created_at, scope, key
LIMIT @max_rows::bigint;

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
-- replaced. Affects no row when the lease does not hold. FOR SHARE makes
-- the guard read the record's latest version and hold it until the step
-- commits: a takeover committed meanwhile fails the guard (its new fence),
-- and one that comes after waits, so that it reads the step.
INSERT INTO idempotency_steps (scope, key, name, fingerprint, fence, result, created_at)
SELECT l.scope, l.key, @name::text, l.fingerprint, l.fence, @result::bytea, @now::bigint
FROM idempotency_ledger AS l
WHERE l.scope = @scope AND l.key = @key
  AND l.state = 'in_flight' AND l.lease_token = @lease_token AND l.fence = @fence
FOR SHARE
ON CONFLICT (scope, key, name) DO UPDATE
SET fingerprint = EXCLUDED.fingerprint,
    fence       = EXCLUDED.fence,
    result      = EXCLUDED.result,
    created_at  = EXCLUDED.created_at;

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
-- payload), oldest first; steps another transaction holds wait for the
-- next purge.
DELETE FROM idempotency_steps AS d
WHERE d.ctid = ANY (ARRAY(
    SELECT s.ctid
    FROM idempotency_steps AS s
    WHERE s.created_at <= @before
      AND NOT EXISTS (
        SELECT 1 FROM idempotency_ledger AS l
        WHERE l.scope = s.scope AND l.key = s.key
          AND l.state = 'in_flight' AND l.fingerprint = s.fingerprint
      )
    ORDER BY s.created_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
));

-- name: StepsCount :one
SELECT count(*)::bigint AS steps FROM idempotency_steps;

-- name: FindSteps :many
-- The steps recorded under the key in any scope, for operators.
SELECT scope, key, name, fingerprint, fence, result, created_at
FROM idempotency_steps
WHERE key = @key
ORDER BY scope, created_at, name
LIMIT @max_rows;
