package idemhttp

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// FuzzMiddleware sends random methods, targets, content types, keys and
// bodies, each twice, through the middleware on a real server. The handler
// never answers 5xx, so any 5xx, or a dropped connection (a panic), comes
// from the middleware's own code. A replay must equal the first answer.
func FuzzMiddleware(f *testing.F) {
	db := testdb.SQLite(f)
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		f.Fatal(err)
	}
	// The handler answers a status chosen by the body's first byte, and
	// echoes the body.
	statuses := []int{200, 201, 202, 204, 400, 404, 409, 422, 429}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := 200
		if len(body) > 0 {
			status = statuses[int(body[0])%len(statuses)]
		}
		w.Header().Set("Location", "/x/"+strconv.Itoa(len(body)))
		w.Header().Add("Link", "</a>")
		w.Header().Add("Link", "</b>")
		w.WriteHeader(status)
		w.Write(body)
	})
	mw := Middleware(l, db, Options{
		Scope:        func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Methods:      []string{"POST", "PATCH", "PUT", "DELETE"},
		MaxBodyBytes: 64,
	})
	srv := httptest.NewUnstartedServer(mw(h))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	f.Cleanup(srv.Close)
	client := srv.Client()

	f.Add("POST", "/orders?x=1", "application/json", `"k1"`, "t1", []byte(`{"a":1}`))
	f.Add("PATCH", "/", "text/plain", `k2`, "", []byte("\x04hello"))
	f.Add("PUT", "/a%20b", "", `""`, "t", []byte{})
	f.Add("DELETE", "/", "application/json; charset=utf-8", `"k";v=1`, "t", []byte(`{"n":9007199254740993}`))
	f.Add("POST", "/", "application/json", `k3`, "t", bytes.Repeat([]byte("z"), 65))
	f.Add("GET", "/", "", `k4`, "t", []byte("x"))
	f.Add("POST", "/", "", `"unterminated`, "t", []byte("x"))

	f.Fuzz(func(t *testing.T, method, target, contentType, key, tenant string, body []byte) {
		req1, err := http.NewRequest(method, srv.URL+target, bytes.NewReader(body))
		if err != nil || req1.URL.Host != srv.Listener.Addr().String() {
			return // not a request a client can send to this server
		}
		req1.Header.Set("Content-Type", contentType)
		req1.Header.Set(HeaderName, key)
		req1.Header.Set("X-Tenant", tenant)
		req2 := req1.Clone(req1.Context())
		req2.Body = io.NopCloser(bytes.NewReader(body))

		first, ok := roundTrip(t, client, req1)
		if !ok {
			return
		}
		second, ok := roundTrip(t, client, req2)
		if !ok {
			return
		}
		for _, a := range []answer{first, second} {
			if a.status >= 500 {
				t.Fatalf("%s %q key %q: %d %q", method, target, key, a.status, a.body)
			}
		}
		if second.header.Get(DefaultReplayHeader) == "true" {
			if second.status != first.status || second.body != first.body ||
				second.header.Get("Location") != first.header.Get("Location") ||
				len(second.header.Values("Link")) != 2 {
				t.Fatalf("replay %+v differs from first %+v", second, first)
			}
		}
	})
}

// roundTrip sends req. It reports false when the client refused to send
// it (an invalid header value); a dropped connection fails the test.
func roundTrip(t *testing.T, c *http.Client, req *http.Request) (answer, bool) {
	t.Helper()
	for name, values := range req.Header {
		for _, v := range values {
			if !validFieldValue(v) {
				return answer{}, false
			}
		}
		_ = name
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", req.Method, req.URL, err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}, true
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
