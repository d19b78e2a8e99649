package idemhttp

import (
	"context"
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
		if got, want := seen[0].Err.Error(), "idemhttp: attempt timed out after 1s"; got != want {
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

// TestTransportErrorKeepsKey: when the caller's deadline ends the request,
// the error holds the key the server saw, and the number of attempts; the
// cause stays reachable.
func TestTransportErrorKeepsKey(t *testing.T) {
	fs := newFlakyServer(t, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	tr := fastTransport()
	tr.MaxAttempts = 3
	_, err := post(t, &http.Client{Transport: tr}, fs.URL, "body")
	var te *TransportError
	if !errors.As(err, &te) || te.Attempts != 3 {
		t.Fatalf("error %v, want a *TransportError of 3 attempts", err)
	}
	seen := fs.seen()
	if len(seen) != 3 || seen[0].keys[0] != `"`+te.Key+`"` {
		t.Fatalf("server saw %+v, error has key %q", seen, te.Key)
	}

	ctx, cancel := context.WithCancel(context.Background())
	tr.MaxAttempts = 0
	tr.InitialBackoff = time.Second // within MaxElapsed: the wait starts, and the cancel ends it
	tr.MaxBackoff = time.Second
	tr.OnAttempt = func(Attempt) { cancel() }
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fs.URL, nil)
	req.Header.Set(HeaderName, "caller-key;v=1")
	_, err = (&http.Client{Transport: tr}).Do(req)
	if !errors.As(err, &te) || te.Key != "caller-key;v=1" || te.Attempts != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v (%+v)", err, te)
	}
}

func TestTransportRetryStatuses(t *testing.T) {
	replayed := http.Header{DefaultReplayHeader: {"true"}}
	tests := []struct {
		name     string
		statuses []int
		script   []int
		headers  []http.Header
		status   int
		attempts int
	}{
		{"502 final by default", nil, []int{502}, nil, 502, 1},
		{"504 final by default", nil, []int{504}, nil, 504, 1},
		{"502 and 504 opted in", []int{502, 503, 504}, []int{502, 504}, nil, 201, 3},
		{"503 dropped from the list", []int{429}, []int{503}, nil, 503, 1},
		{"none retried", []int{}, []int{429}, nil, 429, 1},
		{"replayed 503 final", nil, []int{503}, []http.Header{replayed}, 503, 1},
		{"replayed 409 final", nil, []int{409}, []http.Header{{DefaultReplayHeader: {"true"}, "Retry-After": {"0"}}}, 409, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlakyServer(t, tt.script, tt.headers...)
			tr := fastTransport()
			tr.RetryStatuses = tt.statuses
			var n int
			tr.OnAttempt = func(a Attempt) { n = a.Number }
			resp, err := post(t, &http.Client{Transport: tr}, fs.URL, "body")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || len(fs.seen()) != tt.attempts || n != tt.attempts {
				t.Fatalf("got %d after %d attempts (OnAttempt counted %d), want %d after %d", resp.StatusCode, len(fs.seen()), n, tt.status, tt.attempts)
			}
		})
	}
}
