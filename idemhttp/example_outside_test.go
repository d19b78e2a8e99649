package idemhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// A handler that makes an outside call (a charge at a payment provider)
// under the Middleware's lease: it stops before the call if its lease was
// lost (and only then: a client that left, or an http.TimeoutHandler that
// fired, does not stop it, since the run still holds the key and its
// outcome is stored for the retry), makes the call under a context the
// client's hang-up does not cut, with the key forwarded, marks the commit
// point right after it, and answers 503 if the mark finds the lease gone,
// so that clients end with the stored outcome of the run that owns the
// key.
func Example_outsideCall() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()

	// The provider deduplicates on the key it is given, as Stripe does.
	var mu sync.Mutex
	charges := map[string]string{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get(idemhttp.HeaderName)
		if charges[key] == "" {
			charges[key] = fmt.Sprintf("ch_%d", len(charges)+1)
		}
		io.WriteString(w, charges[key])
	}))
	defer provider.Close()

	charge := func(w http.ResponseWriter, r *http.Request) {
		if errors.Is(context.Cause(r.Context()), ledger.ErrLeaseLost) {
			// Another run may hold the key: stop before the effect; the
			// retry runs, or replays, the run that holds it. A context
			// that ended for another reason (the client left) is no
			// reason to stop: stopping would release the key, and a
			// handler slower than the client's timeout would never
			// finish.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "retry", http.StatusServiceUnavailable)
			return
		}
		c, _ := idemhttp.ClaimFrom(r.Context())
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", provider.URL, nil)
		idemhttp.SetKey(req.Header, c.Scope+"/"+c.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, "provider unreachable", http.StatusBadGateway) // not stored: the retry calls again
			return
		}
		defer resp.Body.Close()
		receipt, _ := io.ReadAll(resp.Body)
		if !idemhttp.Commit(r.Context()) {
			// The lease was lost while the call ran (taken over, or the
			// store out of reach for many leases): this answer is not
			// stored.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "retry", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write(receipt)
	}
	srv := httptest.NewServer(idemhttp.Middleware(l, idemhttp.Options{Scope: tenant})(http.HandlerFunc(charge)))
	defer srv.Close()

	send(srv.URL, "POST", `{"amount":250}`, "order-9")
	send(srv.URL, "POST", `{"amount":250}`, "order-9")
	mu.Lock()
	fmt.Println("charges:", len(charges))
	mu.Unlock()
	// Output:
	// 201 ch_1
	// 201 ch_1
	// charges: 1
}
