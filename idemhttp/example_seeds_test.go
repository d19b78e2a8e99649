package idemhttp_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// openLedger opens a fresh, migrated SQLite database in a temporary
// directory and a ledger on it with cfg, its statements prepared on the
// database. cleanup closes both and removes the directory.
func openLedger(cfg ledger.Options) (*ledger.Ledger[*sql.Tx], *sql.DB, func()) {
	dir, err := os.MkdirTemp("", "idemhttp-example")
	if err != nil {
		panic(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	d := sqlite.New(db)
	if err := schema.Migrate(context.Background(), d); err != nil {
		panic(err)
	}
	l, err := ledger.New(d, cfg)
	if err != nil {
		panic(err)
	}
	return l, db, func() { l.Close(); db.Close(); os.RemoveAll(dir) }
}

// send makes one request and prints the status, the fields named in show
// that the answer has, and the body.
func send(url, method, body, key string, show ...string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(idemhttp.HeaderName, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode)
	for _, name := range show {
		if v := resp.Header.Get(name); v != "" {
			fmt.Printf(" %s=%s", name, v)
		}
	}
	if body := strings.TrimSpace(string(b)); body != "" {
		fmt.Print(" ", body)
	}
	fmt.Println()
}

// tenant is the Scope of the examples: one tenant per API key.
func tenant(r *http.Request) (string, error) {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k, nil
	}
	return "public", nil
}

// gate is a handler that blocks its first run until released, so that an
// example can send a duplicate while the first request is in flight.
type gate struct {
	started, release chan struct{}
	runs             atomic.Int32
}

func newGate() *gate {
	return &gate{started: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if g.runs.Add(1) == 1 {
			close(g.started)
			<-g.release
		}
		h(w, r)
	}
}

func createPayment(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/payments/pay_1")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":"pay_1"}`)
}

// Seed 1: a key is required on every unsafe method; refusals use the
// service's own JSON error vocabulary, with 409 for a reused key; replays
// keep Location; records are kept for 24 hours.
func Example_requiredKeyCustomErrors() {
	l, _, cleanup := openLedger(ledger.Options{TTL: 24 * time.Hour})
	defer cleanup()

	refuse := func(w http.ResponseWriter, r *http.Request, ref idemhttp.Refusal) {
		status, code, msg := ref.Status, "IDEMPOTENCY_ERROR", ref.Detail
		switch ref.Code {
		case idemhttp.CodeKeyMissing:
			code, msg = "VALIDATION_FAILED", "Idempotency-Key header is required"
		case idemhttp.CodeKeyInvalid:
			code, msg = "VALIDATION_FAILED", "Idempotency-Key header is invalid"
		case idemhttp.CodeKeyReused:
			status, code, msg = http.StatusConflict, "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD", "Idempotency-Key was used with a different payload"
		case idemhttp.CodeInFlight:
			code, msg = "IDEMPOTENCY_IN_PROGRESS", "A request with this Idempotency-Key is in progress"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "message": msg})
	}
	g := newGate()
	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope:    tenant,
		Required: true,
		Methods:  []string{http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete},
		Refuse:   refuse,
	})
	srv := httptest.NewServer(mw(g.wrap(createPayment)))
	defer srv.Close()

	send(srv.URL+"/payments", "DELETE", `{}`, "")
	done := make(chan struct{})
	go func() { send(srv.URL+"/payments", "POST", `{"amount":100}`, "k-1", "Location"); close(done) }()
	<-g.started
	send(srv.URL+"/payments", "POST", `{"amount":100}`, "k-1")
	close(g.release)
	<-done
	send(srv.URL+"/payments", "POST", `{"amount":100}`, "k-1", "Location", "Idempotent-Replayed")
	send(srv.URL+"/payments", "POST", `{"amount":999}`, "k-1")
	fmt.Println("retention:", l.TTL())
	// Output:
	// 400 {"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}
	// 409 {"error":"IDEMPOTENCY_IN_PROGRESS","message":"A request with this Idempotency-Key is in progress"}
	// 201 Location=/payments/pay_1 {"id":"pay_1"}
	// 201 Location=/payments/pay_1 Idempotent-Replayed=true {"id":"pay_1"}
	// 409 {"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency-Key was used with a different payload"}
	// retention: 24h0m0s
}

// Seed 2: the defaults. The key is optional (here required on one route);
// a bad key is 400, a duplicate in flight 409 with Retry-After, a reused key
// 422, an unreachable store 503 (or the handler unprotected with FailOpen);
// only answers below 500 are stored, and at most 1 MiB of body.
func Example_defaults() {
	l, db, cleanup := openLedger(ledger.Options{})
	defer cleanup()

	g := newGate()
	var failures atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("/payments", g.wrap(createPayment))
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("failure %d", failures.Add(1)), http.StatusInternalServerError)
	})
	opts := idemhttp.Options{Scope: tenant}
	srv := httptest.NewServer(idemhttp.Middleware(l, opts)(mux))
	defer srv.Close()
	required := opts
	required.Required = true
	strictSrv := httptest.NewServer(idemhttp.Middleware(l, required)(mux))
	defer strictSrv.Close()

	send(srv.URL+"/flaky", "POST", `{}`, "")                 // no key: unprotected
	send(strictSrv.URL+"/payments", "POST", `{}`, "")        // required and missing
	send(srv.URL+"/payments", "POST", `{}`, `"unterminated`) // invalid
	done := make(chan struct{})
	go func() { send(srv.URL+"/payments", "POST", `{"amount":1}`, "k-2"); close(done) }()
	<-g.started
	send(srv.URL+"/payments", "POST", `{"amount":1}`, "k-2", "Retry-After")
	close(g.release)
	<-done
	send(srv.URL+"/payments", "POST", `{"amount":2}`, "k-2")
	send(srv.URL+"/flaky", "POST", `{}`, "k-3") // 500: not stored...
	send(srv.URL+"/flaky", "POST", `{}`, "k-3") // ...so the retry runs again
	fmt.Println("stored body limit:", idemhttp.DefaultMaxBodyBytes)

	db.Close() // the store goes away
	send(srv.URL+"/payments", "POST", `{}`, "k-4")
	open := opts
	open.FailurePolicy = idemhttp.FailOpen
	openSrv := httptest.NewServer(idemhttp.Middleware(l, open)(mux))
	defer openSrv.Close()
	send(openSrv.URL+"/payments", "POST", `{}`, "k-4")
	// Output:
	// 500 failure 1
	// 400 {"type":"about:blank","title":"Bad Request","status":400,"detail":"this request needs an Idempotency-Key header","code":"key-missing"}
	// 400 {"type":"about:blank","title":"Bad Request","status":400,"detail":"the Idempotency-Key header is not a valid key: it starts with a double quote but is not an RFC 9651 string (a closing quote missing, text after it, an escape of anything but a quote or a backslash, or a character outside printable ASCII)","code":"key-invalid"}
	// 409 Retry-After=1 {"type":"about:blank","title":"Conflict","status":409,"detail":"a request with this idempotency key is in flight","code":"in-flight"}
	// 201 {"id":"pay_1"}
	// 422 {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's","code":"key-reused"}
	// 500 failure 2
	// 500 failure 3
	// stored body limit: 1048576
	// 503 {"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the idempotency store is unavailable; retry later","code":"unavailable"}
	// 201 {"id":"pay_1"}
}

// Seed 3: replays are marked with X-Idempotent-Replay; only 2xx answers are
// stored; keys over 255 characters are refused.
func Example_successOnlyCustomMarker() {
	l, _, cleanup := openLedger(ledger.Options{MaxKeyLength: 255})
	defer cleanup()

	var notFound atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/payments", createPayment)
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("not found %d", notFound.Add(1)), http.StatusNotFound)
	})
	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope:        tenant,
		ReplayHeader: "X-Idempotent-Replay",
		ShouldStore:  idemhttp.StoreSuccess,
	})
	srv := httptest.NewServer(mw(mux))
	defer srv.Close()

	send(srv.URL+"/payments", "POST", `{}`, "k-5")
	send(srv.URL+"/payments", "POST", `{}`, "k-5", "X-Idempotent-Replay")
	send(srv.URL+"/missing", "POST", `{}`, "k-6")
	send(srv.URL+"/missing", "POST", `{}`, "k-6", "X-Idempotent-Replay")
	send(srv.URL+"/payments", "POST", `{}`, strings.Repeat("k", 255))
	send(srv.URL+"/payments", "POST", `{}`, strings.Repeat("k", 256))
	// Output:
	// 201 {"id":"pay_1"}
	// 201 X-Idempotent-Replay=true {"id":"pay_1"}
	// 404 not found 1
	// 404 not found 2
	// 201 {"id":"pay_1"}
	// 400 {"type":"about:blank","title":"Bad Request","status":400,"detail":"the Idempotency-Key header is not a valid key: longer than 255 bytes","code":"key-invalid"}
}
