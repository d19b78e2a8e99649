package pgxv5_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
)

// allModes are pgx's query modes.
var allModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
}

// skipUnpooled skips a test of mode when the tests run through a pooler
// in transaction mode (PgBouncer before 1.21, as .ci/pgbouncer runs it),
// where the mode cannot work, and says why: each transaction or statement
// outside one may run on another server connection. Measured with
// PgBouncer 1.18 and 8 clients: cache_statement prepares named statements
// on one server connection and finds them missing, or already there, on
// the next (SQLSTATE 26000 and 42P05); describe_exec parses an unnamed
// statement in one exchange and binds it in the next, which may reach
// another client's unnamed statement: bind errors, or another statement
// run with these arguments. docs/engines.md, "Behind a pooler", has the table.
func skipUnpooled(t *testing.T, mode pgx.QueryExecMode) {
	t.Helper()
	if testdb.Pooling() != "transaction" {
		return
	}
	switch mode {
	case pgx.QueryExecModeCacheStatement:
		t.Skip("transaction pooling keeps no prepared statement between transactions: use cache_describe, exec or simple_protocol (or PgBouncer >= 1.21 with max_prepared_statements)")
	case pgx.QueryExecModeDescribeExec:
		t.Skip("transaction pooling may bind describe_exec's unnamed statement on another server connection: use cache_describe, exec or simple_protocol")
	}
}

// TestQueryModesConcurrently: eight clients at once, each Mutate (a first
// run and its replay) and lease mode (Claim, Complete, a replayed Claim)
// on keys of its own, in every query mode. Through a pooler in
// transaction mode their transactions and statements share and swap
// server connections, which a test of one client at a time never shows.
func TestQueryModesConcurrently(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			skipUnpooled(t, mode)
			_, dsn := testdb.PostgresDSN(t)
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 8
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
			var wg sync.WaitGroup
			for c := range 8 {
				wg.Go(func() {
					for i := range 25 {
						if err := clientStep(ctx, pool, l, fmt.Sprintf("c%d-%d", c, i)); err != nil {
							t.Errorf("client %d, step %d: %v", c, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

func clientStep(ctx context.Context, pool *pgxpool.Pool, l *ledger.Ledger[pgx.Tx], key string) error {
	req := ledger.Request{Scope: "s", Key: "tx-" + key, Fingerprint: hash.Bytes([]byte(key))}
	for run := range 2 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (string, error) { return "v-" + key, nil })
		if err == nil {
			err = tx.Commit(ctx)
		}
		tx.Rollback(ctx)
		if err != nil {
			return fmt.Errorf("Mutate %d: %w", run+1, err)
		}
		if res.Value != "v-"+key || res.Replayed != (run == 1) {
			return fmt.Errorf("Mutate %d: %+v", run+1, res)
		}
	}
	req.Key = "lease-" + key
	c, err := l.Claim(ctx, req)
	if err != nil {
		return fmt.Errorf("Claim: %w", err)
	}
	if err := l.Complete(ctx, c, ledger.Outcome{Status: 201, Body: []byte(key)}); err != nil {
		return fmt.Errorf("Complete: %w", err)
	}
	again, err := l.Claim(ctx, req)
	if err != nil {
		return fmt.Errorf("replayed Claim: %w", err)
	}
	if !again.Replayed() || string(again.Replay.Outcome.Body) != key {
		return fmt.Errorf("replayed Claim: not the stored outcome")
	}
	return nil
}

// TestUnpooledModesNameTheFix: through a pooler in transaction mode, the
// two query modes that cannot work there (see skipUnpooled) fail with an
// error that names the query modes that do, for every operation, Mutate's
// and lease mode's alike, and never with an outcome reported unknown: the
// server refused the statement before running it (a prepared statement
// missing or already there; describe_exec's Bind refused, SQLSTATE 08P01,
// when it reached another client's unnamed statement).
func TestUnpooledModesNameTheFix(t *testing.T) {
	if testdb.Pooling() != "transaction" {
		t.Skip("these modes work without a pooler in transaction mode (.ci/pgbouncer runs this test through one)")
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			_, dsn := testdb.PostgresDSN(t)
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 8
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
			var (
				mu     sync.Mutex
				failed int
			)
			var wg sync.WaitGroup
			for c := range 8 {
				wg.Go(func() {
					for i := range 25 {
						err := clientStep(ctx, pool, l, fmt.Sprintf("c%d-%d", c, i))
						if err == nil {
							continue
						}
						mu.Lock()
						failed++
						mu.Unlock()
						if errors.Is(err, ledger.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe, exec or simple_protocol") {
							t.Errorf("client %d, step %d: %v; want the error that names the query modes to use, and a known outcome", c, i, err)
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d of %d steps failed", failed, 8*25)
			if failed == 0 {
				t.Error("no step failed: the pooler no longer swaps server connections between statements, and the test reaches nothing")
			}
		})
	}
}
