package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
)

// TestUnpooledModesNameTheFix: through a pooler in transaction mode, in
// the two query modes that cannot work there (pgx's default,
// cache_statement, and describe_exec), every operation fails with an
// error that names the query modes that do, never with an outcome
// reported unknown: Mutate in a *sql.Tx, lease mode, and what the
// idemledger command runs through this driver (Purge, Reclaim, Stats).
func TestUnpooledModesNameTheFix(t *testing.T) {
	if testdb.Pooling() != "transaction" {
		t.Skip("these modes work without a pooler in transaction mode (.ci/pgbouncer runs this test through one)")
	}
	for _, mode := range []string{"cache_statement", "describe_exec"} {
		t.Run(mode, func(t *testing.T) {
			_, dsn := testdb.PostgresDSN(t)
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("default_query_exec_mode", mode)
			u.RawQuery = q.Encode()
			db, err := sql.Open("pgx", u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(8)
			l, err := ledger.New(postgres.New(db), ledger.Options{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var (
				mu     sync.Mutex
				failed int
				wg     sync.WaitGroup
			)
			for c := range 8 {
				wg.Go(func() {
					for i := range 25 {
						for _, err := range step(context.Background(), db, l, fmt.Sprintf("c%d-%d", c, i), c == 0) {
							mu.Lock()
							failed++
							mu.Unlock()
							if errors.Is(err, ledger.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe, exec or simple_protocol") {
								t.Errorf("client %d, step %d: %v; want the error that names the query modes to use, and a known outcome", c, i, err)
							}
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d operations failed", failed)
			if failed == 0 {
				t.Error("nothing failed: the pooler no longer swaps server connections between statements, and the test reaches nothing")
			}
		})
	}
}

// step runs Mutate and lease mode on key, and with admin Purge, Reclaim
// and Stats, and returns the errors they met.
func step(ctx context.Context, db *sql.DB, l *ledger.Ledger[*sql.Tx], key string, admin bool) []error {
	var errs []error
	req := ledger.Request{Scope: "s", Key: "tx-" + key, Fingerprint: hash.Bytes([]byte(key))}
	if tx, err := db.BeginTx(ctx, nil); err != nil {
		errs = append(errs, err)
	} else {
		_, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (string, error) { return "v-" + key, nil })
		if err == nil {
			err = tx.Commit()
		}
		tx.Rollback()
		if err != nil {
			errs = append(errs, fmt.Errorf("Mutate: %w", err))
		}
	}
	req.Key = "lease-" + key
	if c, err := l.Claim(ctx, req); err != nil {
		errs = append(errs, fmt.Errorf("Claim: %w", err))
	} else if err := l.Complete(ctx, c, ledger.Outcome{Status: 201, Body: []byte(key)}); err != nil {
		errs = append(errs, fmt.Errorf("Complete: %w", err))
	}
	if !admin {
		return errs
	}
	if _, err := l.Purge(ctx, ledger.PurgeOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("Purge: %w", err))
	}
	if _, err := l.Reclaim(ctx, ledger.ReclaimOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("Reclaim: %w", err))
	}
	if _, err := l.Stats(ctx); err != nil {
		errs = append(errs, fmt.Errorf("Stats: %w", err))
	}
	return errs
}
