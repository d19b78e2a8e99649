package idemhttp

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// protect is either form of the middleware over one database, for the
// security tests that must hold for both.
type protect struct {
	name string
	wrap func(l *ledger.Ledger[*sql.Tx], db *sql.DB, opts Options, h http.HandlerFunc) http.Handler
}

var protections = []protect{
	{"Middleware", func(l *ledger.Ledger[*sql.Tx], db *sql.DB, opts Options, h http.HandlerFunc) http.Handler {
		return Middleware(l, opts)(h)
	}},
	{"TxHandler", func(l *ledger.Ledger[*sql.Tx], db *sql.DB, opts Options, h http.HandlerFunc) http.Handler {
		return TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, _ *sql.Tx) { h(w, r) })
	}},
}

// serve starts a real server for hd, with the noise of deliberate errors
// discarded.
func serve(t *testing.T, hd http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(hd)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// send is one request with the given header lines; it fails the test on a
// transport error.
func send(t *testing.T, srv *httptest.Server, method, target, body string, h http.Header) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
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

// Two scopes that pick the same key never meet: each runs the handler once
// and replays its own answer, even with the same body, even while the other
// is in flight, and a different body in one scope is no reuse in the other.
func TestScopeIsolation(t *testing.T) {
	for _, pr := range protections {
		t.Run(pr.name, func(t *testing.T) {
			db := testdb.SQLitePool(t)
			l, err := ledger.New(sqlite.New(db), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			runs := map[string]int{}
			hold := make(chan struct{})
			held := make(chan struct{})
			srv := serve(t, pr.wrap(l, db, Options{
				Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
			}, func(w http.ResponseWriter, r *http.Request) {
				tenant := r.Header.Get("X-Tenant")
				mu.Lock()
				runs[tenant]++
				mu.Unlock()
				if tenant == "alice" && pr.name == "Middleware" {
					// Alice's first request stays in flight while Bob
					// uses the same key. (TxHandler's transaction holds
					// SQLite's write lock, so there Bob would wait.)
					close(held)
					<-hold
				}
				body, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, "for "+tenant+": "+string(body))
			}))
			as := func(tenant string) http.Header {
				return http.Header{"X-Tenant": {tenant}, HeaderName: {`"shared-key"`}}
			}
			aliceDone := make(chan answer)
			go func() { aliceDone <- send(t, srv, "POST", "/pay", "10", as("alice")) }()
			if pr.name == "Middleware" {
				<-held
			}
			if a := send(t, srv, "POST", "/pay", "10", as("bob")); a.status != 201 || a.body != "for bob: 10" || a.header.Get(DefaultReplayHeader) != "" {
				t.Fatalf("bob, same key and body while alice's request runs: %+v", a)
			}
			if pr.name == "Middleware" {
				close(hold)
			}
			if a := <-aliceDone; a.status != 201 || a.body != "for alice: 10" {
				t.Fatalf("alice: %+v", a)
			}
			for _, tenant := range []string{"alice", "bob"} {
				a := send(t, srv, "POST", "/pay", "10", as(tenant))
				if a.status != 201 || a.body != "for "+tenant+": 10" || a.header.Get(DefaultReplayHeader) != "true" {
					t.Fatalf("%s's replay: %+v", tenant, a)
				}
			}
			// Carol's other body under the same key is her first request,
			// not a reuse of alice's key.
			if a := send(t, srv, "POST", "/pay", "99", as("carol")); a.status != 201 || a.body != "for carol: 99" {
				t.Fatalf("carol, other body: %+v", a)
			}
			if runs["alice"] != 1 || runs["bob"] != 1 || runs["carol"] != 1 {
				t.Fatalf("runs %v, want one per scope", runs)
			}
			for _, tenant := range []string{"alice", "bob", "carol"} {
				// (TxHandler stores its outcome inside Mutate's value
				// encoding: only the state is compared there.)
				rec, err := l.Get(context.Background(), tenant, "shared-key")
				if err != nil || rec.State != ledger.StateCompleted ||
					pr.name == "Middleware" && !strings.HasPrefix(string(rec.Outcome.Body), "for "+tenant+": ") {
					t.Fatalf("%s's record: %+v, %v", tenant, rec, err)
				}
			}
		})
	}
}

// Credentials never reach the database, even when ReplayHeaders names them:
// neither the request's Authorization, Proxy-Authorization and Cookie, nor a
// Set-Cookie or echoed Authorization of the response. The whole database
// (every column of the ledger, the file and its WAL) is searched for the
// secret values; a header that may be stored is found, which shows that the
// search would see one.
func TestCredentialsNeverStored(t *testing.T) {
	secrets := []string{"tok-AUTH-5e1f09", "ck-COOKIE-77aa31", "px-PROXY-c0de42", "sc-SETCOOKIE-9b8e", "re-AUTH-ECHO-4d2c"}
	const visible = "visible-XECHO-13f7"
	for _, pr := range protections {
		t.Run(pr.name, func(t *testing.T) {
			db, path := testdb.SQLiteFile(t, sqlite.Options{})
			l, err := ledger.New(sqlite.New(db), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv := serve(t, pr.wrap(l, db, Options{
				Scope:         func(*http.Request) (string, error) { return testScope, nil },
				ReplayHeaders: []string{"Set-Cookie", "Authorization", "Proxy-Authorization", "Cookie", "X-Echo"},
			}, func(w http.ResponseWriter, r *http.Request) {
				h := w.Header()
				h.Set("Set-Cookie", "sid="+secrets[3]+"; HttpOnly")
				h.Set("Authorization", "Bearer "+secrets[4])
				h.Set("Cookie", r.Header.Get("Cookie"))
				h.Set("Proxy-Authorization", r.Header.Get("Proxy-Authorization"))
				h.Set("X-Echo", visible)
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"ok":true}`)
			}))
			h := http.Header{
				HeaderName:            {"k"},
				"Content-Type":        {"application/json"},
				"Authorization":       {"Bearer " + secrets[0]},
				"Cookie":              {"session=" + secrets[1]},
				"Proxy-Authorization": {"Basic " + secrets[2]},
			}
			first := send(t, srv, "POST", "/orders", `{"n":1}`, h)
			if first.status != 201 || first.header.Get("Set-Cookie") != "sid="+secrets[3]+"; HttpOnly" {
				t.Fatalf("first answer (the client that logs in gets its cookie): %+v", first)
			}
			again := send(t, srv, "POST", "/orders", `{"n":1}`, h)
			if again.header.Get(DefaultReplayHeader) != "true" || again.header.Get("X-Echo") != visible {
				t.Fatalf("replay: %+v", again)
			}
			for _, name := range []string{"Set-Cookie", "Authorization", "Proxy-Authorization", "Cookie"} {
				if v := again.header.Values(name); len(v) != 0 {
					t.Errorf("replay carries %s: %q", name, v)
				}
			}

			// Every column of every row, as bytes.
			rows, err := db.Query(`SELECT scope, key, fingerprint, state, coalesce(lease_token, ''),
				coalesce(status, 0), coalesce(headers, x''), coalesce(body, x'') FROM idempotency_ledger`)
			if err != nil {
				t.Fatal(err)
			}
			var dump bytes.Buffer
			for rows.Next() {
				var cols [8][]byte
				if err := rows.Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5], &cols[6], &cols[7]); err != nil {
					t.Fatal(err)
				}
				dump.Write(bytes.Join(cols[:], []byte{0}))
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			// The file and its write-ahead log, as they are on disk.
			for _, p := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(p)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				dump.Write(b)
			}
			for _, s := range secrets {
				if bytes.Contains(dump.Bytes(), []byte(s)) {
					t.Errorf("the database holds %q", s)
				}
			}
			if !bytes.Contains(dump.Bytes(), []byte(visible)) {
				t.Fatal("the stored X-Echo value is not in the dump: the search sees nothing")
			}
		})
	}
}

// No event carries the key or the scope, in its fields or in Err's text,
// nor does LogObserver's output of them, on every kind of event the
// middleware and TxHandler report: claimed, stored, replayed, in flight,
// key reused, released, and store unavailable at the claim (both forms,
// fail open too), the completion, the release and the extension. The key
// and scope are chosen so that a database error quoting its arguments
// would carry them; redact is tested on such errors below.
func TestEventsNeverCarryKeyOrScope(t *testing.T) {
	const key, scope = "KEY-c4f1e9-secret", "SCOPE-77d2a0-tenant"
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	obs := &recorder{}
	opts := Options{
		Scope:    func(*http.Request) (string, error) { return scope, nil },
		Observer: ledger.Observers(obs, ledger.LogObserver(logger)),
	}
	h := http.Header{HeaderName: {key}, "Content-Type": {"application/json"}}
	newLedger := func(db *sql.DB, lease time.Duration) *ledger.Ledger[*sql.Tx] {
		l, err := ledger.New(sqlite.New(db), ledger.Options{Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	// Replayed, in flight, reused, then store unavailable (fail closed).
	{
		db := testdb.SQLitePool(t)
		started, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		srv := serve(t, Middleware(newLedger(db, 0), opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() {
				close(started)
				<-release
			})
			w.WriteHeader(201)
		})))
		done := make(chan answer)
		go func() { done <- send(t, srv, "POST", "/p", `{"a":1}`, h) }()
		<-started
		a := send(t, srv, "POST", "/p", `{"a":1}`, h) // in flight
		close(release)
		<-done
		if a.status != 409 {
			t.Fatalf("not in flight: %+v", a)
		}
		send(t, srv, "POST", "/p", `{"a":1}`, h) // replayed
		send(t, srv, "POST", "/p", `{"a":2}`, h) // reused
		db.Close()
		send(t, srv, "POST", "/p", `{"a":1}`, h) // store unavailable
	}
	// Store unavailable, fail open.
	{
		db := testdb.SQLitePool(t)
		o := opts
		o.FailurePolicy = FailOpen
		srv := serve(t, Middleware(newLedger(db, 0), o)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
		db.Close()
		send(t, srv, "POST", "/p", `{}`, h)
	}
	// Extension failed, then completion failed: the handler outlives
	// a third of its lease after the database went away.
	{
		db := testdb.SQLitePool(t)
		srv := serve(t, Middleware(newLedger(db, 60*time.Millisecond), opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			db.Close()
			time.Sleep(50 * time.Millisecond)
			w.WriteHeader(201)
		})))
		send(t, srv, "POST", "/p", `{}`, h)
	}
	// Release failed: a 500 is not stored, and the database is gone.
	{
		db := testdb.SQLitePool(t)
		srv := serve(t, Middleware(newLedger(db, 0), opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			db.Close()
			w.WriteHeader(500)
		})))
		send(t, srv, "POST", "/p", `{}`, h)
	}
	// TxHandler: response too large (released), claimed and stored,
	// replayed, reused, store unavailable.
	{
		db := testdb.SQLitePool(t)
		o := opts
		o.MaxBodyBytes = 8
		srv := serve(t, TxHandler(newLedger(db, 0), o, func(w http.ResponseWriter, r *http.Request, _ *sql.Tx) {
			if r.URL.Path == "/big" {
				io.WriteString(w, "more than eight bytes")
			}
		}))
		send(t, srv, "POST", "/big", `{}`, h)
		send(t, srv, "POST", "/p", `{}`, h)
		send(t, srv, "POST", "/p", `{}`, h)
		send(t, srv, "POST", "/p", `{"b":1}`, h)
		db.Close()
		send(t, srv, "POST", "/p", `{}`, h)
	}

	type seen struct {
		kind ledger.EventKind
		op   string
	}
	got := map[seen]bool{}
	for _, e := range obs.All() {
		got[seen{e.Kind, e.Op}] = true
		if text := eventText(e); strings.Contains(text, "KEY-c4f1e9") || strings.Contains(text, "SCOPE-77d2a0") {
			t.Errorf("an event carries the key or the scope: %s", text)
		}
	}
	for _, want := range []seen{{ledger.EventClaimed, ""}, {ledger.EventStored, ""}, {ledger.EventReplayed, ""},
		{ledger.EventInFlight, ""}, {ledger.EventKeyReused, ""}, {ledger.EventReleased, ""},
		{ledger.EventStoreUnavailable, "claim"}, {ledger.EventStoreUnavailable, "complete"},
		{ledger.EventStoreUnavailable, "release"}, {ledger.EventStoreUnavailable, "extend"}} {
		if !got[want] {
			t.Errorf("no %v event with Op %q in:\n%s", want.kind, want.op, eventList(obs.All()))
		}
	}
	out := logs.String()
	if strings.Contains(out, "KEY-c4f1e9") || strings.Contains(out, "SCOPE-77d2a0") {
		t.Fatalf("the logs carry the key or the scope:\n%s", out)
	}
	if n, want := strings.Count(out, "\n"), len(obs.All()); n != want {
		t.Fatalf("%d log records for %d events:\n%s", n, want, out)
	}
}
