package clients_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stripe/stripe-go/v82"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// The waiting tests' figures. The handler outlasts every client's first
// retry delay (stripe-go 0.5 s, go-retryablehttp 1 s, curl 1 s) and
// stripe-go's whole default budget (2 retries, 1.5 s at most), and the
// server's Wait outlasts the handler: it is below the shortest per-attempt
// timeout of these clients at their defaults (stripe-go's 80 s; the others
// have none).
const (
	slowHandler = 3 * time.Second
	waitBudget  = 10 * time.Second
	duplicates  = 4
)

// curlFlags are the flags docs/clients.md recommends: retry what may
// succeed later (a connection refused while the server restarts; 408, 429,
// 500, 502, 503 and 504, after their Retry-After), never the final 400, 410
// or 422, and end with exit code 22 and the answer's body on any other
// error.
var curlFlags = []string{"--retry", "5", "--retry-connrefused", "--fail-with-body"}

// waitingClient is one client at its default retry settings: send sends a
// request with the key to the shop and says how it ended, as the client
// reports it.
type waitingClient struct {
	name string
	opts idemhttp.Options // the server's, besides Wait
	send func(t *testing.T, s *shop, key string) string
	// first is how the first request ends; refused how a duplicate ends
	// that gets the in-flight refusal after its retries; hits how many
	// requests a refused duplicate sends.
	first, refused string
	hits           int64
}

var waitingClients = []waitingClient{
	{
		name: "stripe-go", opts: idemhttp.Options{Refuse: idemhttp.WriteStripeError},
		send: func(t *testing.T, s *shop, key string) string {
			// stripe-go's defaults: DefaultMaxNetworkRetries (2), its
			// own HTTP client (80 s timeout); only the URL is the shop's.
			backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
				URL:           stripe.String(s.srv.URL),
				LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
			})
			c := stripe.NewClient("sk_test_idemledger", stripe.WithBackends(backends))
			pi, err := createIntent(context.Background(), c, key, 1250)
			var se *stripe.Error
			switch {
			case errors.As(err, &se):
				return fmt.Sprintf("%d %s", se.HTTPStatusCode, se.Code)
			case err != nil:
				return err.Error()
			}
			return pi.ID
		},
		first: "pi_1", refused: "429 lock_timeout", hits: 3,
	},
	{
		name: "go-retryablehttp",
		send: func(t *testing.T, s *shop, key string) string {
			c := retryablehttp.NewClient() // RetryMax 4, waits 1 s to 30 s, DefaultRetryPolicy
			c.Logger = nil
			status, body, _ := postRetryable(t, c, s.srv.URL, key)
			if status >= 400 {
				return fmt.Sprint(status) // a refusal: the status, not the problem document
			}
			return fmt.Sprintf("%d %s", status, body)
		},
		first: `201 {"order":1}`, refused: "409", hits: 1,
	},
	{
		name: "curl",
		send: func(t *testing.T, s *shop, key string) string {
			out := curlPost(t, s.srv.URL, key, curlFlags...)
			if i := strings.LastIndexByte(out, ' '); i >= 0 && strings.HasPrefix(out[i:], " 4") {
				return strings.TrimSpace(out[i:]) // a refusal: the status, not the problem document
			}
			return out
		},
		first: `{"order":1} 201`, refused: "409", hits: 1,
	},
}

// TestWaitingDuplicates: several duplicates sent while a slow first request
// runs, by stripe-go, go-retryablehttp and curl at their default retry
// settings (curl with docs/clients.md's flags), on every driver. With Options.Wait
// longer than the handler, every duplicate is sent once, waits, and ends
// with the first answer; without it, every duplicate ends with the
// in-flight refusal once its client's retries are spent (stripe-go retries
// its 429 lock_timeout twice; the others do not retry a 409). The handler
// runs once either way.
func TestWaitingDuplicates(t *testing.T) {
	_, noCurl := exec.LookPath("curl")
	testledger.Each(t, func(t *testing.T, engine string) {
		for _, c := range waitingClients {
			for _, wait := range []time.Duration{waitBudget, 0} {
				t.Run(fmt.Sprintf("%s/wait=%v", c.name, wait), func(t *testing.T) {
					if c.name == "curl" && noCurl != nil {
						t.Skip("curl is not installed (apt-get install curl)")
					}
					t.Parallel()
					s := &shop{delay: slowHandler, status: 201, body: func(n int64) string { return `{"order":1}` }}
					if c.name == "stripe-go" {
						s.status, s.body = 200, paymentIntent
					}
					opts := c.opts
					opts.Wait = wait
					s.start(t, engine, opts)
					const key = "order 42"
					var first string
					var wg sync.WaitGroup
					wg.Add(1)
					go func() { defer wg.Done(); first = c.send(t, s, key) }()
					s.waitRunning(key)
					outs := make([]string, duplicates)
					for i := range outs {
						wg.Add(1)
						go func() { defer wg.Done(); outs[i] = c.send(t, s, key) }()
					}
					wg.Wait()

					want, hits := c.first, int64(1)
					if wait == 0 {
						want, hits = c.refused, c.hits
					}
					ended := 0
					for _, out := range outs {
						if out == c.first {
							ended++
						}
					}
					t.Logf("%s, Wait %v: %d of %d duplicates ended with the first answer; %d requests", c.name, wait, ended, duplicates, s.hitsOf(key))
					if first != c.first {
						t.Errorf("first request: %q, want %q", first, c.first)
					}
					for i, out := range outs {
						if out != want {
							t.Errorf("duplicate %d: %q, want %q", i, out, want)
						}
					}
					if got, want := s.hitsOf(key), 1+duplicates*hits; got != want {
						t.Errorf("%d requests with the key, want %d (the first, and %d from each duplicate)", got, want, hits)
					}
					if n := s.effectsOf(key); n != 1 {
						t.Errorf("%d effects, want 1", n)
					}
				})
			}
		}
	})
}

// TestCurlRetryFlags: docs/clients.md's curl flags retry the answers that may
// succeed later (429 and 503, after their Retry-After) and none of the
// final ones (400, 410, 422), nor the in-flight 409, which a server with
// Options.Wait gives only once its budget is spent. --retry-all-errors,
// the alternative, retries them all: a 410 "cannot be sent again" would be
// sent again, for as long as the retries last.
func TestCurlRetryFlags(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (apt-get install curl)")
	}
	var mu sync.Mutex
	hits := map[string]int{}
	srv := newStatusServer(t, func(path string) {
		mu.Lock()
		hits[path]++
		mu.Unlock()
	})
	flags := []string{"--retry", "2", "--retry-connrefused", "--fail-with-body"} // curlFlags with fewer retries
	tests := []struct {
		status int
		flags  []string
		hits   int
	}{
		{400, flags, 1},
		{409, flags, 1},
		{410, flags, 1},
		{422, flags, 1},
		{429, flags, 3},
		{503, flags, 3},
		{410, []string{"--retry", "2", "--retry-all-errors", "--fail"}, 3},
	}
	var wg sync.WaitGroup
	for i, tt := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/%d/%d", tt.status, i)
			if got := curlPost(t, srv+path, "k", tt.flags...); !strings.HasSuffix(got, fmt.Sprint(tt.status)) {
				t.Errorf("%d with %v: %q, want the status", tt.status, tt.flags, got)
			}
		}()
	}
	wg.Wait()
	for i, tt := range tests {
		if got := hits[fmt.Sprintf("/%d/%d", tt.status, i)]; got != tt.hits {
			t.Errorf("%d with %v: %d requests, want %d", tt.status, tt.flags, got, tt.hits)
		}
	}
}

// newStatusServer serves, on loopback, the status that a request's path
// starts with ("/503/…"), with Retry-After: 1, and reports each path.
func newStatusServer(t *testing.T, hit func(path string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit(r.URL.Path)
		status := http.StatusTeapot
		fmt.Sscanf(r.URL.Path, "/%d/", &status)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d}`, status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
