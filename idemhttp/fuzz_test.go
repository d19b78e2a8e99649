package idemhttp

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// fuzzStatuses are the handler's answers, chosen by the body's first byte.
// 409 and 429 are not stored (StoreDefault), so a key may run again after
// them; every other status is stored.
var fuzzStatuses = []int{200, 201, 202, 204, 400, 404, 409, 422, 429}

// fuzzProtected are the methods the fuzzed middleware protects.
var fuzzProtected = map[string]bool{"POST": true, "PATCH": true, "PUT": true, "DELETE": true}

// fuzzMaxOps bounds the requests of one fuzz input.
const fuzzMaxOps = 12

// FuzzMiddleware sends random methods, targets, content types, keys,
// scopes, extra header lines and bodies through the middleware on a real
// server, as a sequence of requests in a random order, some of them two at
// once. The first two requests are the fuzzed one, twice; each byte of
// order then adds a request that varies it (another key, another scope,
// another body, another method, extra headers, sent together with the next
// one). Each input gets a scope namespace of its own, so the model below is
// exact for it. The handler echoes the request's X-Echo lines in its answer
// (an allowed field), so the extra lines put fuzzed bytes, obs-text
// included, into stored headers.
//
// It checks, for every answer: no 5xx and no dropped connection (the
// handler never answers 5xx, so either would be the middleware's); the
// handler ran for the request exactly when the answer is the handler's (its
// status and its echoed body, unmarked); an answer the handler did not
// give is a replay or a refusal (400, 409 only for a request sent together
// with another, 413, 422) and never runs the handler; a key that is
// invalid gets 400; a replay equals the one stored run of its scope and
// key, X-Echo lines byte for byte; and a request identical to an earlier
// stored one, sent after it completed, is a replay. Across the input, each
// scope and key has at most one run with a stored status: exactly once.
func FuzzMiddleware(f *testing.F) {
	db, _ := testdb.SQLiteFile(f, sqlite.Options{})
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		f.Fatal(err)
	}
	m := &fuzzModel{runs: make(map[string]fuzzRun)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := 200
		if len(body) > 0 {
			status = fuzzStatuses[int(body[0])%len(fuzzStatuses)]
		}
		echo := r.Header.Values("X-Echo")
		if fuzzProtected[r.Method] {
			key, _ := ParseKey(r.Header, KeyRules{})
			m.ran(r.Header.Get("X-Req"), r.Header.Get("X-Tenant"), key, status, body, echo)
		}
		for _, v := range echo {
			w.Header().Add("X-Echo", v)
		}
		w.Header().Set("Location", fuzzLocation(body))
		w.Header().Add("Link", "</a>")
		w.Header().Add("Link", "</b>")
		w.Header().Set("Set-Cookie", "s=1")
		w.WriteHeader(status)
		w.Write(body)
	})
	mw := Middleware(l, Options{
		Scope:         func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Methods:       []string{"POST", "PATCH", "PUT", "DELETE"},
		MaxBodyBytes:  64,
		ReplayHeaders: []string{"X-Echo"},
	})
	srv := httptest.NewUnstartedServer(mw(h))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	f.Cleanup(srv.Close)
	client := srv.Client()

	f.Add("POST", "/orders?x=1", "application/json", `"k1"`, "t1", []byte(`{"a":1}`), "", []byte{})
	f.Add("PATCH", "/", "text/plain", `k2`, "", []byte("\x04hello"), "X-A: 1", []byte{0x01, 0x02, 0x04})
	f.Add("PUT", "/a%20b", "", `""`, "t", []byte{}, "", []byte{0x20, 0x00})
	f.Add("DELETE", "/", "application/json; charset=utf-8", `"k";v=1`, "t", []byte(`{"n":9007199254740993}`), "", []byte{0x2c, 0x0c, 0x10})
	f.Add("POST", "/", "application/json", `k3`, "t", bytes.Repeat([]byte("z"), 65), "", []byte{0x08})
	f.Add("GET", "/", "", `k4`, "t", []byte("x"), "", []byte{0x10, 0x30})
	f.Add("POST", "/", "", `"unterminated`, "t", []byte("x"), "", []byte{})
	f.Add("POST", "/p", "application/json", `k5`, "t", []byte(`{"b":1,"a":2}`), "Idempotency-Key: k5\nAuthorization: Bearer x", []byte{0x0c, 0x40, 0x41})
	f.Add("POST", "/p", "application/json", `"k 6"`, "t\u00e9", []byte("\x06"), "Cookie: a=b", []byte{0x20, 0x20, 0x21, 0x22, 0x04, 0x24})
	// Echoed header values with obs-text (bytes 0x80 to 0xFF, not UTF-8),
	// stored by the run of the first 0x41 (another key, the extra lines)
	// and replayed to the second.
	f.Add("POST", "/f", "application/json", `k7`, "t", []byte(`[1]`), "X-Echo: attachment; filename=\"caf\xe9.txt\"", []byte{0x41, 0x41})
	f.Add("PUT", "/f", "", `k8`, "t", []byte("\x01"), "X-Echo: \x80\nX-Echo: caf\u00e9\nX-Echo: a\xbfb\nX-Echo: \xff", []byte{0x41, 0x41, 0x40})

	var inputs atomic.Int64
	f.Fuzz(func(t *testing.T, method, target, contentType, key, tenant string, body []byte, extra string, order []byte) {
		base, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil || base.URL.Host != srv.Listener.Addr().String() {
			return // not a request a client can send to this server
		}
		ns := strconv.FormatInt(inputs.Add(1), 10) + "|" // this input's scopes
		ops := []fuzzOp{{method: method, target: target, contentType: contentType, key: key, tenant: ns + tenant, body: body}}
		ops = append(ops, ops[0])
		for _, b := range order {
			if len(ops) == fuzzMaxOps {
				break
			}
			ops = append(ops, ops[0].vary(b, extra, ns))
		}
		for i := range ops {
			if !ops[i].sendable(srv.URL) {
				return
			}
			ops[i].id = strconv.Itoa(i)
		}

		m.reset()
		stored := make(map[string]fuzzOp) // scope+key: the request whose outcome is stored
		answers := make([]answer, len(ops))
		for i := 0; i < len(ops); i++ {
			group := []int{i}
			if ops[i].together && i+1 < len(ops) {
				group = append(group, i+1)
				i++
			}
			var wg sync.WaitGroup
			for _, g := range group {
				wg.Go(func() { answers[g] = ops[g].send(t, client, srv.URL) })
			}
			wg.Wait()
			for _, g := range group {
				m.check(t, ops[g], answers[g], len(group) > 1, stored)
			}
			for _, g := range group {
				if r, ok := m.run(ops[g].id); ok && StoreDefault(r.status) {
					stored[ops[g].scopeKey()] = ops[g]
				}
			}
		}
		m.checkOnce(t)
	})
}

// fuzzOp is one request of a fuzz input.
type fuzzOp struct {
	id                                       string // X-Req: which request the handler ran
	method, target, contentType, key, tenant string
	body                                     []byte
	extra                                    string // header lines "Name: value", one per line
	together                                 bool   // sent at the same time as the next op
}

// vary derives a request from op by the bits of b.
func (op fuzzOp) vary(b byte, extra, ns string) fuzzOp {
	v := op
	if b&0x01 != 0 {
		v.key = `"other-key"`
	}
	if b&0x02 != 0 {
		v.tenant = ns + "other-scope"
	}
	switch b >> 2 & 0x03 {
	case 1: // another status, another fingerprint
		v.body = append([]byte{op.first() + 1}, op.rest()...)
	case 2: // the same canonical JSON, other bytes
		v.body = append(bytes.Clone(op.body), ' ')
	case 3:
		v.body = nil
	}
	if b&0x10 != 0 {
		v.method = "POST"
	}
	v.together = b&0x20 != 0
	if b&0x40 != 0 {
		v.extra = extra
	}
	if b&0x80 != 0 {
		v.target = "/other"
	}
	return v
}

func (op fuzzOp) first() byte {
	if len(op.body) == 0 {
		return 0
	}
	return op.body[0]
}

func (op fuzzOp) rest() []byte {
	if len(op.body) == 0 {
		return nil
	}
	return op.body[1:]
}

func (op fuzzOp) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", op.contentType)
	h.Set(HeaderName, op.key)
	for _, line := range strings.Split(op.extra, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && isToken(name) && name != "Host" {
			h.Add(name, strings.Trim(value, " \t"))
		}
	}
	h.Set("X-Tenant", op.tenant)
	h.Set("X-Req", op.id)
	return h
}

// sendable reports whether net/http's client would send op as it is.
func (op fuzzOp) sendable(base string) bool {
	req, err := http.NewRequest(op.method, base+op.target, nil)
	if err != nil || req.URL.Host != strings.TrimPrefix(base, "http://") {
		return false
	}
	// The client writes the target as it is, but the server splits the
	// request line at spaces and answers 400 for a target with one (a
	// query "? ", say), before any handler runs.
	if uri := req.URL.RequestURI(); strings.Contains(uri, " ") {
		return false
	}
	for _, values := range op.header() {
		for _, v := range values {
			if !validFieldValue(v) {
				return false
			}
		}
	}
	return true
}

func (op fuzzOp) send(t *testing.T, c *http.Client, base string) answer {
	req, err := http.NewRequest(op.method, base+op.target, bytes.NewReader(op.body))
	if err != nil {
		t.Errorf("%s %q: %v", op.method, op.target, err)
		return answer{}
	}
	req.Header = op.header()
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %q key %q: %v", op.method, op.target, op.key, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s %q key %q: reading: %v", op.method, op.target, op.key, err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// parsedKey is the key the middleware reads from op's header lines.
func (op fuzzOp) parsedKey() (string, error) { return ParseKey(op.header(), KeyRules{}) }

// scopeKey is the scope and key the handler sees. The server drops the
// whitespace that ends a field value, so a tenant "t " is the scope "t",
// as the handler's X-Tenant says.
func (op fuzzOp) scopeKey() string {
	k, _ := op.parsedKey()
	return strings.TrimRight(op.tenant, " \t") + "\x00" + k
}

// same reports whether two requests are byte for byte the same operation.
func (op fuzzOp) same(o fuzzOp) bool {
	return op.method == o.method && op.target == o.target && op.contentType == o.contentType &&
		bytes.Equal(op.body, o.body)
}

// fuzzRun is one run of the handler.
type fuzzRun struct {
	scopeKey string
	status   int
	body     string // as the client gets it
	location string
	echo     []string // the X-Echo lines of the request, echoed and replayed
}

func fuzzLocation(body []byte) string { return "/x/" + strconv.Itoa(len(body)) }

// fuzzModel records what the handler ran.
type fuzzModel struct {
	mu   sync.Mutex
	runs map[string]fuzzRun // by X-Req
}

func (m *fuzzModel) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.runs)
}

func (m *fuzzModel) ran(id, tenant, key string, status int, body []byte, echo []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	loc := fuzzLocation(body)
	if !bodyAllowed(status) {
		body = nil
	}
	m.runs[id] = fuzzRun{scopeKey: tenant + "\x00" + key, status: status, body: string(body), location: loc, echo: echo}
}

func (m *fuzzModel) run(id string) (fuzzRun, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	return r, ok
}

// storedRun returns the run whose outcome is stored for scopeKey.
func (m *fuzzModel) storedRun(scopeKey string) (fuzzRun, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.scopeKey == scopeKey && StoreDefault(r.status) {
			return r, true
		}
	}
	return fuzzRun{}, false
}

func (m *fuzzModel) check(t *testing.T, op fuzzOp, a answer, concurrent bool, stored map[string]fuzzOp) {
	t.Helper()
	if a.status == 0 {
		return // already reported
	}
	if a.status >= 500 {
		t.Fatalf("%s %q key %q: %d %q", op.method, op.target, op.key, a.status, a.body)
	}
	if !fuzzProtected[op.method] {
		if a.header.Get(DefaultReplayHeader) != "" {
			t.Fatalf("unprotected %s answered with a replay", op.method)
		}
		return
	}
	run, ran := m.run(op.id)
	_, keyErr := op.parsedKey()
	replay := a.header.Get(DefaultReplayHeader) == "true"
	switch {
	case keyErr != nil:
		if a.status != 400 || ran || !strings.Contains(a.body, `"code":"key-invalid"`) {
			t.Fatalf("invalid key %q (%v): ran %v, answer %d %q", op.key, keyErr, ran, a.status, a.body)
		}
	case ran:
		if replay || a.status != run.status || a.body != run.body || a.header.Get("Location") != run.location ||
			!slices.Equal(a.header.Values("X-Echo"), run.echo) || a.header.Get("Set-Cookie") != "s=1" {
			t.Fatalf("the handler ran %+v, yet the client got %d %q replay=%v", run, a.status, a.body, replay)
		}
	case replay:
		first, ok := m.storedRun(op.scopeKey())
		if !ok || a.status != first.status || a.body != first.body ||
			a.header.Get("Location") != first.location || !slices.Equal(a.header.Values("X-Echo"), first.echo) ||
			len(a.header.Values("Link")) != 2 || a.header.Get("Set-Cookie") != "" {
			t.Fatalf("replay %d %q %q differs from the stored run %+v (found %v)", a.status, a.body, a.header, first, ok)
		}
	default:
		code := map[int]string{400: "", 409: "in-flight", 413: "body-too-large", 422: "key-reused"}
		want, known := code[a.status]
		if !known || a.header.Get("Content-Type") != ProblemContentType || !strings.Contains(a.body, `"code":"`+want) {
			t.Fatalf("%s %q key %q: not the handler's, not a replay, not a refusal: %d %q", op.method, op.target, op.key, a.status, a.body)
		}
		if a.status == 409 && !concurrent {
			t.Fatalf("409 in flight for a request sent alone: %q", a.body)
		}
	}
	// A request identical to the stored one, sent after it completed, is
	// a replay (or 413, when its body is over the limit, or 400 for a
	// scope the ledger refuses, which no request got past either).
	if s, ok := stored[op.scopeKey()]; ok && s.same(op) && keyErr == nil && !concurrent && !replay {
		t.Fatalf("%s %q key %q: %d %q, want a replay of the stored answer", op.method, op.target, op.key, a.status, a.body)
	}
}

// checkOnce fails when a scope and key ran twice with stored statuses.
func (m *fuzzModel) checkOnce(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[string]int)
	for _, r := range m.runs {
		if StoreDefault(r.status) {
			if seen[r.scopeKey]++; seen[r.scopeKey] > 1 {
				t.Fatalf("scope and key %q ran twice with stored outcomes", r.scopeKey)
			}
		}
	}
}

// isToken reports whether s is an HTTP field name (RFC 9110 Section 5.1).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c <= ' ' || c == 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validFieldValue is what net/http's client accepts in a field value (RFC
// 9110 Section 5.5): no control characters but tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
