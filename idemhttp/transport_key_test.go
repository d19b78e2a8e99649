package idemhttp

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// TestTransportAttemptTimeout: against a handler that pays and then takes
// longer than the attempt timeout, the Transport keeps the key: later
// attempts find the payment in flight, then replay it. It pays once, and
// the caller gets the 201.
func TestTransportAttemptTimeout(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		gate := make(chan struct{})
		var pay func()
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			pay()
			<-gate
			w.WriteHeader(201)
			io.WriteString(w, "paid")
		})
		pay, paid := payments(t, e, b)
		var once sync.Once
		var seen []Attempt
		tr := fastTransport()
		tr.MaxAttempts = 20
		// Long enough for a claim or a replay on a loaded machine (an
		// attempt that times out before its 409 or its replay only adds
		// an attempt), short enough for the blocked first attempt.
		tr.AttemptTimeout = time.Second
		tr.OnAttempt = func(a Attempt) {
			seen = append(seen, a)
			if a.Status == 409 {
				once.Do(func() { close(gate) })
			}
		}
		resp, err := postJSON(&http.Client{Transport: tr}, b.srv.URL+"/pay", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAnswer(resp); got != (answerWant{201, "paid", "true"}) {
			t.Fatalf("final answer %+v", got)
		}
		// The handler waits for a 409, so the first attempt times out;
		// a slow claim (under -race) may time out again before the 409.
		if !errors.Is(seen[0].Err, ErrAttemptTimeout) || !slices.ContainsFunc(seen, func(a Attempt) bool { return a.Status == 409 }) {
			t.Fatalf("attempts %+v, want a timeout, ..., 409, ...", seen)
		}
		// The timeout is said once (it was said twice when the base
		// transport reported the cause itself).
		if got, want := seen[0].Err.Error(), "idemclient: attempt timed out after 1s"; got != want {
			t.Errorf("first attempt's error %q, want %q", got, want)
		}
		for _, a := range seen {
			if a.Key != seen[0].Key || a.Key == "" {
				t.Fatalf("attempts under several keys: %+v", seen)
			}
		}
		if n := paid(); n != 1 {
			t.Fatalf("paid %d times, want 1", n)
		}
	})
}

// fastTransport is a Transport with short waits and a fresh connection
// for every attempt (so that net/http's own retry of requests on reused
// connections does not hide its own).
func fastTransport() *Transport {
	return &Transport{
		Base:           &http.Transport{DisableKeepAlives: true},
		InitialBackoff: time.Millisecond,
		MaxBackoff:     4 * time.Millisecond,
	}
}
