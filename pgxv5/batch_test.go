package pgxv5_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
)

// statementTracer records the first word of every statement pgx traces,
// or the name of an sqlc query.
type statementTracer struct {
	mu   sync.Mutex
	seen []string
}

func (s *statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	sql := strings.TrimSpace(d.SQL)
	if name, ok := strings.CutPrefix(sql, "-- name: "); ok {
		sql = name // sqlc's queries start with their name
	}
	word, _, _ := strings.Cut(sql, " ")
	s.seen = append(s.seen, word)
	return ctx
}

func (*statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statementTracer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = nil
}

func (s *statementTracer) words() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// noConnTx is a pgx.Tx wrapper (a tracing one, say) that does not give
// its connection.
type noConnTx struct{ pgx.Tx }

func (noConnTx) Conn() *pgx.Conn { return nil }

// TestMutateRoundTrips counts the round trips of a transaction around
// Mutate on one connection, in each of pgx's query modes: BEGIN, the
// savepoint with the claim, fn's INSERT, the outcome with RELEASE, COMMIT
// (five, against seven unbatched) where the mode lets the driver batch; a
// replay gets the standing record from its claim statement itself (the
// claim reads before it writes), so it needs no read of its own
// and releases alone: one round trip fewer than the first execution, two in
// the mode that describes every statement first.
func TestMutateRoundTrips(t *testing.T) {
	for _, c := range []struct {
		mode          pgx.QueryExecMode
		noConn        bool // the pgx.Tx does not give its *pgx.Conn
		traced        bool // the connection has a QueryTracer
		first, replay int64
	}{
		{pgx.QueryExecModeCacheStatement, false, false, 5, 4},
		{pgx.QueryExecModeExec, false, false, 5, 4},
		{pgx.QueryExecModeSimpleProtocol, false, false, 5, 4},
		// One statement at a time: describing each new savepoint name in
		// a batch would cost a round trip of its own.
		{pgx.QueryExecModeCacheDescribe, false, false, 7, 5},
		{pgx.QueryExecModeDescribeExec, false, false, 10, 6},
		// No pipeline without the connection, and no pgx.Batch in this
		// mode: one statement at a time.
		{pgx.QueryExecModeCacheStatement, true, false, 7, 5},
		// A tracer must see every statement: one at a time.
		{pgx.QueryExecModeCacheStatement, false, true, 7, 5},
		{pgx.QueryExecModeExec, false, true, 7, 5},
	} {
		name := c.mode.String()
		if c.noConn {
			name += "/no-conn"
		}
		if c.traced {
			name += "/traced"
		}
		t.Run(name, func(t *testing.T) {
			skipUnpooled(t, c.mode)
			_, dsn := testdb.PostgresDSN(t)
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			var writes atomic.Int64
			cfg.MaxConns = 1
			cfg.ConnConfig.DefaultQueryExecMode = c.mode
			testdb.CountWrites(&cfg.ConnConfig.Config, &writes)
			tracer := &statementTracer{}
			if c.traced {
				cfg.ConnConfig.Tracer = tracer
			}
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if _, err := pool.Exec(ctx, `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(pgxv5.New(pool), ledger.Options{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			place := func(key string) (ledger.Result[int64], int64) {
				t.Helper()
				before := writes.Load()
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if c.noConn {
					tx = noConnTx{tx}
				}
				req := ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))}
				res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (id int64, err error) {
					err = tx.QueryRow(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", key).Scan(&id)
					return id, err
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				return res, writes.Load() - before
			}
			place("warm-up") // prepares the statements on the connection
			place("warm-up") // and the replay's read
			for i, want := range []struct {
				res   ledger.Result[int64]
				trips int64
				// traced is what a tracer sees of the transaction: each
				// statement's first word, or its sqlc name.
				traced []string
			}{
				{ledger.Result[int64]{Value: 2, Fence: 1}, c.first,
					[]string{"begin", "SAVEPOINT", "Claim", "INSERT", "Complete", "RELEASE", "commit"}},
				{ledger.Result[int64]{Value: 2, Fence: 1, Replayed: true}, c.replay,
					[]string{"begin", "SAVEPOINT", "Claim", "RELEASE", "commit"}},
			} {
				tracer.reset()
				res, trips := place("k")
				if res != want.res || trips != want.trips {
					t.Errorf("Mutate %d: %+v in %d round trips; want %+v in %d", i+1, res, trips, want.res, want.trips)
				}
				if got := tracer.words(); c.traced && !slices.Equal(got, want.traced) {
					t.Errorf("Mutate %d: the tracer saw %q; want %q", i+1, got, want.traced)
				}
			}
			// Savepoint names are new every time: none is ever prepared
			// (the pool's one connection is the one Mutate ran on).
			var prepared int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement ~* '^(SAVEPOINT|RELEASE)'`).Scan(&prepared); err != nil {
				t.Fatal(err)
			}
			if prepared != 0 {
				t.Errorf("%d savepoint statements prepared on the connection; want 0", prepared)
			}
		})
	}
}

// TestMutateBatchedModes runs a first execution, a replay, a failing fn,
// a lost lease and a nested Mutate in every query mode, for the batched paths that
// the other tests (pgx's default mode) do not take.
func TestMutateBatchedModes(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheDescribe} {
		t.Run(mode.String(), func(t *testing.T) {
			_, dsn := testdb.PostgresDSN(t)
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 2
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			l, err := ledger.New(pgxv5.New(pool), ledger.Options{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			req := func(key string) ledger.Request {
				return ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))}
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var got []string
			for _, key := range []string{"a", "a", "fail", "stolen", "outer"} {
				res, err := ledger.Mutate(ctx, l, tx, req(key), func(ctx context.Context) (string, error) {
					switch key {
					case "fail":
						return "", fmt.Errorf("fn fails")
					case "stolen": // the outcome then finds no lease
						_, err := tx.Exec(ctx, "UPDATE idempotency_ledger SET lease_token = 'x' WHERE key = 'stolen'")
						return "", err
					case "outer":
						inner, err := ledger.Mutate(ctx, l, tx, req("inner"), func(context.Context) (string, error) { return "in", nil })
						return "out+" + inner.Value, err
					}
					return key + "!", nil
				})
				got = append(got, fmt.Sprintf("%s:%q,%v,%v", key, res.Value, res.Replayed, err))
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want := []string{`a:"a!",false,<nil>`, `a:"a!",true,<nil>`, `fail:"",false,fn fails`, `stolen:"",false,ledger: lease lost`, `outer:"out+in",false,<nil>`}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
			var keys string
			if err := pool.QueryRow(ctx, "SELECT string_agg(key || ':' || state, ',' ORDER BY key) FROM idempotency_ledger").Scan(&keys); err != nil {
				t.Fatal(err)
			}
			if keys != "a:completed,inner:completed,outer:completed" {
				t.Errorf("records %s", keys)
			}
		})
	}
}
