package idemhttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/jackc/pgx/v5"
)

const testScope = "tenant-7"

// bundle is one middleware under test: a real HTTP server over a fresh
// database (SQLite or PostgreSQL), the ledger, and a log buffer.
type bundle struct {
	srv *httptest.Server
	l   ledgerAPI
	db  *sql.DB // the database through database/sql, for assertions
	e   string  // the driver's name (one of testdb.Drivers)
	// closeStore makes the store unreachable: it closes the driver's
	// database handle.
	closeStore func()
	calls      atomic.Int64 // handler runs
	obs        *recorder    // the events, when the bundle's Options use it
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ledgerAPI is what the tests call on a *ledger.Ledger[TTx], whatever the
// driver's TTx: the methods that do not take a transaction.
type ledgerAPI interface {
	Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error)
	Complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) error
	Release(ctx context.Context, c *ledger.Claim) error
	Extend(ctx context.Context, c *ledger.Claim) (time.Time, error)
	Get(ctx context.Context, scope, key string) (*ledger.Record, error)
	Purge(ctx context.Context, opts ledger.PurgeOptions) (int64, error)
	Stats(ctx context.Context) (ledger.Stats, error)
	Lease() time.Duration
	TTL() time.Duration
	Close() error
}

// eachEngine runs f as one subtest per driver of testdb.Drivers, all at
// once, each from a goroutine of its own (as testdb.EachAtOnce does): a
// test of the middleware waits on its database, its leases and its HTTP
// round trips, and each subtest has a database and a server of its own. A
// server engine's subtests skip, naming its variable, when it is unset.
func eachEngine(t *testing.T, f func(t *testing.T, e string)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, e := range testdb.Drivers() {
		wg.Go(func() { t.Run(e, func(t *testing.T) { f(t, e) }) })
	}
	wg.Wait()
}

// served is a ledger on a fresh database of driver e and a handler built
// over it by mk (Middleware or TxHandler).
type served struct {
	l       ledgerAPI
	db      *sql.DB
	handler http.Handler
	close   func() // closes the driver's database handle
}

// serveOn builds a fresh database of driver e, a ledger on it with lcfg, and
// the handler that mk makes of the ledger.
func serveOn(t *testing.T, e string, lcfg ledger.Options, mkSQL func(*ledger.Ledger[*sql.Tx]) http.Handler, mkPgx func(*ledger.Ledger[pgx.Tx]) http.Handler) served {
	t.Helper()
	if d, ok := testdb.OpenPgx(t, e); ok {
		l := newLedger(t, d.Driver, lcfg)
		return served{l: l, db: d.SQL, handler: mkPgx(l), close: d.CloseDriverDB}
	}
	d, ok := testdb.OpenSQL(t, e)
	if !ok {
		t.Fatalf("no driver %s", e)
	}
	l := newLedger(t, d.Driver, lcfg)
	return served{l: l, db: d.SQL, handler: mkSQL(l), close: d.CloseDriverDB}
}

func newLedger[TTx any](t *testing.T, d driver.Driver[TTx], cfg ledger.Options) *ledger.Ledger[TTx] {
	t.Helper()
	l, err := ledger.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// setup serves h behind Middleware over a fresh database of driver e.
// opts.Scope defaults to testScope and opts.Observer to b.obs; lcfg
// configures the ledger.
func setup(t *testing.T, e string, opts Options, lcfg ledger.Options, h http.HandlerFunc) *bundle {
	t.Helper()
	return setupRoute(t, e, opts, lcfg, "", h)
}

// setupRoute is setup with the middleware on the route pattern of a
// ServeMux (mux.Handle(pattern, Middleware(...)(h))), or serving every
// request itself when pattern is empty.
func setupRoute(t *testing.T, e string, opts Options, lcfg ledger.Options, pattern string, h http.HandlerFunc) *bundle {
	t.Helper()
	b := &bundle{obs: &recorder{}, e: e}
	if opts.Scope == nil {
		opts.Scope = func(*http.Request) (string, error) { return testScope, nil }
	}
	if opts.Observer == nil {
		opts.Observer = b.obs
	}
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.calls.Add(1)
		h(w, r)
	})
	routed := func(h http.Handler) http.Handler {
		if pattern == "" {
			return h
		}
		mux := http.NewServeMux()
		mux.Handle(pattern, h)
		return mux
	}
	sv := serveOn(t, e, lcfg,
		func(l *ledger.Ledger[*sql.Tx]) http.Handler { return routed(Middleware(l, opts)(counted)) },
		func(l *ledger.Ledger[pgx.Tx]) http.Handler { return routed(Middleware(l, opts)(counted)) })
	b.l, b.db, b.closeStore = sv.l, sv.db, sv.close
	b.srv = httptest.NewUnstartedServer(sv.handler)
	// The panics and superfluous WriteHeader calls that tests provoke on
	// purpose would only clutter the output.
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

// answer is a response as the client read it.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends one request with the given key field lines (none: no field).
func (b *bundle) do(t *testing.T, method, target, body string, keys ...string) answer {
	t.Helper()
	return b.doHeader(t, method, target, body, nil, keys...)
}

func (b *bundle) doHeader(t *testing.T, method, target, body string, h http.Header, keys ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	for _, k := range keys {
		req.Header.Add(HeaderName, k)
	}
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(got)}
}

// record returns the ledger row for key, or nil when there is none.
func (b *bundle) record(t *testing.T, key string) *ledger.Record {
	t.Helper()
	rec, err := b.l.Get(context.Background(), testScope, key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// waitRecord polls the ledger (for at most a few seconds) until ok holds
// for the record of key, and returns the last record read.
func (b *bundle) waitRecord(t *testing.T, key string, ok func(*ledger.Record) bool) *ledger.Record {
	t.Helper()
	var rec *ledger.Record
	for range 2000 {
		if rec = b.record(t, key); ok(rec) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	return rec
}

// created is a handler answering 201 with a Location, a cookie, two Link
// lines and a JSON body naming the request's body.
func created(w http.ResponseWriter, r *http.Request) {
	in, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", "/orders/42")
	h.Set("Set-Cookie", "session=secret")
	h.Add("Link", `</a>; rel="next"`)
	h.Add("Link", `</b>; rel="prev"`)
	h.Set("X-Not-Allowed", "1")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":42,"echo":`+string(in)+`}`)
}

func TestFirstRequestAndReplay(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, created)
		first := b.do(t, "POST", "/orders?x=1", `{"amount":100}`, `"k1"`)
		want := `{"id":42,"echo":{"amount":100}}`
		if first.status != 201 || first.body != want || first.header.Get("Set-Cookie") != "session=secret" {
			t.Fatalf("first answer %+v", first)
		}
		if first.header.Get(DefaultReplayHeader) != "" {
			t.Fatal("first answer marked as a replay")
		}
		rec := b.record(t, "k1")
		if rec == nil || rec.State != ledger.StateCompleted || rec.Outcome.Status != 201 || string(rec.Outcome.Body) != want {
			t.Fatalf("record %+v", rec)
		}
		wantHeader := http.Header{
			"Content-Type": {"application/json"},
			"Location":     {"/orders/42"},
			"Link":         {`</a>; rel="next"`, `</b>; rel="prev"`},
		}
		if !equalHeader(rec.Outcome.Header, wantHeader) {
			t.Fatalf("stored header %q, want %q", rec.Outcome.Header, wantHeader)
		}

		// The bare form of the same key is the same record.
		for _, key := range []string{`"k1"`, `k1`, `"k1";v=2`} {
			again := b.do(t, "POST", "/orders?x=1", `{"amount":100}`, key)
			if again.status != 201 || again.body != want {
				t.Fatalf("replay with %s: %+v", key, again)
			}
			if again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay not marked: %q", again.header)
			}
			if got := again.header.Values("Link"); len(got) != 2 || got[0] != `</a>; rel="next"` || got[1] != `</b>; rel="prev"` {
				t.Fatalf("replayed Link lines %q", got)
			}
			if again.header.Get("Location") != "/orders/42" || again.header.Get("Content-Type") != "application/json" {
				t.Fatalf("replayed header %q", again.header)
			}
			if again.header.Get("Set-Cookie") != "" || again.header.Get("X-Not-Allowed") != "" {
				t.Fatalf("replayed a field outside the allowlist: %q", again.header)
			}
		}
		if n := b.calls.Load(); n != 1 {
			t.Fatalf("handler ran %d times, want 1", n)
		}
	})
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv := b[k]
		if len(av) != len(bv) {
			return false
		}
		for i := range av {
			if av[i] != bv[i] {
				return false
			}
		}
	}
	return true
}

func TestReusedKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, created)
		if a := b.do(t, "POST", "/orders", `{"amount":100}`, "k"); a.status != 201 {
			t.Fatalf("first: %+v", a)
		}
		tests := []struct {
			name, method, target, body string
		}{
			{"other body", "POST", "/orders", `{"amount":101}`},
			{"other path", "POST", "/refunds", `{"amount":100}`},
			{"other query", "POST", "/orders?dry=1", `{"amount":100}`},
			{"other method", "PATCH", "/orders", `{"amount":100}`},
		}
		for _, tt := range tests {
			a := b.do(t, tt.method, tt.target, tt.body, "k")
			want := `{"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's","code":"key-reused"}` + "\n"
			if a.status != 422 || a.body != want || a.header.Get("Content-Type") != ProblemContentType {
				t.Errorf("%s: %d %q %q", tt.name, a.status, a.body, a.header.Get("Content-Type"))
			}
		}
		if n := b.calls.Load(); n != 1 {
			t.Fatalf("handler ran %d times, want 1", n)
		}

		// A service's own fingerprint: the detail cannot name its parts.
		own := setup(t, e, Options{Fingerprint: func(r *http.Request, body []byte) (hash.Digest, error) {
			return hash.Request(r.Method, r.URL.Path, "", body), nil
		}}, ledger.Options{}, created)
		if a := own.do(t, "POST", "/orders", `{"amount":100}`, "k"); a.status != 201 {
			t.Fatalf("first: %+v", a)
		}
		a := own.do(t, "POST", "/orders", `{"amount":101}`, "k")
		want := `{"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was used with another request: what the service compares differs from the first request's","code":"key-reused"}` + "\n"
		if a.status != 422 || a.body != want {
			t.Errorf("own fingerprint: %d %q", a.status, a.body)
		}
	})
}

// TestBareKeyWholeValue: a bare key is the whole field value, so two keys
// that differ after a ';' are two operations and the second runs the
// handler, whereas bare and quoted spellings of one key share its record.
func TestBareKeyWholeValue(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		tests := []struct {
			name          string
			first, second string
			calls         int64 // handler runs after both requests
			replayed      string
		}{
			{"batch;x then batch;y", `batch;x`, `batch;y`, 2, ""},
			{"order-17;attempt=1 then =2", `order-17;attempt=1`, `order-17;attempt=2`, 2, ""},
			{"x;y=?1 then x", `x;y=?1`, `x`, 2, ""},
			{"bare a;b then quoted", `a;b`, `"a;b"`, 1, "true"},
			{"quoted with parameters then bare", `"k";v=1`, `k`, 1, "true"},
			{"bare with a space (stripe-go) then quoted", `order 42`, `"order 42"`, 1, "true"},
			{"bare with a space then the same bare", `order 42`, `order 42`, 1, "true"},
			{"bare order 42 then order  42", `order 42`, `order  42`, 2, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, e, Options{}, ledger.Options{}, created)
				if a := b.do(t, "POST", "/orders", `{"amount":100}`, tt.first); a.status != 201 || a.header.Get(DefaultReplayHeader) != "" {
					t.Fatalf("first: %+v", a)
				}
				a := b.do(t, "POST", "/orders", `{"amount":100}`, tt.second)
				if a.status != 201 || a.header.Get(DefaultReplayHeader) != tt.replayed {
					t.Fatalf("second: %d, %s %q; want 201, %q", a.status, DefaultReplayHeader, a.header.Get(DefaultReplayHeader), tt.replayed)
				}
				if n := b.calls.Load(); n != tt.calls {
					t.Fatalf("handler ran %d times, want %d", n, tt.calls)
				}
			})
		}
	})
}

func TestKeyRefusals(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, created)
		long := strings.Repeat("k", 256)
		tests := []struct {
			name   string
			keys   []string
			detail string
		}{
			{"empty", []string{`""`}, "it is empty"},
			{"over-long", []string{long}, "longer than 255 bytes"},
			{"non-ASCII", []string{"\"caf\xc3\xa9\""}, "it starts with a double quote but is not an RFC 9651 string (a closing quote missing, text after it, an escape of anything but a quote or a backslash, or a character outside printable ASCII)"},
			{"two lines", []string{"a", "a"}, "it was sent on more than one field line; send it once"},
			{"unterminated", []string{`"abc`}, "it starts with a double quote but is not an RFC 9651 string (a closing quote missing, text after it, an escape of anything but a quote or a backslash, or a character outside printable ASCII)"},
			{"bad escape", []string{`"a\nb"`}, "it starts with a double quote but is not an RFC 9651 string (a closing quote missing, text after it, an escape of anything but a quote or a backslash, or a character outside printable ASCII)"},
			{"bare comma", []string{`order,42`}, `it holds a comma (offset 5) outside quotes, which is what a proxy makes of two ` +
				`Idempotency-Key lines; send such a key quoted, as an RFC 9651 string: \"...\"`},
		}
		for _, tt := range tests {
			a := b.do(t, "POST", "/orders", `{}`, tt.keys...)
			want := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the Idempotency-Key header is not a valid key: ` + tt.detail + `","code":"key-invalid"}` + "\n"
			if a.status != 400 || a.body != want {
				t.Errorf("%s: %d %q, want 400 %q", tt.name, a.status, a.body, want)
			}
		}
		if n := b.calls.Load(); n != 0 {
			t.Fatalf("handler ran %d times on refusals", n)
		}
		if rec := b.record(t, "a"); rec != nil {
			t.Fatalf("a refusal left a record: %+v", rec)
		}
	})
}

// TestScopeRefusals: a scope the ledger refuses gets a 400 that says why,
// without quoting the scope, and leaves nothing stored.
func TestScopeRefusals(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		opts := Options{Scope: func(r *http.Request) (string, error) { return r.URL.Query().Get("tenant"), nil }}
		b := setup(t, e, opts, ledger.Options{}, created)
		tests := []struct {
			name, tenant, detail string
		}{
			{"over-long", strings.Repeat("s", 256), "scope is 256 bytes, over the maximum of 255"},
			{"not UTF-8", "a%FFb", "scope is not valid UTF-8"},
			{"control character", "ab%09c", "scope byte 2 is a control character"},
		}
		for _, tt := range tests {
			a := b.do(t, "POST", "/orders?tenant="+tt.tenant, `{}`, "k-"+tt.name)
			want := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request's owner is not a valid scope: ` + tt.detail + `","code":"scope"}` + "\n"
			if a.status != 400 || a.body != want {
				t.Errorf("%s: %d %q, want 400 %q", tt.name, a.status, a.body, want)
			}
		}
		if n := b.calls.Load(); n != 0 {
			t.Fatalf("handler ran %d times on refusals", n)
		}
		var n int
		if err := b.db.QueryRow(`SELECT count(*) FROM idempotency_ledger`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("refusals left %d records", n)
		}
	})
}

func TestNoKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		t.Run("optional", func(t *testing.T) {
			b := setup(t, e, Options{}, ledger.Options{}, created)
			for range 2 {
				if a := b.do(t, "POST", "/orders", `{}`); a.status != 201 {
					t.Fatalf("unkeyed request: %+v", a)
				}
			}
			if n := b.calls.Load(); n != 2 {
				t.Fatalf("handler ran %d times, want 2 (unprotected)", n)
			}
		})
		t.Run("required", func(t *testing.T) {
			b := setup(t, e, Options{Required: true}, ledger.Options{}, created)
			a := b.do(t, "POST", "/orders", `{}`)
			want := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"this request needs an Idempotency-Key header","code":"key-missing"}` + "\n"
			if a.status != 400 || a.body != want {
				t.Fatalf("got %d %q", a.status, a.body)
			}
			if n := b.calls.Load(); n != 0 {
				t.Fatal("handler ran without the required key")
			}
		})
		t.Run("unprotected method", func(t *testing.T) {
			b := setup(t, e, Options{Required: true}, ledger.Options{}, created)
			for range 2 {
				if a := b.do(t, "PUT", "/orders", `{}`, "k"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "" {
					t.Fatalf("PUT: %+v", a)
				}
			}
			if n := b.calls.Load(); n != 2 {
				t.Fatalf("handler ran %d times, want 2", n)
			}
			if rec := b.record(t, "k"); rec != nil {
				t.Fatal("an unprotected method made a record")
			}
		})
	})
}

func TestInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		release := make(chan struct{})
		started := make(chan struct{})
		b := setup(t, e, Options{}, ledger.Options{Lease: 10 * time.Second}, func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
			w.WriteHeader(http.StatusCreated)
		})
		done := make(chan answer)
		go func() { done <- b.do(t, "POST", "/orders", `{}`, "k") }()
		<-started
		// Answered at once, while the first still runs.
		a := b.do(t, "POST", "/orders", `{}`, "k")
		want := `{"type":"about:blank","title":"Conflict","status":409,"detail":"a request with this idempotency key is in flight","code":"in-flight"}` + "\n"
		// Retry-After is the lease remainder (10 s) capped at
		// InFlightRetryAfter (default 1 s).
		if a.status != 409 || a.body != want || a.header.Get("Retry-After") != "1" {
			t.Fatalf("in flight: %d %q Retry-After %q", a.status, a.body, a.header.Get("Retry-After"))
		}
		close(release)
		if first := <-done; first.status != 201 {
			t.Fatalf("first: %+v", first)
		}
		if a := b.do(t, "POST", "/orders", `{}`, "k"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("after completion: %+v", a)
		}
	})
}

// TestInFlightRetryAfterCap: with a cap above the lease, Retry-After is
// the lease remainder, rounded up.
func TestInFlightRetryAfterCap(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		release := make(chan struct{})
		started := make(chan struct{})
		b := setup(t, e, Options{InFlightRetryAfter: time.Hour}, ledger.Options{Lease: 10 * time.Second}, func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
			w.WriteHeader(http.StatusCreated)
		})
		done := make(chan answer)
		go func() { done <- b.do(t, "POST", "/orders", `{}`, "k") }()
		<-started
		a := b.do(t, "POST", "/orders", `{}`, "k")
		close(release)
		<-done
		if a.status != 409 || a.header.Get("Retry-After") != "10" {
			t.Fatalf("in flight: %d, Retry-After %q; want 409, 10", a.status, a.header.Get("Retry-After"))
		}
	})
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d, lease time.Duration
		want     int64
	}{
		{0, time.Minute, 1},
		{-time.Second, time.Minute, 1},
		{time.Millisecond, time.Minute, 1},
		{time.Second, time.Minute, 1},
		{time.Second + time.Millisecond, time.Minute, 2},
		{59*time.Second + 1, time.Minute, 60},
		{2 * time.Minute, time.Minute, 60},
		{5 * time.Second, 1500 * time.Millisecond, 2},
		{5 * time.Second, 0, 1},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.d, tt.lease); got != tt.want {
			t.Errorf("retryAfterSeconds(%v, %v) = %d, want %d", tt.d, tt.lease, got, tt.want)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		for _, policy := range []FailurePolicy{FailClosed, FailOpen} {
			b := setup(t, e, Options{FailurePolicy: policy}, ledger.Options{}, created)
			b.closeStore() // the ledger is unreachable from now on
			a := b.do(t, "POST", "/orders", `{}`, "k")
			switch policy {
			case FailClosed:
				want := `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the idempotency store is unavailable; retry later","code":"unavailable"}` + "\n"
				if a.status != 503 || a.body != want || b.calls.Load() != 0 {
					t.Fatalf("fail closed: %d %q, handler ran %d", a.status, a.body, b.calls.Load())
				}
			case FailOpen:
				if a.status != 201 || b.calls.Load() != 1 {
					t.Fatalf("fail open: %+v, handler ran %d", a, b.calls.Load())
				}
			}
			status := 503
			if policy == FailOpen {
				status = 0 // the handler runs unprotected: no answer yet
			}
			b.obs.check(t, evFail(ledger.EventStoreUnavailable, "claim", status))
		}
	})
}

// TestNotMigratedFailsClosed: when the ledger's table is missing (dropped
// here after the ledger was built; on PostgreSQL New does not look), every
// policy refuses with 503 and the handler never runs: FailOpen is for an
// unreachable store, not for a deployment that forgot schema.Migrate.
func TestNotMigratedFailsClosed(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		for _, policy := range []FailurePolicy{FailClosed, FailOpen} {
			b := setup(t, e, Options{FailurePolicy: policy}, ledger.Options{}, created)
			if _, err := b.db.Exec("DROP TABLE idempotency_ledger"); err != nil {
				t.Fatal(err)
			}
			a := b.do(t, "POST", "/orders", `{}`, "k")
			want := `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the idempotency store is unavailable; retry later","code":"unavailable"}` + "\n"
			if a.status != 503 || a.body != want || b.calls.Load() != 0 {
				t.Fatalf("policy %d: %d %q, handler ran %d; want 503 %q and no run", policy, a.status, a.body, b.calls.Load(), want)
			}
			events := b.obs.All()
			if len(events) != 1 || !errors.Is(events[0].Err, ledger.ErrNotMigrated) {
				t.Errorf("policy %d: events %+v; want one store_unavailable matching ErrNotMigrated", policy, events)
			}
			b.obs.check(t, evFail(ledger.EventStoreUnavailable, "claim", 503))
		}
	})
}

// TestScopeError: a Scope error refuses with 400, or with the status,
// detail and header lines of a *ScopeError in its chain.
func TestScopeError(t *testing.T) {
	problem := func(status int, detail string) string {
		return `{"type":"about:blank","title":"` + http.StatusText(status) + `","status":` + strconv.Itoa(status) +
			`,"detail":"` + detail + `","code":"scope"}` + "\n"
	}
	eachEngine(t, func(t *testing.T, e string) {
		tests := []struct {
			name    string
			err     error
			status  int
			body    string
			wwwAuth string
		}{
			{"plain error", errors.New("no tenant"), 400, problem(400, "the request's owner could not be determined"), ""},
			{"401 with a challenge", &ScopeError{Status: 401, Detail: "an API key is required",
				Header: http.Header{"www-authenticate": {`Bearer realm="api"`}}}, 401, problem(401, "an API key is required"), `Bearer realm="api"`},
			{"wrapped 403", fmt.Errorf("lookup: %w", &ScopeError{Status: 403, Err: errors.New("revoked")}), 403,
				problem(403, "the request's owner could not be determined"), ""},
			{"status out of range", &ScopeError{Status: 200, Detail: "no"}, 400, problem(400, "no"), ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, e, Options{Scope: func(*http.Request) (string, error) { return "", tt.err }}, ledger.Options{}, created)
				a := b.do(t, "POST", "/orders", `{}`, "k")
				if a.status != tt.status || a.body != tt.body || a.header.Get("WWW-Authenticate") != tt.wwwAuth || b.calls.Load() != 0 {
					t.Fatalf("got %d %q WWW-Authenticate %q, handler runs %d; want %d %q %q, 0",
						a.status, a.body, a.header.Get("WWW-Authenticate"), b.calls.Load(), tt.status, tt.body, tt.wwwAuth)
				}
				if rec := b.record(t, "k"); rec != nil {
					t.Fatalf("a scope refusal left a record: %+v", rec)
				}
			})
		}
	})
}

func TestRequestBodyLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{MaxBodyBytes: 10}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			in, _ := io.ReadAll(r.Body)
			w.Write(in)
		})
		if a := b.do(t, "POST", "/", "0123456789", "k"); a.status != 200 || a.body != "0123456789" {
			t.Fatalf("10 bytes: %+v", a)
		}
		a := b.do(t, "POST", "/", "0123456789x", "k2")
		if a.status != 413 || !strings.Contains(a.body, `"code":"body-too-large"`) {
			t.Fatalf("11 bytes: %+v", a)
		}
		if b.record(t, "k2") != nil || b.calls.Load() != 1 {
			t.Fatal("a 413 ran the handler or made a record")
		}
	})
}

func TestReleasedOutcomes(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		tests := []struct {
			name    string
			opts    Options
			handler http.HandlerFunc
			stored  bool
			reason  ledger.Reason // of the release
		}{
			{"500 not stored", Options{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, false, ledger.ReasonStatus},
			{"429 not stored", Options{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, false, ledger.ReasonStatus},
			{"409 not stored", Options{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(409) }, false, ledger.ReasonStatus},
			{"404 stored", Options{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }, true, ""},
			{"500 stored Stripe-style", Options{ShouldStore: StoreServerErrors}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, true, ""},
			{"404 not stored 2xx-only", Options{ShouldStore: StoreSuccess}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }, false, ledger.ReasonStatus},
			{"flushed", Options{}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "part")
				w.(http.Flusher).Flush()
			}, false, ledger.ReasonFlush},
			{"flushed via ResponseController", Options{}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "part")
				if err := http.NewResponseController(w).Flush(); err != nil {
					panic(err)
				}
			}, false, ledger.ReasonFlush},
			{"trailers", Options{}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Trailer", "X-Sum")
				io.WriteString(w, "data")
				w.Header().Set("X-Sum", "1")
			}, false, ledger.ReasonFlush},
			{"undeclared trailer", Options{}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "data")
				w.Header().Set(http.TrailerPrefix+"X-Sum", "1")
			}, false, ledger.ReasonFlush},
			{"body at limit", Options{MaxBodyBytes: 8}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "01234567")
			}, true, ""},
			{"body one byte over, ReleaseOversized", Options{MaxBodyBytes: 8, ReleaseOversized: true}, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "0123")
				io.WriteString(w, "45678")
			}, false, ledger.ReasonOversized},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, e, tt.opts, ledger.Options{}, tt.handler)
				first := b.do(t, "POST", "/", "", "k")
				rec := b.record(t, "k")
				if tt.stored != (rec != nil && rec.State == ledger.StateCompleted) {
					t.Fatalf("stored = %v, record %+v", !tt.stored, rec)
				}
				if !tt.stored && rec != nil {
					t.Fatalf("released key left a record: %+v", rec)
				}
				second := b.do(t, "POST", "/", "", "k")
				wantCalls := int64(2)
				if tt.stored {
					wantCalls = 1
				}
				if n := b.calls.Load(); n != wantCalls {
					t.Fatalf("handler ran %d times, want %d", n, wantCalls)
				}
				if second.status != first.status || second.body != first.body {
					t.Fatalf("second answer %+v differs from first %+v", second, first)
				}
				want := []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", first.status),
					ev(ledger.EventReplayed, "", first.status)}
				if !tt.stored {
					run := []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, tt.reason, first.status)}
					want = append(run, run...)
				}
				b.obs.check(t, want...)
			})
		}
	})
}

// The client receives an over-long body in full; the ledger keeps a
// marker, not the body.
func TestOverLimitResponseSentWhole(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		body := strings.Repeat("z", 100)
		b := setup(t, e, Options{MaxBodyBytes: 99}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, body)
		})
		if a := b.do(t, "POST", "/", "", "k"); a.status != 200 || a.body != body {
			t.Fatalf("got %d, %d bytes", a.status, len(a.body))
		}
		if rec := b.record(t, "k"); rec == nil || rec.Outcome.Kind != "http.not_stored" || rec.Outcome.Status != 200 ||
			string(rec.Outcome.Body) != "oversized" || rec.Outcome.Header != nil {
			t.Fatalf("over-long response: record %+v, want a marker of status 200, kind http.not_stored, reason oversized", rec)
		}
	})
}

// TestCompressedReplay: an answer the handler compressed (gzip, as
// connect-go does by default) is replayed with its Content-Encoding, so
// the retry decodes to the same body; without the field the client would
// get gzip bytes it takes for the body itself.
func TestCompressedReplay(t *testing.T) {
	const plain = `{"charge":"ch_1","amount":1250}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, plain)
	zw.Close()
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(201)
			w.Write(gz.Bytes())
		})
		// Asking for gzip itself, the client gets the bytes as sent.
		accept := http.Header{"Accept-Encoding": {"gzip"}}
		for i, replayed := range []string{"", "true"} {
			a := b.doHeader(t, "POST", "/charges", `{}`, accept, "k")
			if a.status != 201 || a.header.Get("Content-Encoding") != "gzip" || a.header.Get(DefaultReplayHeader) != replayed {
				t.Fatalf("answer %d: %d, Content-Encoding %q, replayed %q", i, a.status, a.header.Get("Content-Encoding"), a.header.Get(DefaultReplayHeader))
			}
			zr, err := gzip.NewReader(strings.NewReader(a.body))
			if err != nil {
				t.Fatalf("answer %d does not decode: %v", i, err)
			}
			if got, err := io.ReadAll(zr); err != nil || string(got) != plain {
				t.Fatalf("answer %d decodes to %q, %v; want %q", i, got, err, plain)
			}
		}
		if b.calls.Load() != 1 {
			t.Fatalf("handler ran %d times, want 1", b.calls.Load())
		}
	})
}

func TestCaptureEdges(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		tests := []struct {
			name    string
			handler http.HandlerFunc
			status  int
			header  http.Header // stored
			body    string
		}{
			{"writes nothing", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/x")
			}, 200, http.Header{"Location": {"/x"}}, ""},
			{"write before WriteHeader", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "hi")
				w.WriteHeader(201) // superfluous: the client got 200
				w.Header().Set("Location", "/late")
			}, 200, http.Header{"Content-Type": {"text/plain"}}, "hi"},
			{"late header change ignored", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/a")
				w.WriteHeader(202)
				w.Header().Set("Location", "/b")
			}, 202, http.Header{"Location": {"/a"}}, ""},
			{"sniffed content type", func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "<html><body>hi</body></html>")
			}, 200, http.Header{"Content-Type": {"text/html; charset=utf-8"}}, "<html><body>hi</body></html>"},
			{"sniffing suppressed", func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				io.WriteString(w, "<html>")
			}, 200, http.Header{}, "<html>"},
			{"early hints then 201", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", "</style.css>; rel=preload")
				w.WriteHeader(http.StatusEarlyHints)
				w.WriteHeader(201)
				io.WriteString(w, "ok")
			}, 201, http.Header{"Link": {"</style.css>; rel=preload"}, "Content-Type": {"text/plain; charset=utf-8"}}, "ok"},
			{"204 body dropped", func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(204)
				io.WriteString(w, "ignored")
			}, 204, http.Header{}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, e, Options{}, ledger.Options{}, tt.handler)
				first := b.do(t, "POST", "/", "", "k")
				rec := b.record(t, "k")
				if rec == nil || rec.State != ledger.StateCompleted {
					t.Fatalf("not stored: %+v", rec)
				}
				if rec.Outcome.Status != tt.status || string(rec.Outcome.Body) != tt.body || !equalHeader(rec.Outcome.Header, tt.header) {
					t.Fatalf("stored %d %q %q, want %d %q %q", rec.Outcome.Status, rec.Outcome.Header, rec.Outcome.Body, tt.status, tt.header, tt.body)
				}
				second := b.do(t, "POST", "/", "", "k")
				if second.status != first.status || second.body != first.body || second.header.Get("Content-Type") != first.header.Get("Content-Type") {
					t.Fatalf("replay %+v differs from first %+v", second, first)
				}
			})
		}
	})
}

func TestHijackNotStored(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
			rw.Flush()
		})
		if a := b.do(t, "POST", "/", "", "k"); a.status != 202 || a.body != "ok" {
			t.Fatalf("hijacked answer %+v", a)
		}
		// The client may read the answer before the handler returns and the
		// middleware releases the key: wait for the release.
		if rec := b.waitRecord(t, "k", func(r *ledger.Record) bool { return r == nil }); rec != nil {
			t.Fatalf("hijacked response left a record: %+v", rec)
		}
	})
}

// A panicking handler gives the key back; the panic reaches net/http,
// which drops the connection.
func TestPanicReleases(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		var fail atomic.Bool
		fail.Store(true)
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			if fail.Load() {
				panic("boom")
			}
			w.WriteHeader(201)
		})
		req, _ := http.NewRequest("POST", b.srv.URL, nil)
		req.Header.Set(HeaderName, "k")
		if resp, err := b.srv.Client().Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("panicking handler answered %d", resp.StatusCode)
		}
		if rec := b.record(t, "k"); rec != nil {
			t.Fatalf("panic left a record: %+v", rec)
		}
		fail.Store(false)
		if a := b.do(t, "POST", "/", "", "k"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "" {
			t.Fatalf("retry after panic: %+v", a)
		}
	})
}

// A client that hangs up does not lose the completion.
func TestClientDisconnectStillCompletes(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		handlerDone := make(chan struct{})
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			defer close(handlerDone)
			<-r.Context().Done() // the client is gone
			w.Header().Set("Location", "/orders/1")
			w.WriteHeader(201)
			io.WriteString(w, "made")
		})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", b.srv.URL, nil)
		req.Header.Set(HeaderName, "k")
		req.Header.Set("Content-Type", "application/json")
		go func() {
			for b.calls.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if resp, err := b.srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
		<-handlerDone
		// The completion runs right after the handler.
		rec := b.waitRecord(t, "k", func(r *ledger.Record) bool { return r != nil && r.State == ledger.StateCompleted })
		if rec == nil || rec.State != ledger.StateCompleted || rec.Outcome.Status != 201 || string(rec.Outcome.Body) != "made" {
			t.Fatalf("record after disconnect: %+v", rec)
		}
		if a := b.do(t, "POST", "/", "", "k"); a.status != 201 || a.body != "made" || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("retry after disconnect: %+v", a)
		}
	})
}

func TestConcurrentIdenticalRequests(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(20 * time.Millisecond) // widen the window for duplicates
			created(w, r)
		})
		const n = 50
		var wg sync.WaitGroup
		answers := make([]answer, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = b.do(t, "POST", "/orders", `{"amount":1}`, "same")
			})
		}
		close(start)
		wg.Wait()
		var firsts, conflicts, replays int
		for _, a := range answers {
			switch {
			case a.status == 201 && a.header.Get(DefaultReplayHeader) == "true":
				replays++
			case a.status == 201:
				firsts++
			case a.status == 409 && a.header.Get("Retry-After") != "":
				conflicts++
			default:
				t.Fatalf("unexpected answer %+v", a)
			}
		}
		if firsts != 1 || b.calls.Load() != 1 || conflicts+replays != n-1 {
			t.Fatalf("firsts %d, conflicts %d, replays %d, handler runs %d", firsts, conflicts, replays, b.calls.Load())
		}
	})
}

// TestEventsOmitKeyAndScope: the events of a first request, an in-flight
// duplicate, a replay, a reused key and a store failure carry neither the
// key nor the scope, in any field or in Err's text.
func TestEventsOmitKeyAndScope(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		const key, scope = "KEY-7f3a9c", "SCOPE-b81d"
		release := make(chan struct{})
		var once sync.Once
		b := setup(t, e, Options{Scope: func(*http.Request) (string, error) { return scope, nil }}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { <-release })
			w.WriteHeader(201)
		})
		done := make(chan struct{})
		go func() { b.do(t, "POST", "/p", "a", key); close(done) }()
		for b.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		b.do(t, "POST", "/p", "a", key) // in flight
		close(release)
		<-done
		b.do(t, "POST", "/p", "a", key) // replayed
		b.do(t, "POST", "/p", "b", key) // reused
		b.closeStore()
		b.do(t, "POST", "/p", "a", key+"-2") // store unavailable (the key's replay would come from the ledger's cache)
		b.obs.check(t, ev(ledger.EventClaimed, "", 0), ev(ledger.EventInFlight, "", 409), ev(ledger.EventStored, "", 201),
			ev(ledger.EventReplayed, "", 201), ev(ledger.EventKeyReused, "", 422), evFail(ledger.EventStoreUnavailable, "claim", 503))
		for _, ev := range b.obs.All() {
			if text := eventText(ev); strings.Contains(text, key) || strings.Contains(text, scope) {
				t.Errorf("an event carries the key or the scope: %s", text)
			}
		}
	})
}

// The default fingerprint is hash.Request: JSON bodies that differ only in
// member order and spacing are one request, while a number that canonical
// form would round (2^53+1) keeps its raw bytes and stays distinct.
func TestFingerprintJSON(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, created)
		if a := b.do(t, "POST", "/pay", `{"amount":1,"currency":"EUR"}`, "k"); a.status != 201 {
			t.Fatalf("first: %+v", a)
		}
		a := b.do(t, "POST", "/pay", `{ "currency": "EUR", "amount": 1.0 }`, "k")
		if a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("reordered JSON: %+v", a)
		}
		if a := b.do(t, "POST", "/pay", `{"amount":9007199254740993}`, "big"); a.status != 201 {
			t.Fatalf("big first: %+v", a)
		}
		if a := b.do(t, "POST", "/pay", `{"amount":9007199254740992}`, "big"); a.status != 422 {
			t.Fatalf("2^53 after 2^53+1 under one key: %d, want 422", a.status)
		}
		if a := b.do(t, "POST", "/pay", `{"amount":9007199254740993}`, "big"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("same big amount: %+v", a)
		}
		rec := b.record(t, "k")
		want := hash.Request("POST", "/pay", "application/json", []byte(`{"currency":"EUR","amount":1}`))
		if rec == nil || rec.Fingerprint != want {
			t.Fatalf("stored fingerprint %v, want hash.Request's %v", rec.Fingerprint, want)
		}
		if b.calls.Load() != 2 {
			t.Fatalf("handler ran %d times, want 2", b.calls.Load())
		}
	})
}

func TestFingerprintOverride(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		// Fingerprint the body only: the same body under one key is one
		// request, whatever the path.
		b := setup(t, e, Options{Fingerprint: func(r *http.Request, body []byte) (hash.Digest, error) {
			if len(body) == 0 {
				return hash.Digest{}, errors.New("empty body")
			}
			return hash.Bytes(body), nil
		}}, ledger.Options{}, created)
		if a := b.do(t, "POST", "/a", `1`, "k"); a.status != 201 {
			t.Fatalf("first: %+v", a)
		}
		if a := b.do(t, "POST", "/b?x", `1`, "k"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("other path, same body: %+v", a)
		}
		a := b.do(t, "POST", "/a", ``, "k2")
		if a.status != 400 || !strings.Contains(a.body, `"code":"bad-request"`) || b.record(t, "k2") != nil {
			t.Fatalf("fingerprint error: %+v", a)
		}
	})
}

// A handler that runs longer than the lease keeps its key: the heartbeat
// extends the lease, so a duplicate gets 409 instead of taking over.
func TestHeartbeatKeepsSlowHandlerKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		release := make(chan struct{})
		b := setup(t, e, Options{}, ledger.Options{Lease: 600 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.WriteHeader(201)
		})
		done := make(chan answer)
		go func() { done <- b.do(t, "POST", "/", "", "k") }()
		for b.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// Wait until the record has been extended past its first lease: by then
		// a takeover would be allowed without the heartbeat.
		first := b.record(t, "k")
		rec := b.waitRecord(t, "k", func(r *ledger.Record) bool {
			return r != nil && r.LeaseExpiresAt.After(first.LeaseExpiresAt)
		})
		if !rec.LeaseExpiresAt.After(first.LeaseExpiresAt) {
			t.Fatal("the lease was never extended")
		}
		time.Sleep(time.Until(first.LeaseExpiresAt) + 50*time.Millisecond)
		if a := b.do(t, "POST", "/", "", "k"); a.status != 409 {
			t.Fatalf("duplicate after the first lease ran out: %+v, want 409", a)
		}
		close(release)
		if a := <-done; a.status != 201 {
			t.Fatalf("slow first request: %+v", a)
		}
		if rec := b.record(t, "k"); rec == nil || rec.State != ledger.StateCompleted || rec.Fence != 1 || b.calls.Load() != 1 {
			t.Fatalf("record %+v after %d runs, want completed by the first holder", rec, b.calls.Load())
		}
	})
}

// A failed extension is not the end of the heartbeat: with the ledger's
// table locked by another session for longer than an extension may wait
// (SQLite's write lock; PostgreSQL's table lock; MySQL's row locks), the beat fails, and once
// the lock is gone it extends the lease again, so a duplicate arriving
// after the first lease ran out still gets 409 and the handler runs once.
func TestHeartbeatSurvivesTransientFailure(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		release := make(chan struct{})
		var once sync.Once
		finish := func() { once.Do(func() { close(release) }) }
		// An extension waits at most max(lease, 1s) (detached).
		b := setup(t, e, Options{}, ledger.Options{Lease: 600 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.WriteHeader(201)
		})
		// Registered after setup's, so it runs first: a failing test must
		// not leave the handler waiting while the server closes.
		t.Cleanup(finish)
		done := make(chan answer, 1)
		go func() { done <- b.do(t, "POST", "/", "", "k") }()
		for b.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		first := b.record(t, "k")

		ctx := context.Background()
		lock, err := b.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE takes the write lock
		if err != nil {
			t.Fatal(err)
		}
		if stmt := testdb.EngineOf(e).LockLedger; stmt != "" {
			if _, err := lock.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for !b.obs.has(func(e ledger.Event) bool { return e.Op == "extend" }) {
			if time.Now().After(deadline) {
				t.Fatalf("no extension failed while the table was locked; events:\n%s", eventList(b.obs.All()))
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Held past the first lease too: under load a claim slow to
		// answer has its lease reported lost (an "extend" event) before
		// the server's copy of it ends, and a lock gone by then would
		// leave the heartbeat nothing to outlast.
		time.Sleep(time.Until(first.LeaseExpiresAt))
		if err := lock.Rollback(); err != nil {
			t.Fatal(err)
		}

		// Extended again after the lock: a lease that ends in the future.
		// (Ending later than the first lease is not enough: on MySQL an
		// extension whose client gave up during the lock still runs once
		// the lock is gone, and writes the lease end it computed then,
		// already past.)
		rec := b.waitRecord(t, "k", func(r *ledger.Record) bool {
			return r != nil && r.LeaseExpiresAt.After(time.Now())
		})
		if !rec.LeaseExpiresAt.After(first.LeaseExpiresAt) {
			t.Fatalf("the heartbeat gave up after one failed extension: lease still ends at %v; events:\n%s", first.LeaseExpiresAt, eventList(b.obs.All()))
		}
		time.Sleep(time.Until(first.LeaseExpiresAt) + 50*time.Millisecond)
		if a := b.do(t, "POST", "/", "", "k"); a.status != 409 {
			t.Fatalf("duplicate after the failed extension: %+v, want 409", a)
		}
		finish()
		if a := <-done; a.status != 201 {
			t.Fatalf("slow first request: %+v", a)
		}
		if rec := b.record(t, "k"); rec == nil || rec.State != ledger.StateCompleted || rec.Fence != 1 || b.calls.Load() != 1 {
			t.Fatalf("record %+v after %d runs, want completed by the first holder, one run", rec, b.calls.Load())
		}
	})
}

// openSQL returns a fresh database of driver e through database/sql (the
// pgxv5 driver's database/sql view for "pgxv5"): for tests whose handlers
// write through a *sql.Tx.
func openSQL(t *testing.T, e string) *sql.DB {
	t.Helper()
	if d, ok := testdb.OpenSQL(t, e); ok {
		return d.SQL
	}
	t.Skip("this test's handlers write through a *sql.Tx: database/sql drivers only")
	return nil
}

// sqlDriver is the database/sql driver of e over db.
func sqlDriver(e string, db *sql.DB) driver.Driver[*sql.Tx] {
	return testdb.WrapSQL(e, db, "").Driver
}
