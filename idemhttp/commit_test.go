package idemhttp

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/jackc/pgx/v5"
)

// payments is a table of the test database standing for an irreversible
// effect: each handler run that pays inserts one row.
func payments(t *testing.T, e string, b *bundle) (pay func(), count func() int) {
	t.Helper()
	if _, err := b.db.Exec("CREATE TABLE payments (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	pay = func() {
		if _, err := b.db.Exec(testdb.Rebind(e, "INSERT INTO payments (n) VALUES (?)"), 1); err != nil {
			panic(err)
		}
	}
	count = func() int {
		var n int
		if err := b.db.QueryRow("SELECT COUNT(*) FROM payments").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return pay, count
}

type answerWant struct {
	status   int // 0: a transport error
	body     string
	replayed string
}

// postJSON sends POST {} as JSON with the key, if not empty, over c.
func postJSON(c *http.Client, url, key string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(HeaderName, key)
	}
	return c.Do(req)
}

func readAnswer(resp *http.Response) answerWant {
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return answerWant{resp.StatusCode, string(body), resp.Header.Get(DefaultReplayHeader)}
}

// TestCommitPoint: under Transport's retries, a handler that pays and then
// fails pays once when it marked its commit point, and once per attempt
// when it did not (the default: the key is released). A later request with
// the same key gets what was stored.
func TestCommitPoint(t *testing.T) {
	const problem500 = `{"type":"about:blank","title":"Internal Server Error","status":500,` +
		`"detail":"the request with this idempotency key made its effect, then failed; its answer is lost","code":"handler-panicked"}` + "\n"
	const gone = `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed ` +
		`with status 200, but its answer was too large to keep, so it cannot be sent again","code":"outcome-not-stored"}` + "\n"
	tests := []struct {
		name     string
		opts     Options
		commit   bool
		fail     func(w http.ResponseWriter) // after paying (and the commit point)
		first    answerWant                  // what the Transport returns (status 0: an error)
		attempts int
		again    answerWant // a later request with the same key
		paid     int
		events   []ledger.Event // of all requests, in order
	}{
		{"panic after the commit point", Options{}, true, func(http.ResponseWriter) { panic("boom") },
			answerWant{500, problem500, "true"}, 2, answerWant{500, problem500, "true"}, 1,
			[]ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonPanic, 500),
				ev(ledger.EventReplayed, "", 500), ev(ledger.EventReplayed, "", 500)}},
		{"panic, no commit point", Options{}, false, func(http.ResponseWriter) { panic("boom") },
			answerWant{}, 5, answerWant{}, 6,
			times(6, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonPanic, 0))},
		{"503 after the commit point", Options{}, true, func(w http.ResponseWriter) { w.WriteHeader(503) },
			answerWant{503, "", "true"}, 2, answerWant{503, "", "true"}, 1,
			[]ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonStatus, 503),
				ev(ledger.EventReplayed, "", 503), ev(ledger.EventReplayed, "", 503)}},
		{"503, no commit point", Options{}, false, func(w http.ResponseWriter) { w.WriteHeader(503) },
			answerWant{503, "", ""}, 5, answerWant{503, "", ""}, 6,
			times(6, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonStatus, 503))},
		{"flush after the commit point", Options{}, true, func(w http.ResponseWriter) {
			io.WriteString(w, "part,")
			w.(http.Flusher).Flush()
			io.WriteString(w, "rest")
		}, answerWant{200, "part,rest", ""}, 1, answerWant{200, "part,rest", "true"}, 1,
			[]ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonFlush, 200),
				ev(ledger.EventReplayed, "", 200)}},
		{"flush, no commit point", Options{}, false, func(w http.ResponseWriter) {
			io.WriteString(w, "part,")
			w.(http.Flusher).Flush()
		}, answerWant{200, "part,", ""}, 1, answerWant{200, "part,", ""}, 2,
			times(2, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonFlush, 200))},
		{"oversized after the commit point, ReleaseOversized", Options{MaxBodyBytes: 8, ReleaseOversized: true}, true, func(w http.ResponseWriter) {
			io.WriteString(w, "sixteen bytes...")
		}, answerWant{200, "sixteen bytes...", ""}, 1, answerWant{410, gone, "true"}, 1,
			[]ledger.Event{ev(ledger.EventClaimed, "", 0), ev(ledger.EventCommitted, "", 0), ev(ledger.EventStored, ledger.ReasonOversized, 200),
				ev(ledger.EventReplayed, "", 410)}},
		{"oversized, ReleaseOversized, no commit point", Options{MaxBodyBytes: 8, ReleaseOversized: true}, false, func(w http.ResponseWriter) {
			io.WriteString(w, "sixteen bytes...")
		}, answerWant{200, "sixteen bytes...", ""}, 1, answerWant{200, "sixteen bytes...", ""}, 2,
			times(2, ev(ledger.EventClaimed, "", 0), ev(ledger.EventReleased, ledger.ReasonOversized, 200))},
	}
	eachEngine(t, func(t *testing.T, e string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var pay func()
				b := setup(t, e, tt.opts, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
					pay()
					if tt.commit && !Commit(r.Context()) {
						panic("Commit reports no claim under Middleware")
					}
					tt.fail(w)
				})
				pay, paid := payments(t, e, b)
				var (
					mu   sync.Mutex
					seen []Attempt
				)
				tr := fastTransport()
				tr.OnAttempt = func(a Attempt) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, a)
				}
				c := &http.Client{Transport: tr}
				resp, err := postJSON(c, b.srv.URL+"/pay", "")
				var got answerWant
				if err == nil {
					got = readAnswer(resp)
				} else {
					var te *TransportError
					if !errors.As(err, &te) || te.Attempts != tt.attempts || te.Key == "" {
						t.Fatalf("error %v (%T), want a *TransportError of %d attempts with the key", err, err, tt.attempts)
					}
				}
				if got != tt.first || len(seen) != tt.attempts {
					t.Fatalf("Transport: %+v after %d attempts, want %+v after %d", got, len(seen), tt.first, tt.attempts)
				}
				// The same key again, without retries.
				var again answerWant
				if resp, err := postJSON(b.srv.Client(), b.srv.URL+"/pay", seen[0].Key); err == nil {
					again = readAnswer(resp)
				}
				if again != tt.again {
					t.Fatalf("same key again: %+v, want %+v", again, tt.again)
				}
				if n := paid(); n != tt.paid {
					t.Fatalf("paid %d times, want %d", n, tt.paid)
				}
				b.obs.check(t, tt.events...)
			})
		}
	})
}

// TestOversizedAnswerKeepsKey: a 201 of 2 MiB, over the default
// MaxBodyBytes, reaches the client whole and is not stored, but the key is
// kept: the same request again does not run the handler (no second
// payment) and gets 410 saying why.
func TestOversizedAnswerKeepsKey(t *testing.T) {
	big := strings.Repeat("p", 2<<20)
	eachEngine(t, func(t *testing.T, e string) {
		var pay func()
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			pay()
			w.Header().Set("Location", "/payments/1")
			w.WriteHeader(201)
			io.WriteString(w, big)
		})
		pay, paid := payments(t, e, b)
		if a := b.do(t, "POST", "/pay", `{"amount":100}`, "k"); a.status != 201 || a.body != big {
			t.Fatalf("first: %d, %d bytes", a.status, len(a.body))
		}
		want := `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed ` +
			`with status 201, but its answer was too large to keep, so it cannot be sent again","code":"outcome-not-stored"}` + "\n"
		for range 2 {
			a := b.do(t, "POST", "/pay", `{"amount":100}`, "k")
			if a.status != 410 || a.body != want || a.header.Get(DefaultReplayHeader) != "true" || a.header.Get("Content-Type") != ProblemContentType {
				t.Fatalf("retry: %d, %d bytes %.200q, %v", a.status, len(a.body), a.body, a.header)
			}
		}
		if n := paid(); n != 1 || b.calls.Load() != 1 {
			t.Fatalf("paid %d times, handler ran %d times; want 1, 1", n, b.calls.Load())
		}
		b.obs.check(t, ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, ledger.ReasonOversized, 201),
			ev(ledger.EventReplayed, "", 410), ev(ledger.EventReplayed, "", 410))
	})
}

// TestTimeoutHandlerOutside: with http.TimeoutHandler outside the
// middleware (the documented order), a handler slower than the timeout
// pays once under Transport's retries: the client's first attempt gets the
// timeout's 503, the retries 409 in flight while the handler still runs,
// then the stored 201. So does a handler that pays only after the timeout
// and checks its context just before, as the package doc says: for a lost
// lease only, since the timeout ends r.Context() too (a check of
// r.Context().Err() would stop every run there, and no retry would ever
// end).
func TestTimeoutHandlerOutside(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "paid before the timeout", true: "paid after it, lease checked"}[late], func(t *testing.T) {
			timeoutHandlerOutside(t, late)
		})
	}
}

func timeoutHandlerOutside(t *testing.T, late bool) {
	eachEngine(t, func(t *testing.T, e string) {
		b := &bundle{obs: &recorder{}, e: e}
		var pay func()
		var runs atomic.Int64
		gate := make(chan struct{})
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !late {
				pay()
			}
			<-gate // past the timeout: the client has its 503 by now
			if late {
				if runs.Add(1) == 1 && r.Context().Err() == nil {
					t.Error("the timeout did not end the first run's context: the check below proves nothing")
				}
				if errors.Is(context.Cause(r.Context()), ledger.ErrLeaseLost) {
					w.Header().Set("Retry-After", "1")
					http.Error(w, "retry", http.StatusServiceUnavailable)
					return
				}
				pay()
			}
			w.WriteHeader(201)
			io.WriteString(w, "paid")
		})
		opts := Options{Scope: func(*http.Request) (string, error) { return testScope, nil }}
		timeout := func(h http.Handler) http.Handler { return http.TimeoutHandler(h, 250*time.Millisecond, "timeout") }
		sv := serveOn(t, e, ledger.Options{},
			func(l *ledger.Ledger[*sql.Tx]) http.Handler { return timeout(Middleware(l, opts)(slow)) },
			func(l *ledger.Ledger[pgx.Tx]) http.Handler { return timeout(Middleware(l, opts)(slow)) })
		b.l, b.db = sv.l, sv.db
		pay, paid := payments(t, e, b)
		b.srv = serve(t, sv.handler)

		var once sync.Once
		var statuses []int
		tr := fastTransport()
		tr.MaxAttempts = 20
		tr.OnAttempt = func(a Attempt) {
			statuses = append(statuses, a.Status)
			if a.Status == 409 {
				once.Do(func() { close(gate) })
			}
		}
		resp, err := postJSON(&http.Client{Transport: tr}, b.srv.URL+"/pay", "")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 || string(body) != "paid" || resp.Header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("final answer %d %q replayed %q (attempts %v)", resp.StatusCode, body, resp.Header.Get(DefaultReplayHeader), statuses)
		}
		// The timeout's 503 first (the handler waits for a 409); more 503s
		// may follow when a claim is slower than the timeout (under -race).
		if statuses[0] != 503 || !slices.Contains(statuses, 409) {
			t.Fatalf("attempts answered %v, want 503, ..., 409, ...", statuses)
		}
		if n := paid(); n != 1 {
			t.Fatalf("paid %d times, want 1", n)
		}
	})
}
