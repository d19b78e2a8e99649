package pgxv5_test

import (
	"context"
	"errors"
	"fmt"
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

// commitPool is a pool of one connection in mode, counting round trips,
// traced or not, with an orders table whose deferred check fails at COMMIT
// for the item "bad".
func commitPool(t *testing.T, mode pgx.QueryExecMode, traced bool) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	_, dsn := testdb.PostgresDSN(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	cfg.MaxConns = 1
	cfg.ConnConfig.DefaultQueryExecMode = mode
	testdb.CountWrites(&cfg.ConnConfig.Config, &writes)
	if traced {
		cfg.ConnConfig.Tracer = &statementTracer{}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, stmt := range []string{
		`CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)`,
		`INSERT INTO orders (item) VALUES ('bad')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return pool, &writes
}

// commitOnce runs one MutateOutcomeCommit, as TxHandler does, whose fn
// inserts item; it returns the result and the round trips it took.
func commitOnce(t *testing.T, d *pgxv5.Driver, l *ledger.Ledger[pgx.Tx], writes *atomic.Int64, key, item string, fp string, before func(tx pgx.Tx)) (ledger.Result[ledger.Outcome], error, int64) {
	t.Helper()
	ctx := context.Background()
	start := writes.Load()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Rollback(ctx, tx)
	req := ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(fp))}
	res, err := ledger.MutateOutcomeCommit(ctx, l, tx, req, func(ctx context.Context) (ledger.Outcome, error) {
		if before != nil {
			before(tx)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO orders (item) VALUES ($1)", item); err != nil {
			return ledger.Outcome{}, err
		}
		return ledger.Outcome{Kind: "http", Status: 201, Body: []byte(item)}, nil
	})
	return res, err, writes.Load() - start
}

// TestMutateOutcomeCommitRoundTrips: with the driver's own transaction,
// MutateOutcomeCommit sends BEGIN with the savepoint and the claim, and the
// outcome and RELEASE with the COMMIT, so a first execution costs the three
// round trips of a plain transaction doing fn's INSERT, and a replay from
// the database two; with a Tracer, every statement goes alone. With the
// cache on, the replay right after the first execution is answered from
// memory: no round trip (with a Tracer, the BEGIN and the COMMIT).
func TestMutateOutcomeCommitRoundTrips(t *testing.T) {
	for _, c := range []struct {
		mode                  pgx.QueryExecMode
		traced                bool
		first, replay, cached int64
	}{
		{pgx.QueryExecModeCacheStatement, false, 3, 2, 0},
		{pgx.QueryExecModeExec, false, 3, 2, 0},
		{pgx.QueryExecModeSimpleProtocol, false, 3, 2, 0},
		// BEGIN, SAVEPOINT, claim, INSERT, outcome, RELEASE, COMMIT;
		// BEGIN, SAVEPOINT, claim, COMMIT; BEGIN, COMMIT.
		{pgx.QueryExecModeCacheStatement, true, 7, 4, 2},
		{pgx.QueryExecModeExec, true, 7, 4, 2},
	} {
		name := c.mode.String()
		if c.traced {
			name += "/traced"
		}
		t.Run(name, func(t *testing.T) {
			skipUnpooled(t, c.mode)
			ctx := context.Background()
			pool, writes := commitPool(t, c.mode, c.traced)
			d := pgxv5.New(pool)
			l, err := ledger.New(d, ledger.Options{TTL: time.Hour, CacheBytes: ledger.CacheOff})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cached, err := ledger.New(d, ledger.Options{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer cached.Close()
			plain := func(item string) int64 {
				start := writes.Load()
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO orders (item) VALUES ($1)", item); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				return writes.Load() - start
			}
			// Warm up: statements prepared, descriptions cached.
			plain("warm-plain")
			for range 2 {
				if _, err, _ := commitOnce(t, d, l, writes, "warm", "warm", "warm", nil); err != nil {
					t.Fatal(err)
				}
			}
			if n := plain("plain"); n != 3 {
				t.Errorf("plain transaction: %d round trips; want 3", n)
			}
			res, err, n := commitOnce(t, d, l, writes, "k", "first", "k", nil)
			if err != nil || res.Replayed || n != c.first {
				t.Errorf("first: %+v, %v in %d round trips; want %d", res, err, n, c.first)
			}
			res, err, n = commitOnce(t, d, l, writes, "k", "again", "k", nil)
			if err != nil || !res.Replayed || string(res.Value.Body) != "first" || n != c.replay {
				t.Errorf("replay: %+v, %v in %d round trips; want %d", res, err, n, c.replay)
			}
			res, err, n = commitOnce(t, d, cached, writes, "m", "first-m", "m", nil)
			if err != nil || res.Replayed || n != c.first {
				t.Errorf("first, cache on: %+v, %v in %d round trips; want %d", res, err, n, c.first)
			}
			res, err, n = commitOnce(t, d, cached, writes, "m", "again-m", "m", nil)
			if err != nil || !res.Replayed || string(res.Value.Body) != "first-m" || n != c.cached {
				t.Errorf("replay, cache on: %+v, %v in %d round trips; want %d", res, err, n, c.cached)
			}
		})
	}
}

// TestMutateOutcomeCommitFailures: every way a MutateOutcomeCommit can end
// leaves the same answer and the same rows whether its statements are
// batched (pgx's default mode) or go one by one (a Tracer).
func TestMutateOutcomeCommitFailures(t *testing.T) {
	run := func(t *testing.T, traced bool) []string {
		ctx := context.Background()
		pool, writes := commitPool(t, pgx.QueryExecModeCacheStatement, traced)
		d := pgxv5.New(pool)
		l, err := ledger.New(d, ledger.Options{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var got []string
		note := func(step string, res ledger.Result[ledger.Outcome], err error) {
			var state string
			var orders int
			if err := pool.QueryRow(ctx, `SELECT COALESCE(string_agg(key || ':' || state || ':' || fence, ',' ORDER BY key), ''), (SELECT count(*) FROM orders) FROM idempotency_ledger`).Scan(&state, &orders); err != nil {
				t.Fatal(err)
			}
			kind := "ok"
			switch {
			case errors.Is(err, ledger.ErrInFlight):
				kind = "in flight"
			case errors.Is(err, ledger.ErrKeyReused):
				kind = "key reused"
			case errors.Is(err, ledger.ErrLeaseLost):
				kind = "lease lost"
			case err != nil:
				kind = err.Error()
			}
			got = append(got, fmt.Sprintf("%s: %s replayed=%v body=%q records=%s orders=%d", step, kind, res.Replayed, res.Value.Body, state, orders))
		}
		res, err, _ := commitOnce(t, d, l, writes, "a", "a1", "a", nil)
		note("first", res, err)
		res, err, _ = commitOnce(t, d, l, writes, "a", "a2", "a", nil)
		note("conflict replays", res, err)
		res, err, _ = commitOnce(t, d, l, writes, "a", "a3", "other", nil)
		note("fingerprint mismatch", res, err)
		if _, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: "held", Fingerprint: hash.Bytes([]byte("held"))}); err != nil {
			t.Fatal(err)
		}
		res, err, _ = commitOnce(t, d, l, writes, "held", "h1", "held", nil)
		note("in flight", res, err)
		res, err, _ = commitOnce(t, d, l, writes, "stolen", "s1", "stolen", func(tx pgx.Tx) {
			// The outcome's UPDATE then finds no lease.
			if _, err := tx.Exec(ctx, "UPDATE idempotency_ledger SET lease_token = 'x' WHERE key = 'stolen'"); err != nil {
				t.Fatal(err)
			}
		})
		note("failing outcome write", res, err)
		res, err, _ = commitOnce(t, d, l, writes, "bad", "bad", "bad", nil)
		if err != nil {
			// The COMMIT's error: the deferred unique check.
			var pgErr interface{ SQLState() string }
			if errors.As(err, &pgErr) && pgErr.SQLState() == "23505" {
				err = errors.New("commit: unique violation")
			}
		}
		note("failing commit", res, err)
		res, err, _ = commitOnce(t, d, l, writes, "bad", "b2", "bad", nil)
		note("after the failed commit, a retry runs", res, err)
		return got
	}
	batched := run(t, false)
	oneByOne := run(t, true)
	for i := range max(len(batched), len(oneByOne)) {
		var b, o string
		if i < len(batched) {
			b = batched[i]
		}
		if i < len(oneByOne) {
			o = oneByOne[i]
		}
		if b != o {
			t.Errorf("batched:    %s\none by one: %s", b, o)
		} else {
			t.Log(b)
		}
	}
}
