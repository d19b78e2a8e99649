package idemhttp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// A client that gives up while the claim waits for the store (here the
// ledger's table locked by another session) gets no answer, but the
// claim's failure is still reported to the Observer, with the 503 the
// server gave: a store held up until clients leave is an outage an
// operator must see, not silence.
func TestClaimAbandonedByClientIsReported(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, created)
		ctx := context.Background()
		lock, err := b.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE takes the write lock
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Rollback()
		if stmt := testdb.EngineOf(e).LockLedger; stmt != "" {
			if _, err := lock.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(cctx, "POST", b.srv.URL+"/", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(HeaderName, `"gone"`)
		if resp, err := b.srv.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
			if err == nil {
				resp.Body.Close()
			}
			t.Fatalf("request = %v, want the client's own timeout", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !b.obs.has(func(ev ledger.Event) bool {
			return ev.Op == "claim" && ev.Status == http.StatusServiceUnavailable && ev.Err != nil
		}) {
			if time.Now().After(deadline) {
				t.Fatalf("no claim failure reported for the request its client gave up; events:\n%s", eventList(b.obs.All()))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if b.calls.Load() != 0 {
			t.Fatalf("the handler ran %d times", b.calls.Load())
		}
	})
}
