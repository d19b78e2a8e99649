package idemhttp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemledger/idemledger/internal/pgdb"
	"github.com/idemledger/idemledger/internal/pgxdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// BenchmarkPostgresPaired measures the replay and TxHandler ratios of
// BENCHMARKS.md on PostgreSQL, through
// database/sql (postgres) and pgx (pgxv5), over loopback HTTP, in a way that
// a machine shared with other jobs disturbs less than BenchmarkClients:
// every client sends one request of each kind in turn (in an order drawn for each turn),
// so that all kinds meet the same load, and the ratios are of the time
// spent in each kind within the same run. The kinds:
//
//   - read: the floor of a replay. One plain SELECT of the very ledger row
//     that replay replays (status, headers, body, by primary key), on the
//     same pool, answered with the stored status and body (no fingerprint,
//     no record decoded, no replayed headers);
//   - decide: the floor of a claim in one statement. One statement, on the
//     same pool, that reads the same row and computes the claim's
//     decision from it with the Claim query's parameters (scope, key,
//     fingerprint, recover, now: pairedDecideSQL), returning the decision
//     and what an answer needs; no write, no function call. Answered as
//     read answers;
//   - decide-fp: decide with the work the idempotency contract asks of
//     every replay before the statement: the key parsed from its header,
//     the body read and fingerprinted (Middleware's default fingerprint:
//     canonical JSON and SHA-256), and the answer carrying the stored
//     header lines and the replay marker. What is left between it and
//     replay is the ledger's and Middleware's own machinery;
//   - claim-fp: decide-fp with the ledger's own Claim statement in place
//     of pairedDecideSQL, run on the pool as the driver runs it (the
//     parameters a claim in lease mode sends, a lock timeout included),
//     and answered from its row: the statement's cost without the
//     ledger's and Middleware's Go around it;
//   - replay: Middleware answering a stored key;
//   - first: Middleware with a fresh key, the handler inserting an order
//     in autocommit;
//   - bare-tx: the floor of a TxHandler: BEGIN, the same INSERT, COMMIT;
//   - tx-first, tx-replay: TxHandler with a fresh key and a stored one;
//   - tx-floor, tx-floor-row, tx-read: their floors (pairedFloors), the
//     same statements and round trips without the ledger's logic;
//     tx-floor writes a two-column row, tx-floor-row a row of the ledger's
//     own shape into a table of its columns and indexes;
//   - replay-off, first-off, tx-first-off, tx-replay-off: replay, first,
//     tx-first and tx-replay through a ledger on the same database with
//     its cache of completed outcomes off (ledger.CacheOff), the others
//     having it on (the default): a replay that reads the database;
//   - http-floor: no database at all, the replay's answer written as
//     constants: the floor of the HTTP exchange itself.
//
// Metrics: "<kind>-us" is the mean wall time of one request of the kind
// (one client's view); "A/B" for each pair of pairedRatios is B's time
// over A's, A's throughput relative to B's: "replay/read" is the
// replay's relative to a plain read, 1 at the read's rate, above 1
// faster. ns/op is the wall time of one turn, all clients together.
//
//	IDEMLEDGER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go test -run '^$' -bench '^BenchmarkPostgresPaired$' -benchtime 2000x -count 6 ./idemhttp/
func BenchmarkPostgresPaired(b *testing.B) {
	b.Run("driver=postgres", func(b *testing.B) {
		e := postgresClientsEnv(b)
		db := e.sqlDB
		for _, t := range pairedFloorTables {
			if _, err := db.Exec(t); err != nil {
				b.Fatal(err)
			}
		}
		runPaired(b, e, func(ctx context.Context, scope, key string) (int, []byte, error) {
			var status int
			var headers, body []byte
			err := db.QueryRowContext(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body)
			return status, body, err
		}, pairedFloors{
			floor: func(ctx context.Context, fw pairedFloorWrite, key, body string) (id int64, err error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return 0, err
				}
				defer tx.Rollback()
				for _, q := range []struct {
					sql  string
					args []any
				}{{"SAVEPOINT f", nil}, {fw.insert, fw.insertArgs(key, body)}} {
					if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
						return 0, err
					}
				}
				if err := tx.QueryRowContext(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id); err != nil {
					return 0, err
				}
				if _, err := tx.ExecContext(ctx, fw.update, fw.updateArgs(key, body, id)...); err != nil {
					return 0, err
				}
				if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT f"); err != nil {
					return 0, err
				}
				return id, tx.Commit()
			},
			read: func(ctx context.Context, scope, key string) (status int, body []byte, err error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return 0, nil, err
				}
				defer tx.Rollback()
				var headers []byte
				if err := tx.QueryRowContext(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body); err != nil {
					return 0, nil, err
				}
				return status, body, tx.Commit()
			},
			decide: func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error) {
				var d pairedDecision
				err := db.QueryRowContext(ctx, pairedDecideSQL, scope, key, fp, false, nil).Scan(d.dest()...)
				return d.answer(err)
			},
			claim: func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error) {
				c := claimParams()
				row, err := pgdb.New(db).Claim(ctx, pgdb.ClaimParams{
					ValidUntil: sql.NullInt64{Int64: c.validUntil, Valid: true}, LockTimeout: sql.NullString{String: c.lockTimeout, Valid: true},
					Fingerprint: fp, Scope: scope, Key: key, LeaseToken: c.token, LeaseMillis: c.leaseMillis, TtlMillis: c.ttl,
				})
				return pairedClaimAnswer(row.State, row.Status, row.Body, err)
			},
		})
	})
	b.Run("driver=pgxv5", func(b *testing.B) {
		e := pgxClientsEnv(b)
		pool := e.pool
		for _, t := range pairedFloorTables {
			if _, err := pool.Exec(context.Background(), t); err != nil {
				b.Fatal(err)
			}
		}
		runPaired(b, e, func(ctx context.Context, scope, key string) (int, []byte, error) {
			var status int
			var headers, body []byte
			err := pool.QueryRow(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body)
			return status, body, err
		}, pairedFloors{
			floor: func(ctx context.Context, fw pairedFloorWrite, key, body string) (id int64, err error) {
				c, err := pool.Acquire(ctx)
				if err != nil {
					return 0, err
				}
				// An error leaves the connection in a transaction, and
				// pgxpool then drops it.
				defer c.Release()
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				batch.Queue("SAVEPOINT f")
				batch.Queue(fw.insert, fw.insertArgs(key, body)...)
				if err := c.SendBatch(ctx, batch).Close(); err != nil {
					return 0, err
				}
				if err := c.QueryRow(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id); err != nil {
					return 0, err
				}
				batch = &pgx.Batch{}
				batch.Queue(fw.update, fw.updateArgs(key, body, id)...)
				batch.Queue("RELEASE SAVEPOINT f")
				batch.Queue("COMMIT")
				return id, c.SendBatch(ctx, batch).Close()
			},
			read: func(ctx context.Context, scope, key string) (status int, body []byte, err error) {
				c, err := pool.Acquire(ctx)
				if err != nil {
					return 0, nil, err
				}
				defer c.Release()
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				var headers []byte
				batch.Queue(pairedReadSQL, scope, key).QueryRow(func(row pgx.Row) error {
					return row.Scan(&status, &headers, &body)
				})
				if err := c.SendBatch(ctx, batch).Close(); err != nil {
					return 0, nil, err
				}
				_, err = c.Exec(ctx, "COMMIT")
				return status, body, err
			},
			decide: func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error) {
				var d pairedDecision
				err := pool.QueryRow(ctx, pairedDecideSQL, scope, key, fp, false, nil).Scan(d.dest()...)
				return d.answer(err)
			},
			claim: func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error) {
				c := claimParams()
				row, err := pgxdb.New(pool).Claim(ctx, pgxdb.ClaimParams{
					ValidUntil: pgtype.Int8{Int64: c.validUntil, Valid: true}, LockTimeout: pgtype.Text{String: c.lockTimeout, Valid: true},
					Fingerprint: fp, Scope: scope, Key: key, LeaseToken: c.token, LeaseMillis: c.leaseMillis, TtlMillis: c.ttl,
				})
				return pairedClaimAnswer(row.State, row.Status, row.Body, err)
			},
		})
	})
}

// BenchmarkSQLitePaired is BenchmarkPostgresPaired's method on SQLite
// (synchronous FULL, the default), with the kinds that need no PostgreSQL
// statement: read (the same plain SELECT of the ledger row), replay,
// first, bare-tx, tx-first and tx-replay, and each of the ledger's kinds
// again through a ledger with its cache off ("-off").
//
//	go test -run '^$' -bench '^BenchmarkSQLitePaired$' -benchtime 2000x -count 6 ./idemhttp/
func BenchmarkSQLitePaired(b *testing.B) {
	e := sqliteClientsEnv(b, sqlite.SynchronousFull)
	db := e.sqlDB
	runPairedKinds(b, e, func(ctx context.Context, scope, key string) (int, []byte, error) {
		var status int
		var headers, body []byte
		err := db.QueryRowContext(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body)
		return status, body, err
	}, pairedFloors{}, sqlitePairedKinds, sqlitePairedRatios)
}

// pairedReadSQL reads what a replay answers from, as an application would
// read a row of its own.
const pairedReadSQL = `SELECT status, headers, body FROM idempotency_ledger WHERE scope = $1 AND key = $2`

// pairedKinds are BenchmarkPostgresPaired's kinds, and pairedRatios the
// ratios it reports: the first kind's time over the second's.
var (
	pairedKinds = []string{"read", "decide", "decide-fp", "claim-fp", "replay", "first", "bare-tx", "tx-first", "tx-replay",
		"tx-floor", "tx-floor-row", "tx-read", "replay-off", "first-off", "tx-first-off", "tx-replay-off", "http-floor"}
	pairedRatios = [][2]string{{"read", "replay"}, {"decide", "replay"}, {"read", "decide"},
		{"decide-fp", "replay"}, {"read", "decide-fp"},
		{"decide-fp", "claim-fp"}, {"claim-fp", "replay-off"},
		{"bare-tx", "tx-first"}, {"replay", "tx-replay"},
		{"tx-floor", "tx-first"}, {"bare-tx", "tx-floor"}, {"tx-floor-row", "tx-first"}, {"bare-tx", "tx-floor-row"},
		{"tx-read", "tx-replay"}, {"replay", "tx-read"},
		{"read", "replay-off"}, {"decide-fp", "replay-off"}, {"replay-off", "replay"}, {"first-off", "first"},
		{"tx-first-off", "tx-first"}, {"tx-replay-off", "tx-replay"}, {"bare-tx", "first"},
		{"http-floor", "replay"}, {"http-floor", "read"}}
	// sqlitePairedKinds and sqlitePairedRatios are BenchmarkSQLitePaired's:
	// those of pairedKinds that need no PostgreSQL statement.
	sqlitePairedKinds = []string{"read", "replay", "first", "bare-tx", "tx-first", "tx-replay",
		"replay-off", "first-off", "tx-first-off", "tx-replay-off", "http-floor"}
	sqlitePairedRatios = [][2]string{{"read", "replay"}, {"read", "replay-off"}, {"replay-off", "replay"},
		{"first-off", "first"}, {"tx-first-off", "tx-first"}, {"tx-replay-off", "tx-replay"}, {"replay", "tx-replay"},
		{"bare-tx", "first"}, {"bare-tx", "tx-first"}, {"http-floor", "replay"}, {"http-floor", "read"}}
)

// pairedDecideSQL is the decide kind's statement: it reads the row a
// claim reads and computes the claim's decision from it, with the Claim
// query's parameters ($1 scope, $2 key, $3 fingerprint, $4 recover, $5
// now, NULL for the server's clock) and the same rule (queries/postgres/
// ledger.sql, Claim; ledger's standing), in standing's order: "open" (a
// claim would write), "reused", "committed", "in_flight", "replay". It
// returns the decision and what an answer needs (the clock and the lease
// for in_flight; status, headers, body and kind for a replay), and
// nothing else: no write, no function call, no won lease, not the rest of
// the record (fence, times, fingerprint) that the ledger returns in
// Claim.Replay. It is what every claim made in one statement must do at
// least, so a replay's floor when the claim stays one statement.
const pairedDecideSQL = `SELECT CASE
         WHEN (c.expires_at <= clock.now AND (c.state = 'completed' OR c.lease_expires_at <= clock.now))
           OR (c.state = 'in_flight' AND c.lease_expires_at <= clock.now AND c.fingerprint = $3::bytea
               AND (c.committed_at IS NULL OR $4::boolean)) THEN 'open'
         WHEN c.fingerprint <> $3::bytea THEN 'reused'
         WHEN c.state = 'in_flight' AND c.lease_expires_at <= clock.now THEN 'committed'
         WHEN c.state = 'in_flight' THEN 'in_flight'
         ELSE 'replay'
       END AS decision,
       clock.now,
       COALESCE(c.lease_expires_at, 0)::bigint AS lease_expires_at,
       COALESCE(c.status, 0)::bigint AS status,
       c.headers,
       c.body,
       COALESCE(c.kind, '')::text AS kind
FROM (
    SELECT COALESCE($5::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint) AS now
) AS clock, idempotency_ledger AS c
WHERE c.scope = $1::text AND c.key = $2::text`

// pairedDecision is the row of pairedDecideSQL. Every column is scanned,
// as a claim's answer is, though a replay's answer uses status and body.
type pairedDecision struct {
	decision, kind string
	now, lease     int64
	status         int64
	headers, body  []byte
}

func (d *pairedDecision) dest() []any {
	return []any{&d.decision, &d.now, &d.lease, &d.status, &d.headers, &d.body, &d.kind}
}

// answer is what the decide kind answers with: the stored status and body
// of a replay, or an error for any other decision (the benchmark's key is
// always a replay, so one means the floor does not do the replay's work).
func (d *pairedDecision) answer(err error) (int, []byte, error) {
	if err == nil && d.decision != "replay" {
		err = fmt.Errorf("decide: %s, not a replay", d.decision)
	}
	return int(d.status), d.body, err
}

// pairedFloors are a driver's floors besides read: floor does what a
// TxHandler first request's transaction does without the ledger's logic,
// in the same round trips as TxHandler on that driver (BEGIN, SAVEPOINT,
// fw's INSERT, the order's INSERT, fw's UPDATE of that row, RELEASE,
// COMMIT: batched into three round trips on pgx, seven on database/sql);
// read reads the replayed row in a transaction of its own (BEGIN with the
// SELECT on pgx, then COMMIT); decide runs pairedDecideSQL on the pool
// with the stored record's fingerprint.
type pairedFloors struct {
	floor  func(ctx context.Context, fw pairedFloorWrite, key, body string) (int64, error)
	read   func(ctx context.Context, scope, key string) (int, []byte, error)
	decide func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error)
	// claim runs the Claim query as the driver does (claim-fp), with
	// the parameters claimParams gives.
	claim func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error)
}

// pairedClaim is what the claim-fp kind sends as the Claim query's
// parameters besides scope, key and fingerprint: those of a claim in lease
// mode with the ledger's defaults (a 30 s lease, a day's TTL, 5 s to
// answer: the lock timeout and the latest clock the claim may write at).
type pairedClaim struct {
	token            string
	leaseMillis, ttl int64
	validUntil       int64
	lockTimeout      string
}

func claimParams() pairedClaim {
	return pairedClaim{token: "paired-token", leaseMillis: 30_000, ttl: 86_400_000,
		validUntil: time.Now().Add(5*time.Second + ledger.MaxClockSkew).UnixMilli(), lockTimeout: "4000ms"}
}

// pairedClaimAnswer is claim-fp's answer from the Claim query's row: its
// status and body when it replays, else an error (the benchmark's key is
// always a replay).
func pairedClaimAnswer(state string, status int64, body []byte, err error) (int, []byte, error) {
	if err == nil && state != "completed" {
		err = fmt.Errorf("claim: state %q, not a replay", state)
	}
	return int(status), body, err
}

// pairedFloorWrite is the row a floor writes beside the order: an INSERT
// before it, an UPDATE after it (which may store the order's answer).
type pairedFloorWrite struct {
	insert, update string
	insertArgs     func(key, body string) []any
	updateArgs     func(key, body string, id int64) []any
}

var pairedFloorTables = []string{
	`CREATE TABLE floor (k text PRIMARY KEY, v bytea)`,
	// The ledger's twin: its columns, constraints and four indexes
	// (primary key, expiry, in flight, created_at), none of its data.
	`CREATE TABLE floor_ledger (LIKE idempotency_ledger INCLUDING ALL)`,
}

var (
	// pairedTwoColumns is tx-floor's row: a key, then the request's body.
	pairedTwoColumns = pairedFloorWrite{
		insert:     `INSERT INTO floor (k) VALUES ($1)`,
		insertArgs: func(key, _ string) []any { return []any{key} },
		update:     `UPDATE floor SET v = $2 WHERE k = $1`,
		updateArgs: func(key, body string, _ int64) []any { return []any{key, []byte(body)} },
	}
	// pairedLedgerRow is tx-floor-row's: the rows the ledger writes, in
	// plain statements. The INSERT is a claim's in-flight row (a 32-byte
	// fingerprint, a 32-character lease token, the lease and expiry from
	// the client's clock, fence 1; the outcome NULL); the UPDATE stores
	// an outcome as the ledger's Complete does: state, lease, status,
	// headers (the JSON of the answer's Content-Type and Location), body,
	// kind, completed_at and expires_at, which moves the row out of the
	// in-flight index and along the expiry index as Complete does. Not
	// in it: the claim's reading and deciding, its function, the
	// outcome's lease check and guard, and the server's clock.
	pairedLedgerRow = pairedFloorWrite{
		insert: `INSERT INTO floor_ledger (scope, key, fingerprint, state, lease_token, lease_expires_at, fence, created_at, expires_at)
VALUES ($1, $2, $3, 'in_flight', $4, $5, 1, $6, $7)`,
		insertArgs: func(key, body string) []any {
			fp := sha256.Sum256([]byte(body))
			var token [16]byte
			rand.Read(token[:])
			now := time.Now().UnixMilli()
			return []any{"tenant-1", key, fp[:], hex.EncodeToString(token[:]),
				now + time.Minute.Milliseconds(), now, now + 24*time.Hour.Milliseconds()}
		},
		update: `UPDATE floor_ledger SET state = 'completed', lease_token = NULL, lease_expires_at = NULL,
    status = $3, headers = $4, body = $5, kind = 'http', completed_at = $6, expires_at = $7
WHERE scope = $1 AND key = $2`,
		updateArgs: func(key, _ string, id int64) []any {
			n := strconv.FormatInt(id, 10)
			headers, _ := json.Marshal(http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/" + n}})
			now := time.Now().UnixMilli()
			return []any{"tenant-1", key, int64(http.StatusCreated), headers, []byte(`{"id":` + n + `,"status":"created"}`),
				now, now + 24*time.Hour.Milliseconds()}
		},
	}
)

func runPaired[TTx any](b *testing.B, e *clientsEnv[TTx], read func(ctx context.Context, scope, key string) (int, []byte, error), fl pairedFloors) {
	runPairedKinds(b, e, read, fl, pairedKinds, pairedRatios)
}

// runPairedKinds is runPaired with the kinds sent in each turn and the
// ratios reported.
func runPairedKinds[TTx any](b *testing.B, e *clientsEnv[TTx], read func(ctx context.Context, scope, key string) (int, []byte, error), fl pairedFloors, kinds []string, ratios [][2]string) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			replayKey := fmt.Sprintf("paired-%d", benchKeys.Add(1))
			txReplayKey := replayKey + "-tx"
			// The cache-off kinds replay keys of their own, stored through
			// the ledger without the cache: each ledger reads a record
			// once before it may keep it.
			offKey, txOffKey := replayKey+"-off", replayKey+"-tx-off"
			// The fingerprint the replayed key's record holds: Middleware's
			// of the requests send sends.
			fpReq := httptest.NewRequest("POST", "/orders", nil)
			fpReq.Header.Set("Content-Type", "application/json")
			fp, _ := fingerprint(fpReq, []byte(benchBody))
			// answer answers as read answers, from what a floor read.
			answer := func(w http.ResponseWriter, status int, body []byte, err error) {
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				w.Write(body)
			}
			// withContract answers from statement, a floor's claim of
			// the replayed key, with the work the contract asks of every
			// replay around it (decide-fp, claim-fp).
			withContract := func(statement func(ctx context.Context, scope, key string, fp []byte) (int, []byte, error)) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if _, err := ParseKey(r.Header, KeyRules{}); err != nil {
						http.Error(w, err.Error(), 400)
						return
					}
					in, _ := io.ReadAll(r.Body)
					fp, _ := fingerprint(r, in)
					status, body, err := statement(r.Context(), "tenant-1", replayKey, fp[:])
					if err == nil {
						w.Header().Set("Location", "/orders/1")
						w.Header().Set(DefaultReplayHeader, "true")
					}
					answer(w, status, body, err)
				})
			}
			handlers := map[string]http.Handler{
				"read": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					status, body, err := read(r.Context(), "tenant-1", replayKey)
					answer(w, status, body, err)
				}),
				"decide": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					status, body, err := fl.decide(r.Context(), "tenant-1", replayKey, fp[:])
					answer(w, status, body, err)
				}),
				"decide-fp": withContract(fl.decide),
				"claim-fp":  withContract(fl.claim),
				"http-floor": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Location", "/orders/1")
					w.Header().Set(DefaultReplayHeader, "true")
					answer(w, http.StatusCreated, []byte(`{"id":1,"status":"created"}`), nil)
				}),
				"replay":        Middleware(e.l, benchOptions())(e.handler()),
				"first":         Middleware(e.l, benchOptions())(e.handler()),
				"replay-off":    Middleware(e.off, benchOptions())(e.handler()),
				"first-off":     Middleware(e.off, benchOptions())(e.handler()),
				"bare-tx":       e.bareTx(),
				"tx-first":      e.txHandler(),
				"tx-replay":     e.txHandler(),
				"tx-first-off":  e.txHandlerOn(e.off),
				"tx-replay-off": e.txHandlerOn(e.off),
				"tx-floor": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					in, _ := io.ReadAll(r.Body)
					id, err := fl.floor(r.Context(), pairedTwoColumns, fmt.Sprintf("floor-%d", benchKeys.Add(1)), string(in))
					answerOrder(w, id, err)
				}),
				"tx-floor-row": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					in, _ := io.ReadAll(r.Body)
					id, err := fl.floor(r.Context(), pairedLedgerRow, fmt.Sprintf("floor-%d", benchKeys.Add(1)), string(in))
					answerOrder(w, id, err)
				}),
				"tx-read": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					status, body, err := fl.read(r.Context(), "tenant-1", txReplayKey)
					answer(w, status, body, err)
				}),
			}
			urls := make(map[string]string)
			for name, h := range handlers {
				srv := httptest.NewServer(h)
				b.Cleanup(srv.Close)
				urls[name] = srv.URL
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			send := func(kind string) error {
				key := ""
				switch kind {
				case "replay", "decide-fp", "claim-fp":
					key = replayKey
				case "tx-replay":
					key = txReplayKey
				case "replay-off":
					key = offKey
				case "tx-replay-off":
					key = txOffKey
				case "first", "tx-first", "first-off", "tx-first-off":
					key = fmt.Sprintf("paired-%d", benchKeys.Add(1))
				}
				req, _ := http.NewRequest("POST", urls[kind]+"/orders", strings.NewReader(benchBody))
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set(HeaderName, key)
				}
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				replayed := resp.Header.Get(DefaultReplayHeader) == "true"
				switch {
				case resp.StatusCode != http.StatusCreated:
					return fmt.Errorf("%s: status %d", kind, resp.StatusCode)
				case replayed != (strings.Contains(kind, "replay") || strings.HasSuffix(kind, "-fp") || kind == "http-floor"):
					return fmt.Errorf("%s: replayed %v", kind, replayed)
				}
				return nil
			}
			// The stored answers; their first runs are not replays.
			for _, kind := range []string{"replay", "tx-replay", "replay-off", "tx-replay-off"} {
				if err := sendAs(send, kind); err != nil {
					b.Fatal(err)
				}
			}
			// Warm every client's connections and the pools.
			if err := turns(clients, 2*clients, kinds, send, nil); err != nil {
				b.Fatal(err)
			}
			spent := make([]atomic.Int64, len(kinds))
			b.ResetTimer()
			err := turns(clients, b.N, kinds, send, spent)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			index := make(map[string]int)
			for i, k := range kinds {
				index[k] = i
				b.ReportMetric(float64(spent[i].Load())/float64(b.N)/1e3, k+"-us")
			}
			for _, r := range ratios {
				b.ReportMetric(float64(spent[index[r[0]]].Load())/float64(spent[index[r[1]]].Load()), r[1]+"/"+r[0])
			}
		})
	}
}

// sendAs sends the first request of a replayed kind: the one that is
// stored, and so not a replay. The first kind's request stands in for it.
func sendAs(send func(string) error, kind string) error {
	err := send(kind)
	if err != nil && strings.HasSuffix(err.Error(), "replayed false") {
		return nil
	}
	return err
}

// turns runs n turns on clients goroutines; a turn sends one request of
// every kind of kinds, in an order drawn for the turn. spent, when not
// nil, adds up each kind's wall time.
func turns(clients, n int, kinds []string, send func(string) error, spent []atomic.Int64) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				// Each turn sends the kinds in an order of its own, so that
				// no kind always follows the same one: a kind after a write
				// meets its tail (the server's, the pool's, the garbage it
				// left), and a fixed rotation put each kind after one
				// neighbour only.
				order := mrand.New(mrand.NewPCG(uint64(i), 37)).Perm(len(kinds))
				for _, k := range order {
					start := time.Now()
					if err := send(kinds[k]); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
					if spent != nil {
						spent[k].Add(int64(time.Since(start)))
					}
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
