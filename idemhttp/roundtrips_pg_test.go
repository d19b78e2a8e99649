package idemhttp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
)

// TestReplayRoundTrips: on both PostgreSQL drivers, a replay through
// Middleware is one round trip (the claim statement, which reads and does
// not write), as a plain read of the row is, with the ledger's
// cache off; with it on (the default), none: the ledger kept the record
// from the first request's Complete.
func TestReplayRoundTrips(t *testing.T) {
	_, dsn := testdb.PostgresDSN(t)
	var writes atomic.Int64
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = 1
	testdb.CountWrites(&pcfg.ConnConfig.Config, &writes)
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ccfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	testdb.CountWrites(&ccfg.Config, &writes)
	db := stdlib.OpenDB(*ccfg)
	db.SetMaxOpenConns(1)
	defer db.Close()
	created := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	for _, cache := range []int64{ledger.CacheOff, 0} {
		for _, c := range []struct {
			name string
			mw   func() (func(http.Handler) http.Handler, error)
		}{
			{"pgxv5", func() (func(http.Handler) http.Handler, error) {
				l, err := ledger.New(pgxv5.New(pool), ledger.Options{CacheBytes: cache})
				if err != nil {
					return nil, err
				}
				return Middleware(l, benchOptions()), nil
			}},
			{"postgres", func() (func(http.Handler) http.Handler, error) {
				l, err := ledger.New(postgres.New(db), ledger.Options{CacheBytes: cache})
				if err != nil {
					return nil, err
				}
				return Middleware(l, benchOptions()), nil
			}},
		} {
			t.Run(fmt.Sprintf("%s/cache=%d", c.name, cache), func(t *testing.T) {
				mw, err := c.mw()
				if err != nil {
					t.Fatal(err)
				}
				h := mw(created)
				for i := range 4 { // the first stores; then the statement is prepared
					writes.Store(0)
					req := httptest.NewRequest("POST", "/orders", strings.NewReader(`{"a":1}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(HeaderName, fmt.Sprintf("k-%s-%d", c.name, cache))
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					replayed := rec.Header().Get(DefaultReplayHeader) == "true"
					if rec.Code != http.StatusCreated || replayed != (i > 0) {
						t.Fatalf("request %d: %d, replayed %v", i, rec.Code, replayed)
					}
					want := int64(1)
					if cache == 0 {
						want = 0 // kept from the first request's own Complete
					}
					if n := writes.Load(); i >= 1 && n != want {
						t.Errorf("replay %d: %d round trips; want %d", i, n, want)
					}
				}
			})
		}
	}
}
