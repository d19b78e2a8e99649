package clients_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// idempotentRetryPolicy is the CheckRetry docs/clients.md recommends for
// go-retryablehttp: its default policy, plus the middleware's in-flight
// 409 (it carries Retry-After), minus any replayed answer (a stored 5xx
// retried would only come back, until the client gave up and lost it).
func idempotentRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if resp != nil && resp.Header.Get(idemhttp.DefaultReplayHeader) == "true" {
		return false, nil
	}
	if resp != nil && resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" {
		return true, nil
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

func retryableClient(policy retryablehttp.CheckRetry) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryWaitMin, c.RetryWaitMax, c.RetryMax = 50*time.Millisecond, time.Second, 6
	if policy != nil {
		c.CheckRetry = policy
	}
	return c
}

func postRetryable(t *testing.T, c *retryablehttp.Client, url, key string) (int, string, string) {
	t.Helper()
	req, err := retryablehttp.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":1250}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemhttp.HeaderName, key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error(), ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get(idemhttp.DefaultReplayHeader)
}

// TestRetryableHTTP: hashicorp/go-retryablehttp against the default
// middleware, on every driver. Its default policy does not retry the
// in-flight 409, so a duplicate of a running request fails; with
// idempotentRetryPolicy it waits and ends with the stored answer. A stored
// 503 (kept because the handler passed its commit point) is retried by the
// default policy until the client gives up (7 requests); the policy stops
// at its first replay (2 requests).
func TestRetryableHTTP(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		s := &shop{delay: 500 * time.Millisecond, status: 201, body: func(n int64) string { return fmt.Sprintf(`{"order":%d}`, n) }}
		s.start(t, engine, idemhttp.Options{})
		for _, c := range []struct {
			name   string
			policy retryablehttp.CheckRetry
			want   int // the duplicate's status
		}{
			{"default policy", nil, http.StatusConflict},
			{"idempotentRetryPolicy", idempotentRetryPolicy, http.StatusCreated},
		} {
			key := "dup-" + c.name
			client := retryableClient(c.policy)
			var wg sync.WaitGroup
			statuses := make([]int, 2)
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i == 1 {
						s.waitRunning(key)
					}
					statuses[i], _, _ = postRetryable(t, client, s.srv.URL, key)
				}()
			}
			wg.Wait()
			if statuses[0] != http.StatusCreated || statuses[1] != c.want || s.effectsOf(key) != 1 {
				t.Errorf("%s: statuses %v, %d effects; want [201 %d], 1 effect", c.name, statuses, s.effectsOf(key), c.want)
			}
		}

		down := &shop{status: http.StatusServiceUnavailable, body: func(int64) string { return `{"error":"card network down"}` }}
		down.start(t, engine, idemhttp.Options{})
		for _, c := range []struct {
			name   string
			policy retryablehttp.CheckRetry
			hits   int64
		}{
			{"default policy", nil, 7},
			{"idempotentRetryPolicy", idempotentRetryPolicy, 2},
		} {
			key := "stored-503-" + c.name
			status, _, _ := postRetryable(t, retryableClient(c.policy), down.srv.URL, key)
			if c.policy != nil && status != http.StatusServiceUnavailable {
				t.Errorf("%s: status %d, want the stored 503", c.name, status)
			}
			if h, e := down.hitsOf(key), down.effectsOf(key); h != c.hits || e != 1 {
				t.Errorf("%s: %d requests, %d effects; want %d requests, 1 effect", c.name, h, e, c.hits)
			}
		}
	})
}
