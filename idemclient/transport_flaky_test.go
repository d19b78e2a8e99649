package idemclient

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

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
