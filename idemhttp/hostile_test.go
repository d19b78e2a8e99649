package idemhttp

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// hostile is one server for the catalogue of bad input: the middleware over
// a SQLite file, scope from X-Tenant, a handler that counts its runs and
// echoes the body's length.
type hostile struct {
	srv  *http.Server
	addr string
	db   *sql.DB
	l    *ledger.Ledger[*sql.Tx]
	runs atomic.Int64
}

func newHostile(t *testing.T, opts Options) *hostile {
	t.Helper()
	return newHostileServer(t, opts, 0)
}

// newHostileServer is newHostile with the server's limit on header lines
// (values) raised to headerValues (see allowHeaderValues); 0 keeps
// net/http's default.
func newHostileServer(t *testing.T, opts Options, headerValues int) *hostile {
	t.Helper()
	s := &hostile{db: testdb.SQLitePool(t)}
	l, err := ledger.New(sqlite.New(s.db), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.l = l
	opts.Scope = func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.runs.Add(1)
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "got %d bytes", n)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: Middleware(l, opts)(h), ReadHeaderTimeout: 30 * time.Second}
	if headerValues > 0 {
		allowHeaderValues(s.srv, headerValues)
	}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// raw sends the bytes of one HTTP/1.1 request as they are (no client checks
// in the way) and reads the answer.
func (s *hostile) raw(t *testing.T, req []byte) answer {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	// Write and read at once: the server may answer (431, 413) before it
	// has read everything.
	go func() { c.Write(req) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// request builds raw request bytes: the request line, Host, the given
// header lines (each "Name: value", sent verbatim), Content-Length and the
// body.
func request(method string, lines []string, body []byte) []byte {
	return framed(method, lines, body, "")
}

// framed is request with another framing of the body: length is the
// Content-Length to announce ("" for the body's), or "chunked" to send the
// body as one chunk without a length.
func framed(method string, lines []string, body []byte, length string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", method)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	switch length {
	case "chunked":
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		return b.Bytes()
	case "":
		length = strconv.Itoa(len(body))
	}
	fmt.Fprintf(&b, "Content-Length: %s\r\n\r\n", length)
	b.Write(body)
	return b.Bytes()
}

func (s *hostile) records(t *testing.T) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM idempotency_ledger`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHostileInput is the catalogue of bad input in RELIABILITY.md, class by
// class: what a client sends and what it gets. A refusal never runs the
// handler and never leaves a record.
func TestHostileInput(t *testing.T) {
	key := func(v string) string { return HeaderName + ": " + v }
	tenant := "X-Tenant: t"
	many := func(n int, f func(i int) string) []string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = f(i)
		}
		return lines
	}
	tests := []struct {
		name   string
		opts   Options
		method string
		lines  []string
		body   []byte
		length string // framing: see framed
		status int    // the answer
		code   Code   // the refusal's code; "" when the handler answers
		runs   int64  // handler runs
		stored int    // records left
		note   string // for the failure message
		// headerValues raises the server's limit on header lines (Go
		// 1.27's MaxHeaderValueCount, 500 by default), so that the
		// middleware, not net/http, meets the lines; 0 keeps the default.
		headerValues int
	}{
		// Keys.
		{name: "key of 256 bytes", lines: []string{key(strings.Repeat("k", 256)), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "key of 255 bytes", lines: []string{key(strings.Repeat("k", 255)), tenant}, status: 201, runs: 1, stored: 1},
		{name: "key of 100000 bytes", lines: []string{key(strings.Repeat("k", 100_000)), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "key of 2 MiB, over MaxHeaderBytes", lines: []string{key(strings.Repeat("k", 2<<20)), tenant}, status: 431},
		{name: "non-ASCII key (UTF-8)", lines: []string{key("caf\xc3\xa9"), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "non-ASCII key (obs-text byte)", lines: []string{key(`"a` + "\xff" + `b"`), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "NUL in key", lines: []string{key("a\x00b"), tenant}, status: 400, note: "net/http refuses the field value"},
		{name: "control character in key", lines: []string{key("a\x01b"), tenant}, status: 400, note: "net/http refuses the field value"},
		{name: "DEL in key", lines: []string{key("a\x7fb"), tenant}, status: 400, note: "net/http refuses the field value"},
		{name: "tab inside a bare key", lines: []string{key("a\tb"), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "escaped control in sf-string", lines: []string{key(`"a\u0001"`), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "two key lines", lines: []string{key("a"), key("a"), tenant}, status: 400, code: CodeKeyInvalid},
		{name: "empty key", lines: []string{key(`""`), tenant}, status: 400, code: CodeKeyInvalid},

		// Scopes (here from a header; usually from authentication).
		{name: "control character in scope", lines: []string{key("k"), "X-Tenant: a\tb"}, status: 400, code: CodeScope},
		{name: "invalid UTF-8 in scope", lines: []string{key("k"), "X-Tenant: a\xffb"}, status: 400, code: CodeScope},
		{name: "scope of 256 bytes", lines: []string{key("k"), "X-Tenant: " + strings.Repeat("s", 256)}, status: 400, code: CodeScope},

		// Bodies.
		{name: "body one byte over MaxBodyBytes", opts: Options{MaxBodyBytes: 1000}, lines: []string{key("k"), tenant},
			body: bytes.Repeat([]byte("x"), 1001), status: 413, code: CodeBodyTooLarge},
		{name: "body at MaxBodyBytes", opts: Options{MaxBodyBytes: 1000}, lines: []string{key("k"), tenant},
			body: bytes.Repeat([]byte("x"), 1000), status: 201, runs: 1, stored: 1},
		{name: "body over MaxBodyBytes, chunked without a length", opts: Options{MaxBodyBytes: 1000}, lines: []string{key("k"), tenant},
			body: bytes.Repeat([]byte("x"), 1001), length: "chunked", status: 413, code: CodeBodyTooLarge},
		{name: "Content-Length of 10 GB announced", lines: []string{key("k"), tenant},
			body: []byte("{}"), length: "10000000000", status: 413, code: CodeBodyTooLarge},
		{name: "Content-Length not a number", lines: []string{key("k"), tenant},
			body: []byte("{}"), length: "1e3", status: 400, note: "net/http refuses the framing"},
		{name: "five million nested brackets, default limit", lines: []string{key("k"), tenant},
			body: bytes.Repeat([]byte("["), 5_000_000), status: 413, code: CodeBodyTooLarge},
		{name: "five million nested brackets, 8 MiB limit", opts: Options{MaxBodyBytes: 8 << 20}, lines: []string{key("k"), tenant},
			body: bytes.Repeat([]byte("["), 5_000_000), status: 201, runs: 1, stored: 1, note: "fingerprinted by its raw bytes"},

		// Header counts. net/http's default MaxHeaderBytes is 1 MiB; from Go
		// 1.27 on, its server also answers 431 by itself past 500 header
		// lines (TestHostileHeaderValueLimit). 490 lines pass on every Go
		// version; the 10,000-line cases raise that limit so that the
		// middleware meets them on every version too.
		{name: "490 header fields", lines: append(many(490, func(i int) string { return "X-F" + strconv.Itoa(i) + ": v" }), key("k"), tenant),
			status: 201, runs: 1, stored: 1},
		{name: "490 key lines", lines: append(many(490, func(int) string { return key("k") }), tenant), status: 400, code: CodeKeyInvalid},
		{name: "10000 header fields", lines: append(many(10_000, func(i int) string { return "X-F" + strconv.Itoa(i) + ": v" }), key("k"), tenant),
			status: 201, runs: 1, stored: 1, headerValues: 20_000},
		{name: "10000 key lines", lines: append(many(10_000, func(int) string { return key("k") }), tenant), status: 400, code: CodeKeyInvalid,
			headerValues: 20_000},
		{name: "100000 header fields, over MaxHeaderBytes", lines: append(many(100_000, func(i int) string { return "X-F" + strconv.Itoa(i) + ": v" }), key("k"), tenant),
			status: 431, headerValues: 200_000},

		// Methods: exact match only (RFC 9110 Section 9.1).
		{name: "lowercase method passes unprotected", method: "post", lines: []string{key("k"), tenant}, status: 201, runs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHostileServer(t, tt.opts, tt.headerValues)
			method := tt.method
			if method == "" {
				method = "POST"
			}
			a := s.raw(t, framed(method, tt.lines, tt.body, tt.length))
			if a.status != tt.status {
				t.Fatalf("answer %d %q, want %d (%s)", a.status, a.body, tt.status, tt.note)
			}
			switch {
			case tt.code != "":
				if !strings.Contains(a.body, `"code":"`+string(tt.code)+`"`) {
					t.Fatalf("answer %d %q, want code %q", a.status, a.body, tt.code)
				}
			case tt.status >= 400:
				// net/http's own refusal, before any handler.
				if want := strconv.Itoa(tt.status) + " "; !strings.HasPrefix(a.body, want) {
					t.Fatalf("answer %d %q, want net/http's plain %q...", a.status, a.body, want)
				}
			}
			if n := s.runs.Load(); n != tt.runs {
				t.Fatalf("handler ran %d times, want %d", n, tt.runs)
			}
			if n := s.records(t); n != tt.stored {
				t.Fatalf("%d records, want %d", n, tt.stored)
			}
			if tt.stored == 1 {
				// The same bytes again: a replay.
				b := s.raw(t, framed(method, tt.lines, tt.body, tt.length))
				if b.status != a.status || b.body != a.body || b.header.Get(DefaultReplayHeader) != "true" || s.runs.Load() != 1 {
					t.Fatalf("the same request again: %+v, handler runs %d", b, s.runs.Load())
				}
			}
		})
	}
}

// TestHostileHeaderValueLimit pins what a server with net/http's defaults
// does with many header lines. From Go 1.27 on it reads at most
// http.DefaultMaxHeaderValueCount (500) of them, Host and Content-Length
// included, and answers 431 by itself past that: the middleware never runs
// and nothing is stored. Before Go 1.27 only MaxHeaderBytes bounds them, and
// 10,000 lines reach the middleware.
func TestHostileHeaderValueLimit(t *testing.T) {
	// framed writes Host, Content-Type and Content-Length; the key and the
	// tenant are two more lines.
	const framing = 5
	send := func(s *hostile, total int) answer {
		lines := []string{HeaderName + ": k", "X-Tenant: t"}
		for i := 0; i < total-framing; i++ {
			lines = append(lines, "X-F"+strconv.Itoa(i)+": v")
		}
		return s.raw(t, request("POST", lines, []byte(`{}`)))
	}
	if headerValueLimit == 0 {
		s := newHostile(t, Options{})
		if a := send(s, 10_000); a.status != 201 || s.runs.Load() != 1 || s.records(t) != 1 {
			t.Fatalf("10000 lines: %d %q, handler runs %d, records %d; want 201, 1, 1", a.status, a.body, s.runs.Load(), s.records(t))
		}
		return
	}
	if headerValueLimit != 500 {
		t.Fatalf("net/http's default limit is %d lines, the catalogue (RELIABILITY.md) says 500", headerValueLimit)
	}
	s := newHostile(t, Options{})
	if a := send(s, headerValueLimit); a.status != 201 || s.runs.Load() != 1 || s.records(t) != 1 {
		t.Fatalf("%d lines: %d %q, handler runs %d, records %d; want 201, 1, 1", headerValueLimit, a.status, a.body, s.runs.Load(), s.records(t))
	}
	s = newHostile(t, Options{})
	a := send(s, headerValueLimit+1)
	if a.status != 431 || !strings.HasPrefix(a.body, "431 ") || s.runs.Load() != 0 || s.records(t) != 0 {
		t.Fatalf("%d lines: %d %q, handler runs %d, records %d; want net/http's plain 431, 0, 0", headerValueLimit+1, a.status, a.body, s.runs.Load(), s.records(t))
	}
}

// SQL metacharacters in the key and the scope are data: stored and read back
// verbatim, replayed, and the table is still there, with one row each.
func TestHostileSQLMetacharacters(t *testing.T) {
	s := newHostile(t, Options{})
	keys := []string{
		`'; DROP TABLE idempotency_ledger; --`,
		`" OR 1=1 --`,
		`k'); DELETE FROM idempotency_ledger WHERE ('1'='1`,
		`%_\*?[]`,
	}
	scopes := []string{
		`t'; DROP TABLE idempotency_ledger; --`,
		`t" OR ""="`,
		`t; VACUUM; --`,
		`t%_`,
	}
	for i := range keys {
		lines := []string{HeaderName + ": " + strconv.Quote(keys[i]), "X-Tenant: " + scopes[i]}
		body := []byte(`{"i":` + strconv.Itoa(i) + `}`)
		if a := s.raw(t, request("POST", lines, body)); a.status != 201 {
			t.Fatalf("key %q scope %q: %+v", keys[i], scopes[i], a)
		}
		if a := s.raw(t, request("POST", lines, body)); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("key %q scope %q, again: %+v", keys[i], scopes[i], a)
		}
	}
	if n := s.records(t); n != len(keys) {
		t.Fatalf("%d records, want %d", n, len(keys))
	}
	for i := range keys {
		rec, err := s.l.Get(context.Background(), scopes[i], keys[i])
		if err != nil || rec.Key != keys[i] || rec.Scope != scopes[i] || rec.State != ledger.StateCompleted {
			t.Fatalf("record %d: %+v, %v", i, rec, err)
		}
	}
	var stored []string
	rows, err := s.db.Query(`SELECT scope || '|' || key FROM idempotency_ledger ORDER BY scope`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`t" OR ""="|" OR 1=1 --`,
		`t%_|%_\*?[]`,
		`t'; DROP TABLE idempotency_ledger; --|'; DROP TABLE idempotency_ledger; --`,
		`t; VACUUM; --|k'); DELETE FROM idempotency_ledger WHERE ('1'='1`,
	}
	if strings.Join(stored, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored rows:\n%s\nwant:\n%s", strings.Join(stored, "\n"), strings.Join(want, "\n"))
	}
	if s.runs.Load() != int64(len(keys)) {
		t.Fatalf("handler ran %d times, want %d", s.runs.Load(), len(keys))
	}
}

// JSON bodies that canonical form refuses (invalid UTF-8, lone surrogates,
// numbers beyond binary64, duplicate names, nesting past 10,000 levels) are
// not refused by the middleware: the handler decides what they mean. They
// are fingerprinted by their raw bytes (hash.Request), so only the same
// bytes replay, and any other bytes under the key, even an equivalent text,
// are 422. Valid JSON, for contrast, replays on its canonical form, Unicode
// noncharacters included (TestFingerprintCanonicalBodies).
func TestHostileJSONBodies(t *testing.T) {
	tests := []struct {
		name        string
		body, other string // other: different bytes, under the same key
		otherStatus int
	}{
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "{\"a\":\"\xfe\"}", 422},
		{"overlong UTF-8", "{\"a\":\"\xc0\xaf\"}", "{ \"a\":\"\xc0\xaf\"}", 422},
		{"lone high surrogate", `{"a":"\ud800"}`, `{"a":"\udbff"}`, 422},
		{"lone low surrogate", `["\udc00"]`, `[ "\udc00"]`, 422},
		{"number beyond binary64", `{"n":1e400}`, `{"n":1E400}`, 422},
		{"negative number beyond binary64", `[-1.8e308]`, `[-1.9e308]`, 422},
		{"number that canonical form would round", `{"n":9007199254740993}`, `{"n":9007199254740992}`, 422},
		{"duplicate names", `{"a":1,"a":2}`, `{"a":2,"a":1}`, 422},
		{"duplicate names after unescaping", `{"a":1,"\u0061":2}`, `{"\u0061":1,"a":2}`, 422},
		{"nesting past the depth limit", strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001), strings.Repeat("[", 10_001) + " " + strings.Repeat("]", 10_001), 422},
		{"NaN", `{"n":NaN}`, `{"n": NaN}`, 422},
		{"valid JSON, reordered (control)", `{"b":1,"a":[1.0,2]}`, `{ "a": [1, 2e0], "b": 1 }`, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHostile(t, Options{})
			lines := []string{HeaderName + ": k", "X-Tenant: t"}
			first := s.raw(t, request("POST", lines, []byte(tt.body)))
			if first.status != 201 || first.header.Get(DefaultReplayHeader) != "" {
				t.Fatalf("first: %+v", first)
			}
			if a := s.raw(t, request("POST", lines, []byte(tt.body))); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" || a.body != first.body {
				t.Fatalf("same bytes: %+v", a)
			}
			a := s.raw(t, request("POST", lines, []byte(tt.other)))
			if a.status != tt.otherStatus {
				t.Fatalf("other bytes %q: %d %q, want %d", tt.other, a.status, a.body, tt.otherStatus)
			}
			if tt.otherStatus == 201 && a.header.Get(DefaultReplayHeader) != "true" {
				t.Fatalf("equivalent JSON not replayed: %+v", a)
			}
			if s.runs.Load() != 1 || s.records(t) != 1 {
				t.Fatalf("handler ran %d times, %d records; want 1 and 1", s.runs.Load(), s.records(t))
			}
		})
	}
}
