package idemhttp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TestStep: a handler that charged (a recorded step), then failed with a
// status that releases the key, is run again by the retry, which resumes:
// the charge is not made again, the shipment is, and the answer is stored
// and replayed. The forwarded key is the step's derived key; a request
// without a key runs its steps unrecorded with an empty one.
func TestStep(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		var mu sync.Mutex
		calls := map[string]int{}
		keys := map[string]string{}
		fail := true
		step := func(name string) func(context.Context, string) ([]byte, error) {
			return func(_ context.Context, key string) ([]byte, error) {
				mu.Lock()
				defer mu.Unlock()
				calls[name]++
				keys[name] = key
				return []byte(fmt.Sprintf("%s-%d", name, calls[name])), nil
			}
		}
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			charge, err := Step(r.Context(), "charge", step("charge"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			mu.Lock()
			failNow := fail
			fail = false
			mu.Unlock()
			if failNow {
				http.Error(w, "carrier down", http.StatusServiceUnavailable)
				return
			}
			ship, err := Step(r.Context(), "ship", step("ship"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "%s %s", charge, ship)
		})
		want := []struct {
			status int
			body   string
		}{
			{http.StatusServiceUnavailable, "carrier down\n"},
			{http.StatusCreated, "charge-1 ship-1"},
			{http.StatusCreated, "charge-1 ship-1"}, // the replay
		}
		for i, w := range want {
			if got := b.do(t, http.MethodPost, "/pay", `{"amount":5}`, "k-1"); got.status != w.status || got.body != w.body {
				t.Errorf("request %d: %d %q; want %d %q", i+1, got.status, got.body, w.status, w.body)
			}
		}
		if calls["charge"] != 1 || calls["ship"] != 1 {
			t.Errorf("calls = %v; want charge and ship once each", calls)
		}
		if k := lifecycle.StepKey(testScope, "k-1", "charge"); keys["charge"] != k {
			t.Errorf("charge's key %q; want %q", keys["charge"], k)
		}
		if got := b.do(t, http.MethodPost, "/pay", `{"amount":5}`); got.status != http.StatusCreated || got.body != "charge-2 ship-2" || keys["charge"] != "" {
			t.Errorf("without a key: %d %q, key %q; want 201 charge-2 ship-2 and an empty key", got.status, got.body, keys["charge"])
		}
	})
}
