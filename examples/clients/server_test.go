package clients_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// shop is the protected service of the tests: a handler that makes an
// effect (counted per key), waits delay, marks its commit point and
// answers with answer's status and body. hits counts the requests that
// reached the middleware, per key.
type shop struct {
	delay   time.Duration
	status  int
	body    func(n int64) string
	effects sync.Map // key -> *atomic.Int64
	hits    sync.Map // key -> *atomic.Int64
	srv     *httptest.Server
}

func counter(m *sync.Map, key string) *atomic.Int64 {
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (s *shop) effectsOf(key string) int64 { return counter(&s.effects, key).Load() }
func (s *shop) hitsOf(key string) int64    { return counter(&s.hits, key).Load() }

// waitRunning returns once a request with key runs the handler (or after
// 10 s), for a duplicate that must arrive while the first runs: a fixed
// pause lost that race on a loaded machine.
func (s *shop) waitRunning(key string) {
	for deadline := time.Now().Add(10 * time.Second); s.effectsOf(key) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// start serves the shop behind idemhttp.Middleware with opts on a fresh
// ledger of the driver.
func (s *shop) start(t *testing.T, engine string, opts idemhttp.Options) {
	t.Helper()
	if opts.Scope == nil {
		opts.Scope = func(*http.Request) (string, error) { return "tenant-1", nil }
	}
	mw := testledger.Middleware(t, engine, opts)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := idemhttp.ParseKey(r.Header, idemhttp.KeyRules{})
		n := counter(&s.effects, key).Add(1)
		time.Sleep(s.delay)
		idemhttp.Commit(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		w.Write([]byte(s.body(n)))
	}))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := idemhttp.ParseKey(r.Header, idemhttp.KeyRules{})
		counter(&s.hits, key).Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
}
