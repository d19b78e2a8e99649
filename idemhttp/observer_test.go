package idemhttp

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/eventlog"
	"github.com/idemledger/idemledger/ledger"
)

// recorder is an Observer that keeps every event, with the checks of
// these tests.
type recorder struct{ eventlog.Recorder }

func (r *recorder) has(f func(ledger.Event) bool) bool {
	for _, e := range r.All() {
		if f(e) {
			return true
		}
	}
	return false
}

// ev is an expected event of a POST without a route: its kind, reason and
// status.
func ev(k ledger.EventKind, reason ledger.Reason, status int) ledger.Event {
	return ledger.Event{Kind: k, Reason: reason, Method: http.MethodPost, Status: status}
}

// evFail is an expected failure of the ledger operation op.
func evFail(k ledger.EventKind, op string, status int) ledger.Event {
	return ledger.Event{Kind: k, Op: op, Method: http.MethodPost, Status: status}
}

// on returns es with Route set to route.
func on(route string, es ...ledger.Event) []ledger.Event {
	out := make([]ledger.Event, len(es))
	for i, e := range es {
		e.Route = route
		out[i] = e
	}
	return out
}

// times returns n copies of the sequence es.
func times(n int, es ...ledger.Event) []ledger.Event {
	var out []ledger.Event
	for range n {
		out = append(out, es...)
	}
	return out
}

// carriesErr reports whether an event of this kind and reason has an Err:
// the failures, and a TxHandler transaction that failed.
func carriesErr(e ledger.Event) bool {
	switch e.Kind {
	case ledger.EventLeaseLost, ledger.EventStoreBusy, ledger.EventStoreUnavailable:
		return true
	}
	return e.Kind == ledger.EventReleased && e.Reason == ledger.ReasonError
}

// check compares the recorded events with want on Kind, Reason, Op,
// Method, Route and Status, and checks that every event has a positive
// Duration and an Err exactly when carriesErr says so.
func (r *recorder) check(t *testing.T, want ...ledger.Event) {
	t.Helper()
	got := r.All()
	fields := make([]ledger.Event, len(got))
	for i, e := range got {
		fields[i] = ledger.Event{Kind: e.Kind, Reason: e.Reason, Op: e.Op, Method: e.Method, Route: e.Route, Status: e.Status}
		if e.Duration <= 0 {
			t.Errorf("event %d (%v): Duration %v, want > 0", i, e.Kind, e.Duration)
		}
		if (e.Err != nil) != carriesErr(e) {
			t.Errorf("event %d (%v %s): Err %v, want one only for a failure", i, e.Kind, e.Reason, e.Err)
		}
	}
	if want == nil {
		want = []ledger.Event{}
	}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("events:\n%s\nwant:\n%s", eventList(fields), eventList(want))
	}
}

func eventList(es []ledger.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\t%v reason=%q op=%q method=%s route=%q status=%d\n", e.Kind, e.Reason, e.Op, e.Method, e.Route, e.Status)
	}
	return b.String()
}

// eventText is every field of e as text, Err's included.
func eventText(e ledger.Event) string {
	text := fmt.Sprintf("%+v", e)
	if e.Err != nil {
		text += " " + e.Err.Error()
	}
	return text
}

// payFingerprint is the fingerprint the middleware takes of POST /pay with
// the JSON body.
func payFingerprint(body string) hash.Digest {
	return hash.Request(http.MethodPost, "/pay", "application/json", []byte(body))
}

// TestObserverEvents: each scenario reports its events to
// Options.Observer in order, with the method, the route pattern the
// middleware sits on, the status the client gets (0 for claimed and after
// a panic before the commit point), a Duration, and an Err for failures.
func TestObserverEvents(t *testing.T) {
	const route = "POST /pay"
	type env struct {
		b   *bundle
		clk *faultClock // the ledger's clock
		// started is closed by handlers that block, once they run; they
		// wait for release.
		started, release chan struct{}
	}
	post := func(t *testing.T, e *env, body string, want int) answer {
		t.Helper()
		a := e.b.do(t, "POST", "/pay", body, "k")
		if a.status != want {
			t.Fatalf("POST /pay %s: %d %q, want %d", body, a.status, a.body, want)
		}
		return a
	}
	// takeOver claims the key again once the first claim's lease has run
	// out, as a retry would: the first request's lease is lost.
	takeOver := func(t *testing.T, e *env) {
		e.clk.Advance(2 * time.Minute)
		if _, err := e.b.l.Claim(context.Background(), ledger.Request{Scope: testScope, Key: "k", Fingerprint: payFingerprint(`{}`)}); err != nil {
			t.Errorf("takeover: %v", err)
		}
	}
	tests := []struct {
		name    string
		opts    Options
		lease   time.Duration
		handler func(t *testing.T, e *env) http.HandlerFunc // default: 201 "paid"
		drive   func(t *testing.T, e *env)
		want    []ledger.Event
	}{{
		name:  "first request",
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201)},
	}, {
		name:  "replay",
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201); post(t, e, `{}`, 201) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201), ev(ledger.EventReplayed, "", 201)},
	}, {
		name: "in flight",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			var once sync.Once
			return func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { close(e.started); <-e.release })
				w.WriteHeader(201)
			}
		},
		drive: func(t *testing.T, e *env) {
			done := make(chan struct{})
			go func() { defer close(done); e.b.do(t, "POST", "/pay", `{}`, "k") }()
			<-e.started
			post(t, e, `{}`, 409)
			close(e.release)
			<-done
		},
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventInFlight, "", 409), ev(ledger.EventStored, "", 201)},
	}, {
		name:  "key reused",
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201); post(t, e, `{"a":1}`, 422) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201), ev(ledger.EventKeyReused, "", 422)},
	}, {
		name: "panic before the commit point",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			var runs atomic.Int32
			return func(w http.ResponseWriter, r *http.Request) {
				if runs.Add(1) == 1 {
					panic("card processor exploded")
				}
				w.WriteHeader(201)
			}
		},
		drive: func(t *testing.T, e *env) {
			if _, err := postJSON(e.b.srv.Client(), e.b.srv.URL+"/pay", "k"); err == nil {
				t.Fatal("the panic's request was answered")
			}
			post(t, e, `{}`, 201)
		},
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonPanic, 0),
			ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201)},
	}, {
		name: "panic after the commit point",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				Commit(r.Context())
				panic("card processor exploded")
			}
		},
		drive: func(t *testing.T, e *env) {
			if _, err := postJSON(e.b.srv.Client(), e.b.srv.URL+"/pay", "k"); err == nil {
				t.Fatal("the panic's request was answered")
			}
			post(t, e, `{}`, 500)
		},
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonPanic, 500),
			ev(ledger.EventReplayed, "", 500)},
	}, {
		name: "status not stored",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 503); post(t, e, `{}`, 503) },
		want:  times(2, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonStatus, 503)),
	}, {
		name: "status stored after the commit point",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { Commit(r.Context()); w.WriteHeader(503) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 503); post(t, e, `{}`, 503) },
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonStatus, 503),
			ev(ledger.EventReplayed, "", 503)},
	}, {
		name: "flushed",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "part"); w.(http.Flusher).Flush() }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 200) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonFlush, 200)},
	}, {
		name: "oversized marker",
		opts: Options{MaxBodyBytes: 8},
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(201)
				io.WriteString(w, "sixteen bytes...")
			}
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201); post(t, e, `{}`, 410) },
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, ledger.ReasonOversized, 201),
			ev(ledger.EventReplayed, "", 410)},
	}, {
		name:  "store unavailable, fail closed",
		drive: func(t *testing.T, e *env) { e.b.closeStore(); post(t, e, `{}`, 503) },
		want:  []ledger.Event{evFail(ledger.EventStoreUnavailable, "claim", 503)},
	}, {
		name:  "store unavailable, fail open",
		opts:  Options{FailurePolicy: FailOpen},
		drive: func(t *testing.T, e *env) { e.b.closeStore(); post(t, e, `{}`, 201) },
		want:  []ledger.Event{evFail(ledger.EventStoreUnavailable, "claim", 0)},
	}, {
		name: "store unavailable at the completion",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { e.b.closeStore(); w.WriteHeader(201) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventStoreUnavailable, "complete", 201)},
	}, {
		name: "store unavailable at the release",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { e.b.closeStore(); w.WriteHeader(500) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 500) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventStoreUnavailable, "release", 500)},
	}, {
		name: "lease lost at the completion",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { takeOver(t, e); w.WriteHeader(201) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventLeaseLost, "complete", 201)},
	}, {
		name: "lease lost at the release",
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { takeOver(t, e); w.WriteHeader(500) }
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 500) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventLeaseLost, "release", 500)},
	}, {
		name: "lease lost at an extension",
		// The heartbeat beats every 100 ms of real time; the lease runs
		// out on the ledger's clock, moved by takeOver.
		lease: 300 * time.Millisecond,
		handler: func(t *testing.T, e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				takeOver(t, e)
				for !e.b.obs.has(func(e ledger.Event) bool { return e.Op == "extend" }) {
					time.Sleep(5 * time.Millisecond)
				}
				w.WriteHeader(201)
			}
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201) },
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventLeaseLost, "extend", 0),
			evFail(ledger.EventLeaseLost, "complete", 201)},
	}}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := &env{clk: &faultClock{now: time.Now()}, started: make(chan struct{}), release: make(chan struct{})}
				h := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201); io.WriteString(w, "paid") }
				if tt.handler != nil {
					h = tt.handler(t, e)
				}
				e.b = setupRoute(t, engine, tt.opts, ledger.Options{Lease: tt.lease, Now: e.clk.Now}, route, h)
				tt.drive(t, e)
				e.b.obs.check(t, on(route, tt.want...)...)
			})
		}
	})
}

// TestObserverRoute: Route is the ServeMux pattern, whether the middleware
// sits on the route or wraps the whole mux, and empty for a handler without
// one (never the raw path).
func TestObserverRoute(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		obs := &recorder{}
		opts := Options{Scope: func(*http.Request) (string, error) { return testScope, nil }, Observer: obs}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })
		tests := []struct {
			name   string
			wrap   func(mw func(http.Handler) http.Handler) http.Handler
			target string
			route  string
			status int
		}{
			{"on the route", func(mw func(http.Handler) http.Handler) http.Handler {
				mux := http.NewServeMux()
				mux.Handle("POST /orders/{id}", mw(h))
				return mux
			}, "/orders/17", "POST /orders/{id}", 201},
			{"around the mux", func(mw func(http.Handler) http.Handler) http.Handler {
				mux := http.NewServeMux()
				mux.Handle("POST /orders/{id}", h)
				return mw(mux)
			}, "/orders/18", "POST /orders/{id}", 201},
			{"around the mux, no route matches", func(mw func(http.Handler) http.Handler) http.Handler {
				mux := http.NewServeMux()
				mux.Handle("POST /orders/{id}", h)
				return mw(mux)
			}, "/refunds/19", "", 404},
			{"no mux", func(mw func(http.Handler) http.Handler) http.Handler { return mw(h) }, "/orders/20", "", 201},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				obs.Reset()
				sv := serveOn(t, engine, ledger.Options{},
					func(l *ledger.Ledger[*sql.Tx]) http.Handler { return tt.wrap(Middleware(l, opts)) },
					func(l *ledger.Ledger[pgx.Tx]) http.Handler { return tt.wrap(Middleware(l, opts)) })
				srv := serve(t, sv.handler)
				for range 2 {
					if a := send(t, srv, "POST", tt.target, `{}`, http.Header{HeaderName: {"k"}}); a.status != tt.status {
						t.Fatalf("POST %s: %d, want %d", tt.target, a.status, tt.status)
					}
				}
				obs.check(t, on(tt.route, ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", tt.status),
					ev(ledger.EventReplayed, "", tt.status))...)
			})
		}
	})
}

// TestTxHandlerObserverEvents: TxHandler reports claimed when its claim
// wins and fn runs, then stored after the commit, or released when the
// transaction is rolled back (Reason status, oversized, panic, or error
// when the transaction failed after fn ran, with Err); a claim that loses
// reports as under Middleware, and a store that cannot begin the
// transaction store_unavailable with Op claim.
func TestTxHandlerObserverEvents(t *testing.T) {
	const route = "POST /pay"
	// fn is the handler under test; end rolls its transaction back, as a
	// TxFunc must not.
	type fn func(w http.ResponseWriter, r *http.Request, end func())
	answer := func(status int, body string) fn {
		return func(w http.ResponseWriter, r *http.Request, _ func()) { w.WriteHeader(status); io.WriteString(w, body) }
	}
	type env struct {
		b     *bundle
		close func()
	}
	post := func(t *testing.T, e *env, body string, want int) {
		t.Helper()
		if a := e.b.do(t, "POST", "/pay", body, "k"); a.status != want {
			t.Fatalf("POST /pay %s: %d %q, want %d", body, a.status, a.body, want)
		}
	}
	tests := []struct {
		name  string
		opts  Options
		fn    fn
		mk    func() fn // makes fn for each run, when fn keeps state
		drive func(t *testing.T, e *env)
		want  []ledger.Event
	}{{
		name:  "first request and replay",
		fn:    answer(201, "paid"),
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201); post(t, e, `{}`, 201) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201), ev(ledger.EventReplayed, "", 201)},
	}, {
		name:  "key reused",
		fn:    answer(201, "paid"),
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 201); post(t, e, `{"a":1}`, 422) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201), ev(ledger.EventKeyReused, "", 422)},
	}, {
		name: "in flight under a lease-mode claim",
		fn:   answer(201, "paid"),
		drive: func(t *testing.T, e *env) {
			if _, err := e.b.l.Claim(context.Background(), ledger.Request{Scope: testScope, Key: "k", Fingerprint: payFingerprint(`{}`)}); err != nil {
				t.Fatal(err)
			}
			post(t, e, `{}`, 409)
		},
		want: []ledger.Event{ev(ledger.EventInFlight, "", 409)},
	}, {
		name:  "status not stored",
		fn:    answer(503, "later"),
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 503); post(t, e, `{}`, 503) },
		want:  times(2, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonStatus, 503)),
	}, {
		name:  "oversized",
		opts:  Options{MaxBodyBytes: 8},
		fn:    answer(201, "sixteen bytes..."),
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 500) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonOversized, 500)},
	}, {
		name: "panic",
		mk: func() fn {
			var runs atomic.Int32
			return func(w http.ResponseWriter, r *http.Request, _ func()) {
				if runs.Add(1) == 1 {
					panic("boom")
				}
				w.WriteHeader(201)
			}
		},
		drive: func(t *testing.T, e *env) {
			if _, err := postJSON(e.b.srv.Client(), e.b.srv.URL+"/pay", "k"); err == nil {
				t.Fatal("the panic's request was answered")
			}
			post(t, e, `{}`, 201)
		},
		want: []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonPanic, 0),
			ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201)},
	}, {
		name: "transaction ended by fn",
		fn: func(w http.ResponseWriter, r *http.Request, end func()) {
			end()
			w.WriteHeader(201)
		},
		drive: func(t *testing.T, e *env) { post(t, e, `{}`, 503) },
		want:  []ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonError, 503)},
	}, {
		name:  "store unavailable",
		fn:    answer(201, "paid"),
		drive: func(t *testing.T, e *env) { e.close(); post(t, e, `{}`, 503) },
		want:  []ledger.Event{evFail(ledger.EventStoreUnavailable, "claim", 503)},
	}}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := &bundle{obs: &recorder{}, e: engine}
				f := tt.fn
				if tt.mk != nil {
					f = tt.mk()
				}
				opts := tt.opts
				opts.Scope = func(*http.Request) (string, error) { return testScope, nil }
				opts.Observer = b.obs
				routed := func(h http.Handler) http.Handler {
					mux := http.NewServeMux()
					mux.Handle(route, h)
					return mux
				}
				sv := serveOn(t, engine, ledger.Options{},
					func(l *ledger.Ledger[*sql.Tx]) http.Handler {
						return routed(TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
							f(w, r, func() { tx.Rollback() })
						}))
					},
					func(l *ledger.Ledger[pgx.Tx]) http.Handler {
						return routed(TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx pgx.Tx) {
							f(w, r, func() { tx.Rollback(r.Context()) })
						}))
					})
				b.l, b.db = sv.l, sv.db
				b.srv = serve(t, sv.handler)
				tt.drive(t, &env{b: b, close: sv.close})
				b.obs.check(t, on(route, tt.want...)...)
			})
		}
	})
}

// TestLogObserverThroughMiddleware: ledger.LogObserver as Options.Observer
// writes one record per event, as documented: "idempotency: <kind>" at
// the kind's level, with method, route, status, reason, op and duration
// where set (here a clock that stands still, so duration is 0).
func TestLogObserverThroughMiddleware(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		logs := &syncBuffer{}
		logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{
			Level: slog.LevelDebug,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			},
		}))
		still := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		b := setupRoute(t, engine, Options{Observer: ledger.LogObserver(logger), Now: func() time.Time { return still }},
			ledger.Options{}, "POST /pay", func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("fail") {
					w.WriteHeader(503)
					return
				}
				w.WriteHeader(201)
			})
		b.do(t, "POST", "/pay", `{}`, "k")
		b.do(t, "POST", "/pay", `{}`, "k")
		b.do(t, "POST", "/pay", `{"a":1}`, "k")
		b.do(t, "POST", "/pay?fail", `{}`, "k2")
		const want = `{"level":"DEBUG","msg":"idempotency: claimed","method":"POST","route":"POST /pay","duration":0}
{"level":"DEBUG","msg":"idempotency: stored","method":"POST","route":"POST /pay","status":201,"duration":0}
{"level":"INFO","msg":"idempotency: replayed","method":"POST","route":"POST /pay","status":201,"duration":0}
{"level":"WARN","msg":"idempotency: key_reused","method":"POST","route":"POST /pay","status":422,"duration":0}
{"level":"DEBUG","msg":"idempotency: claimed","method":"POST","route":"POST /pay","duration":0}
{"level":"WARN","msg":"idempotency: released","method":"POST","route":"POST /pay","status":503,"reason":"status","duration":0}
`
		if got := logs.String(); got != want {
			t.Errorf("log:\n%s\nwant:\n%s", got, want)
		}
	})
}
