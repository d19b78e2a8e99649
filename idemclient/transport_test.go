package idemclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// attempt is what the test server saw of one request.
type attempt struct {
	method string
	keys   []string
	body   string
}

// flakyServer answers each request with the next entry of script: a status,
// or 0 to drop the connection without an answer. Past the script it answers
// 201. It records every request it read.
type flakyServer struct {
	*httptest.Server
	mu       sync.Mutex
	script   []int
	headers  []http.Header // extra response fields per script entry
	attempts []attempt
}

func newFlakyServer(t *testing.T, script []int, headers ...http.Header) *flakyServer {
	t.Helper()
	fs := &flakyServer{script: script, headers: headers}
	fs.Server = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *flakyServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fs.mu.Lock()
	n := len(fs.attempts)
	fs.attempts = append(fs.attempts, attempt{r.Method, r.Header.Values(HeaderName), string(body)})
	status := http.StatusCreated
	var extra http.Header
	if n < len(fs.script) {
		status = fs.script[n]
		if n < len(fs.headers) {
			extra = fs.headers[n]
		}
	}
	fs.mu.Unlock()
	if status == 0 {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range extra {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	io.WriteString(w, "answer")
}

func (fs *flakyServer) seen() []attempt {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]attempt(nil), fs.attempts...)
}

// fastTransport retries quickly, over a base transport that opens a fresh
// connection for every attempt (so that net/http's own retry of requests on
// reused connections does not hide ours).
func fastTransport() *Transport {
	return &Transport{
		Base:           &http.Transport{DisableKeepAlives: true},
		InitialBackoff: time.Millisecond,
		MaxBackoff:     4 * time.Millisecond,
	}
}

func post(t *testing.T, c *http.Client, url, body string, key ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range key {
		req.Header.Add(HeaderName, k)
	}
	return c.Do(req)
}

func TestTransportRetriesDroppedConnections(t *testing.T) {
	fs := newFlakyServer(t, []int{0, 0, 0})
	c := &http.Client{Transport: fastTransport()}
	resp, err := post(t, c, fs.URL, `{"amount":100}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d, want 201", resp.StatusCode)
	}
	seen := fs.seen()
	if len(seen) != 4 {
		t.Fatalf("server saw %d attempts, want 4", len(seen))
	}
	first := seen[0]
	if len(first.keys) != 1 || !uuidV4.MatchString(strings.Trim(first.keys[0], `"`)) || first.keys[0][0] != '"' {
		t.Fatalf("first attempt key %q, want one quoted UUID v4", first.keys)
	}
	for i, a := range seen {
		if a.method != http.MethodPost || a.body != `{"amount":100}` || len(a.keys) != 1 || a.keys[0] != first.keys[0] {
			t.Fatalf("attempt %d = %+v, want the first attempt's key and body %+v", i, a, first)
		}
	}
}

func TestTransportKeepsCallerKey(t *testing.T) {
	fs := newFlakyServer(t, []int{0})
	c := &http.Client{Transport: fastTransport()}
	resp, err := post(t, c, fs.URL, "x", `"my-key"`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for i, a := range fs.seen() {
		if len(a.keys) != 1 || a.keys[0] != `"my-key"` {
			t.Fatalf("attempt %d keys %q, want the caller's", i, a.keys)
		}
	}
}

func TestTransportDoesNotModifyRequest(t *testing.T) {
	fs := newFlakyServer(t, nil)
	c := &http.Client{Transport: fastTransport()}
	req, _ := http.NewRequest(http.MethodPatch, fs.URL, strings.NewReader("x"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get(HeaderName) != "" {
		t.Fatal("the caller's request got a key")
	}
	if a := fs.seen(); len(a) != 1 || len(a[0].keys) != 1 {
		t.Fatalf("PATCH sent with keys %+v, want one", a)
	}
}

func TestTransportLeavesSafeMethods(t *testing.T) {
	fs := newFlakyServer(t, []int{http.StatusServiceUnavailable})
	c := &http.Client{Transport: fastTransport()}
	resp, err := c.Get(fs.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET status %d, want the 503 unretried", resp.StatusCode)
	}
	if a := fs.seen(); len(a) != 1 || len(a[0].keys) != 0 {
		t.Fatalf("GET attempts %+v, want one without key", a)
	}
}

func TestTransportStatuses(t *testing.T) {
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name     string
		script   []int
		headers  []http.Header
		status   int // final status
		attempts int
	}{
		{"400 final", []int{400}, nil, 400, 1},
		{"422 final", []int{422}, nil, 422, 1},
		{"500 final", []int{500}, nil, 500, 1},
		{"409 without Retry-After final", []int{409}, nil, 409, 1},
		{"409 in flight retried", []int{409, 409}, []http.Header{ra("0"), ra("0")}, 201, 3},
		{"429 retried", []int{429, 429}, nil, 201, 3},
		{"503 retried", []int{503}, []http.Header{ra("0")}, 201, 2},
		{"503 past attempts", []int{503, 503, 503, 503, 503, 503}, nil, 503, 5},
		{"Retry-After past budget", []int{503}, []http.Header{ra("3600")}, 503, 1},
		{"Retry-After date in the past", []int{429}, []http.Header{ra("Sun, 06 Nov 1994 08:49:37 GMT")}, 201, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlakyServer(t, tt.script, tt.headers...)
			c := &http.Client{Transport: fastTransport()}
			resp, err := post(t, c, fs.URL, "body")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || string(b) != "answer" {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, b, tt.status, "answer")
			}
			if n := len(fs.seen()); n != tt.attempts {
				t.Fatalf("server saw %d attempts, want %d", n, tt.attempts)
			}
		})
	}
}

// Retry-After is honoured: the second attempt starts no earlier than the
// server asked. (A lower bound on a wait, not a speed claim.)
func TestTransportHonoursRetryAfter(t *testing.T) {
	fs := newFlakyServer(t, []int{409}, http.Header{"Retry-After": {"1"}})
	c := &http.Client{Transport: fastTransport()}
	start := time.Now()
	resp, err := post(t, c, fs.URL, "body")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || len(fs.seen()) != 2 {
		t.Fatalf("got %d after %d attempts, want 201 after 2", resp.StatusCode, len(fs.seen()))
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("retried after %v, before Retry-After: 1", waited)
	}
}

// A body that cannot be rewound is sent once: a retry would send other
// bytes (or none) under the same key.
func TestTransportNoGetBody(t *testing.T) {
	fs := newFlakyServer(t, []int{503})
	c := &http.Client{Transport: fastTransport()}
	req, _ := http.NewRequest(http.MethodPost, fs.URL, io.MultiReader(strings.NewReader("body")))
	if req.GetBody != nil {
		t.Fatal("test needs a request without GetBody")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || len(fs.seen()) != 1 {
		t.Fatalf("got %d after %d attempts, want 503 after 1", resp.StatusCode, len(fs.seen()))
	}
}

func TestTransportNoBodyRetried(t *testing.T) {
	fs := newFlakyServer(t, []int{0})
	c := &http.Client{Transport: fastTransport()}
	req, _ := http.NewRequest(http.MethodPost, fs.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || len(fs.seen()) != 2 {
		t.Fatalf("got %d after %d attempts, want 201 after 2", resp.StatusCode, len(fs.seen()))
	}
}

func TestTransportStopsWhenContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		cancel()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := &http.Client{Transport: fastTransport()}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("server saw %d attempts after cancel, want 1", calls)
	}
}

// The overall limit follows the context's deadline: no wait that would end
// after it is started.
func TestTransportContextDeadline(t *testing.T) {
	fs := newFlakyServer(t, []int{503}, http.Header{"Retry-After": {"30"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := &http.Client{Transport: fastTransport()}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fs.URL, strings.NewReader("x"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || len(fs.seen()) != 1 {
		t.Fatalf("got %d after %d attempts, want the 503 at once", resp.StatusCode, len(fs.seen()))
	}
}

func TestTransportKeyFailure(t *testing.T) {
	fs := newFlakyServer(t, nil)
	tr := fastTransport()
	boom := errors.New("no entropy")
	tr.NewKey = func() (string, error) { return "", boom }
	c := &http.Client{Transport: tr}
	_, err := post(t, c, fs.URL, "x")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the key error", err)
	}
	if n := len(fs.seen()); n != 0 {
		t.Fatalf("server saw %d requests without a key, want 0", n)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"Fri, 02 Jan 2026 03:04:15 GMT", 10 * time.Second, true},
		{"Fri, 02 Jan 2026 03:04:00 GMT", 0, true},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(http.Header{"Retry-After": {tt.v}}, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	tr := &Transport{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		w *= time.Millisecond
		for range 50 {
			d := tr.backoff(i + 1)
			if d < w/2 || d > w {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", i+1, d, w/2, w)
			}
		}
	}
}
