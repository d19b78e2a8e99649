package idemfiber_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemfiber"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// answer is what a client saw.
type answer struct {
	status   int
	body     string
	location string
	ctype    string
	replayed string
	retry    string
}

// send sends a request with a JSON body and the key lines given (none
// for no key field), and returns what came back.
func send(t *testing.T, method, url, body string, keys ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", "acme")
	if len(keys) > 0 {
		req.Header[idemhttp.HeaderName] = keys
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, string(b), resp.Header.Get("Location"), resp.Header.Get("Content-Type"),
		resp.Header.Get(idemhttp.DefaultReplayHeader), resp.Header.Get("Retry-After")}
}

func post(t *testing.T, url, key, body string) answer {
	t.Helper()
	if key == "" {
		return send(t, http.MethodPost, url, body)
	}
	return send(t, http.MethodPost, url, body, key)
}

// shop is a Fiber app over loopback: recover outside, an authentication
// handler that puts the tenant in c.Locals, which the scope reads, and
// POST /orders behind idemfiber, whose body is handle (a 201 with a JSON
// order by default).
type shop struct {
	url  string
	runs atomic.Int64
	// handle, when set, answers instead of the default; n is the run's
	// number.
	handle func(c fiber.Ctx, n int64) error
	// hold, when set, blocks the handler until it is closed; started is
	// closed when the handler starts.
	hold, started chan struct{}
}

func newShop(t *testing.T, s store, opts idemfiber.Options) *shop {
	t.Helper()
	sh := &shop{}
	if opts.Scope == nil {
		opts.Scope = func(c fiber.Ctx) (string, error) {
			tenant, _ := c.Locals("tenant").(string)
			return tenant, nil
		}
	}
	app := fiber.New()
	app.Use(recover.New(), func(c fiber.Ctx) error {
		c.Locals("tenant", c.Get("X-Tenant"))
		return c.Next()
	})
	app.Post("/orders", idemfiber.New(s.l, opts), func(c fiber.Ctx) error {
		n := sh.runs.Add(1)
		if sh.started != nil {
			close(sh.started)
		}
		if sh.hold != nil {
			<-sh.hold
		}
		if sh.handle != nil {
			return sh.handle(c, n)
		}
		return order(c, n)
	})
	sh.url = listen(t, app) + "/orders"
	return sh
}

// order is the default answer: a 201 with a Location and a JSON order.
func order(c fiber.Ctx, n int64) error {
	var in struct{ Item string }
	if err := c.Bind().JSON(&in); err != nil {
		return fiber.NewError(fiber.StatusBadRequest, err.Error())
	}
	c.Location("/orders/1")
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"id": 1, "item": in.Item, "run": n})
}

// listen serves app on a loopback port until the test ends, and returns
// its base URL.
func listen(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	t.Cleanup(func() {
		if err := app.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})
	return "http://" + ln.Addr().String()
}

// TestFirstAndReplay: the first request runs the handler; its retry, with
// the body respaced, gets the same status, body and allowed header lines
// with Idempotent-Replayed: true; the handler runs once; the record holds
// an answer of idemhttp's kind.
func TestFirstAndReplay(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{})
		want := answer{201, `{"id":1,"item":"book","run":1}`, "/orders/1", "application/json; charset=utf-8", "", ""}
		if got := post(t, sh.url, "k1", `{"item":"book"}`); got != want {
			t.Errorf("first:  %+v\nwant    %+v", got, want)
		}
		want.replayed = "true"
		for i := range 2 {
			if got := post(t, sh.url, "k1", `{ "item" : "book" }`); got != want {
				t.Errorf("replay %d: %+v\nwant      %+v", i+1, got, want)
			}
		}
		if got := sh.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
		rec, err := s.get(t.Context(), "acme", "k1")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Outcome.Kind != idemhttp.KindResponse || rec.Outcome.Status != 201 ||
			http.Header(rec.Outcome.Header).Get("Location") != "/orders/1" || len(rec.Outcome.Header) != 2 {
			t.Errorf("record: kind %q, status %d, header %v; want http, 201, Content-Type and Location",
				rec.Outcome.Kind, rec.Outcome.Status, rec.Outcome.Header)
		}
	})
}

// TestScopes: two tenants with the same key each run the handler; the
// scope comes from c.Locals.
func TestScopes(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{})
		for _, tenant := range []string{"a", "b", "a"} {
			req, _ := http.NewRequest(http.MethodPost, sh.url, strings.NewReader(`{"item":"book"}`))
			req.Header.Set("Idempotency-Key", "same")
			req.Header.Set("X-Tenant", tenant)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if got := sh.runs.Load(); got != 2 {
			t.Errorf("handler ran %d times, want 2", got)
		}
	})
}

// TestInFlight: a duplicate while the first request runs gets 409 with
// Retry-After and the in-flight problem document; with Options.Wait it
// waits and gets the first answer instead. The handler runs once.
func TestInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		want answer
	}{
		{"at once", 0, answer{409, `{"type":"about:blank","title":"Conflict","status":409,"detail":"a request with this idempotency key is in flight","code":"in-flight"}` + "\n",
			"", idemhttp.ProblemContentType, "", "1"}},
		{"waiting", time.Minute, answer{201, `{"id":1,"item":"book","run":1}`, "/orders/1", "application/json; charset=utf-8", "true", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{Wait: tc.wait})
				sh.hold, sh.started = make(chan struct{}), make(chan struct{})
				done := make(chan answer, 1)
				go func() { done <- post(t, sh.url, "k1", `{"item":"book"}`) }()
				<-sh.started
				dup := make(chan answer, 1)
				go func() { dup <- post(t, sh.url, "k1", `{"item":"book"}`) }()
				if tc.wait > 0 {
					// The duplicate is waiting (or about to): let the
					// first one finish.
					time.Sleep(50 * time.Millisecond)
				} else {
					if got := <-dup; got != tc.want {
						t.Errorf("duplicate: %+v\nwant       %+v", got, tc.want)
					}
				}
				close(sh.hold)
				if first := <-done; first.status != http.StatusCreated {
					t.Errorf("first: %+v", first)
				}
				if tc.wait > 0 {
					if got := <-dup; got != tc.want {
						t.Errorf("duplicate: %+v\nwant       %+v", got, tc.want)
					}
				}
				if got := sh.runs.Load(); got != 1 {
					t.Errorf("handler ran %d times, want 1", got)
				}
			})
		})
	}
}

// TestKeys: the key field's answers, as idemhttp gives them: a bad key
// 400 (key-invalid), no key 400 (key-missing) with Required and the
// handler unprotected without, a key reused with another body 422
// (key-reused). Each row runs on a fresh shop.
func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		name     string
		required bool
		strict   bool
		keys     []string // the key field's lines of the second request
		body     string   // of the second request
		status   int
		code     string // the problem's code, or "" for the handler's answer
		runs     int64  // after both requests
	}{
		{"too long", false, false, []string{strings.Repeat("k", 256)}, `{"item":"book"}`, 400, "key-invalid", 1},
		{"empty", false, false, []string{""}, `{"item":"book"}`, 400, "key-invalid", 1},
		{"two lines", false, false, []string{"k1", "k1"}, `{"item":"book"}`, 400, "key-invalid", 1},
		{"bad quote", false, false, []string{`"k1`}, `{"item":"book"}`, 400, "key-invalid", 1},
		{"another key", false, false, []string{"k2"}, `{"item":"book"}`, 201, "", 2},
		{"strict refuses bare", false, true, []string{"k2"}, `{"item":"book"}`, 400, "key-invalid", 1},
		{"strict takes quoted", false, true, []string{`"k2"`}, `{"item":"book"}`, 201, "", 2},
		{"missing, required", true, false, nil, `{"item":"book"}`, 400, "key-missing", 1},
		{"missing, optional", false, false, nil, `{"item":"book"}`, 201, "", 2},
		{"bare is the quoted key", false, false, []string{"k1"}, `{"item":"book"}`, 201, "", 1},
		{"reused", false, false, []string{"k1"}, `{"item":"pen"}`, 422, "key-reused", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{Required: tc.required, StrictKey: tc.strict})
				if got := send(t, http.MethodPost, sh.url, `{"item":"book"}`, `"k1"`); got.status != 201 {
					t.Fatalf("first: %+v", got)
				}
				got := send(t, http.MethodPost, sh.url, tc.body, tc.keys...)
				if got.status != tc.status {
					t.Errorf("status %d, want %d (%s)", got.status, tc.status, got.body)
				}
				if tc.code != "" && (got.ctype != idemhttp.ProblemContentType || !strings.Contains(got.body, `"code":"`+tc.code+`"`)) {
					t.Errorf("answer %+v, want a problem document with code %s", got, tc.code)
				}
				if got := sh.runs.Load(); got != tc.runs {
					t.Errorf("handler ran %d times, want %d", got, tc.runs)
				}
			})
		})
	}
}

// TestStatuses: an answer whose status ShouldStore rejects (5xx, and the
// transient 408, 409, 425, 429) releases the key, and a retry runs again;
// one it accepts is stored, whether the handler wrote it or returned an
// error that the app's error handler wrote. Past the commit point every
// status is stored.
func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(c fiber.Ctx, n int64) error
		status int
		stored bool
	}{
		{"500 written", func(c fiber.Ctx, _ int64) error { return c.SendStatus(500) }, 500, false},
		{"503 written", func(c fiber.Ctx, _ int64) error { return c.SendStatus(503) }, 503, false},
		{"409 written", func(c fiber.Ctx, _ int64) error { return c.SendStatus(409) }, 409, false},
		{"429 returned", func(fiber.Ctx, int64) error { return fiber.ErrTooManyRequests }, 429, false},
		{"408 returned", func(fiber.Ctx, int64) error { return fiber.ErrRequestTimeout }, 408, false},
		{"plain error", func(fiber.Ctx, int64) error { return errors.New("stock service down") }, 500, false},
		{"400 returned", func(fiber.Ctx, int64) error { return fiber.ErrBadRequest }, 400, true},
		{"404 written", func(c fiber.Ctx, _ int64) error { return c.Status(404).SendString("no such item") }, 404, true},
		{"204", func(c fiber.Ctx, _ int64) error { return c.SendStatus(204) }, 204, true},
		{"503 after commit", func(c fiber.Ctx, _ int64) error {
			if !idemfiber.Commit(c) {
				return errors.New("lease lost")
			}
			return c.SendStatus(503)
		}, 503, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{})
				sh.handle = tc.handle
				first := post(t, sh.url, "k1", `{"item":"book"}`)
				second := post(t, sh.url, "k1", `{"item":"book"}`)
				if first.status != tc.status || second.status != tc.status {
					t.Errorf("statuses %d and %d, want %d twice", first.status, second.status, tc.status)
				}
				runs, replayed := int64(2), ""
				if tc.stored {
					runs, replayed = 1, "true"
					first.replayed = "true"
					if second != first {
						t.Errorf("replay %+v\nwant   %+v", second, first)
					}
				}
				if second.replayed != replayed {
					t.Errorf("replayed %q, want %q", second.replayed, replayed)
				}
				if got := sh.runs.Load(); got != runs {
					t.Errorf("handler ran %d times, want %d", got, runs)
				}
			})
		})
	}
}

// TestPanic: a handler that panics before its commit point releases the
// key (recover answers 500) and the retry runs; one that panics after it
// has a 500 problem document stored (handler-panicked), and the retry gets
// it without running.
func TestPanic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		second answer
		runs   int64
	}{
		{"before commit", false, answer{201, `{"id":1,"item":"book","run":2}`, "/orders/1", "application/json; charset=utf-8", "", ""}, 2},
		{"after commit", true, answer{500, `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the request with this idempotency key made its effect, then failed; its answer is lost","code":"handler-panicked"}` + "\n",
			"", idemhttp.ProblemContentType, "true", ""}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{})
				sh.handle = func(c fiber.Ctx, n int64) error {
					if n == 1 {
						if tc.commit && !idemfiber.Commit(c) {
							return errors.New("lease lost")
						}
						panic("stock service exploded")
					}
					return order(c, n)
				}
				if got := post(t, sh.url, "k1", `{"item":"book"}`); got.status != 500 {
					t.Errorf("panicking request: %+v, want 500 from recover", got)
				}
				if got := post(t, sh.url, "k1", `{"item":"book"}`); got != tc.second {
					t.Errorf("retry: %+v\nwant   %+v", got, tc.second)
				}
				if got := sh.runs.Load(); got != tc.runs {
					t.Errorf("handler ran %d times, want %d", got, tc.runs)
				}
			})
		})
	}
}

// TestNotKept: an answer longer than MaxBodyBytes reaches the client whole
// and is kept as a marker (retries get 410 with the replay field); a
// request body longer than it is refused with 413; a streamed answer is
// not stored, and the retry runs again.
func TestNotKept(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{MaxBodyBytes: 64})
		long := strings.Repeat("x", 100)
		sh.handle = func(c fiber.Ctx, n int64) error {
			if string(c.Body()) == `{"stream":true}` {
				return c.SendStreamWriter(func(w *bufio.Writer) { _, _ = w.WriteString("streamed") })
			}
			return c.Status(201).SendString(long)
		}
		if got := post(t, sh.url, "big", `{}`); got.status != 201 || got.body != long {
			t.Errorf("first: %+v, want 201 with the whole body", got)
		}
		got := post(t, sh.url, "big", `{}`)
		if got.status != 410 || got.replayed != "true" || !strings.Contains(got.body, `"code":"outcome-not-stored"`) ||
			!strings.Contains(got.body, "with status 201, but its answer was too large to keep") {
			t.Errorf("retry: %+v, want 410 outcome-not-stored, replayed", got)
		}
		if got := post(t, sh.url, "huge", `{"item":"`+long+`"}`); got.status != 413 || !strings.Contains(got.body, `"code":"body-too-large"`) {
			t.Errorf("long request: %+v, want 413 body-too-large", got)
		}
		for i := range 2 {
			if got := post(t, sh.url, "stream", `{"stream":true}`); got.status != 200 || got.body != "streamed" || got.replayed != "" {
				t.Errorf("streamed %d: %+v, want a fresh 200", i+1, got)
			}
		}
		if got := sh.runs.Load(); got != 3 {
			t.Errorf("handler ran %d times, want 3", got)
		}
	})
}

// TestStoreDown: with the store unreachable, a keyed request gets 503
// (unavailable) and the handler does not run; with FailOpen it runs
// unprotected.
func TestStoreDown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy idemhttp.FailurePolicy
		status int
		runs   int64
	}{
		{"fail closed", idemhttp.FailClosed, 503, 0},
		{"fail open", idemhttp.FailOpen, 201, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{FailurePolicy: tc.policy})
				s.down()
				got := post(t, sh.url, "k1", `{"item":"book"}`)
				if got.status != tc.status {
					t.Errorf("status %d, want %d (%s)", got.status, tc.status, got.body)
				}
				if tc.status == 503 && !strings.Contains(got.body, `"code":"unavailable"`) {
					t.Errorf("body %s, want code unavailable", got.body)
				}
				if got := sh.runs.Load(); got != tc.runs {
					t.Errorf("handler ran %d times, want %d", got, tc.runs)
				}
			})
		})
	}
}

// TestClaimFrom: the handler reads its claim: the scope, the client's key
// (unquoted), and a fence.
func TestClaimFrom(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{})
		var got idemhttp.Claim
		var ok, run bool
		sh.handle = func(c fiber.Ctx, n int64) error {
			got, ok = idemfiber.ClaimFrom(c)
			var r *lifecycle.Run
			r, run = lifecycle.FromContext(c.Context())
			if run && (r.Key() != got.Key || r.Fence() != got.Fence) {
				t.Errorf("the context's run has key %q and fence %d, ClaimFrom %q and %d", r.Key(), r.Fence(), got.Key, got.Fence)
			}
			return c.SendStatus(201)
		}
		post(t, sh.url, `"order-42"`, `{}`)
		if !ok || !run || got.Scope != "acme" || got.Key != "order-42" || got.Fence < 1 || !got.CommittedAt.IsZero() {
			t.Errorf("ClaimFrom: %+v, %v, run in the context %v; want acme, order-42, a fence, and the run", got, ok, run)
		}
		post(t, sh.url, "", `{}`)
		if ok || run {
			t.Errorf("without a key: ClaimFrom %+v, %v, run in the context %v; want false twice", got, ok, run)
		}
	})
}

// TestNoRoute: under app.Use, a request that matches no route is
// answered 404 by Fiber, and its key is released: nothing is stored, and
// its retry is not a replay.
func TestNoRoute(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		app := fiber.New()
		app.Use(idemfiber.New(s.l, idemfiber.Options{Scope: func(fiber.Ctx) (string, error) { return "acme", nil }}))
		app.Post("/orders", func(c fiber.Ctx) error { return c.SendStatus(201) })
		url := listen(t, app) + "/refunds"
		for i := range 2 {
			if got := post(t, url, "k1", `{}`); got.status != 404 || got.replayed != "" {
				t.Errorf("request %d: %+v, want a fresh 404", i+1, got)
			}
		}
		if _, err := s.get(t.Context(), "acme", "k1"); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("record: %v, want ErrNotFound", err)
		}
	})
}

// TestEvents: the observer hears what idemhttp's would, with the route
// template and the method.
func TestEvents(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		var mu sync.Mutex
		var got []string
		obs := ledger.ObserverFunc(func(_ context.Context, e ledger.Event) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s %s %s %d", e.Kind, e.Method, e.Route, e.Status))
		})
		sh := newShop(t, s, idemfiber.Options{Observer: obs})
		post(t, sh.url, "k1", `{"item":"book"}`)
		post(t, sh.url, "k1", `{"item":"book"}`)
		post(t, sh.url, "k1", `{"item":"pen"}`)
		want := []string{
			"claimed POST POST /orders 0",
			"stored POST POST /orders 201",
			"replayed POST POST /orders 201",
			"key_reused POST POST /orders 422",
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestSharedRecords: a Fiber service and a net/http service on the same
// ledger share their keys: an answer stored by either is replayed by the
// other, byte for byte, and a key reused with another body is refused by
// both.
func TestSharedRecords(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{})
		var runs atomic.Int64
		mw := s.middleware(idemhttp.Options{Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }})
		std := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("Location", "/orders/2")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":2,"item":"pen"}`)
		})))
		t.Cleanup(std.Close)
		stdURL := std.URL + "/orders"

		// Stored by Fiber, replayed by net/http.
		first := post(t, sh.url, "k1", `{"item":"book"}`)
		first.replayed = "true"
		if got := post(t, stdURL, "k1", `{"item":"book"}`); got != first {
			t.Errorf("net/http replay of Fiber's answer: %+v\nwant %+v", got, first)
		}
		// Stored by net/http, replayed by Fiber.
		std1 := post(t, stdURL, "k2", `{"item":"pen"}`)
		std1.replayed = "true"
		if got := post(t, sh.url, "k2", `{"item":"pen"}`); got != std1 {
			t.Errorf("Fiber replay of net/http's answer: %+v\nwant %+v", got, std1)
		}
		// Another body: refused by both.
		for _, url := range []string{sh.url, stdURL} {
			if got := post(t, url, "k1", `{"item":"pen"}`); got.status != 422 {
				t.Errorf("%s: reused key answered %d, want 422", url, got.status)
			}
		}
		if sh.runs.Load() != 1 || runs.Load() != 1 {
			t.Errorf("runs: Fiber %d, net/http %d; want 1 each", sh.runs.Load(), runs.Load())
		}
	})
}

// TestNested: an idemfiber handler inside another (app.Use'd, and on the
// route) leaves the request to the outer one, which holds its key: the
// handler runs once and its answer is replayed, where a second claim of
// the same key would answer 409 for ever.
func TestNested(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		opts := idemfiber.Options{Scope: func(fiber.Ctx) (string, error) { return "acme", nil }}
		app := fiber.New()
		app.Use(idemfiber.New(s.l, opts))
		var runs atomic.Int64
		app.Post("/orders", idemfiber.New(s.l, opts), func(c fiber.Ctx) error {
			return c.Status(201).SendString(fmt.Sprint(runs.Add(1)))
		})
		url := listen(t, app) + "/orders"
		for i, replayed := range []string{"", "true"} {
			if got := post(t, url, "k1", `{}`); got.status != 201 || got.body != "1" || got.replayed != replayed {
				t.Errorf("request %d: %+v, want 201 1 replayed %q", i+1, got, replayed)
			}
		}
	})
}

// TestScopeError: a scope function's *idemhttp.ScopeError chooses the
// refusal's status, detail and header lines; the handler does not run.
func TestScopeError(t *testing.T) {
	eachEngine(t, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{Scope: func(c fiber.Ctx) (string, error) {
			return "", fmt.Errorf("auth: %w", &idemhttp.ScopeError{Status: 401, Detail: "who are you?",
				Header: http.Header{"Www-Authenticate": {`Bearer realm="shop"`}}})
		}})
		req, _ := http.NewRequest(http.MethodPost, sh.url, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"who are you?","code":"scope"}` + "\n"
		if resp.StatusCode != 401 || string(body) != want || resp.Header.Get("WWW-Authenticate") != `Bearer realm="shop"` {
			t.Errorf("answer %d %s %v\nwant 401 %s with the challenge", resp.StatusCode, body, resp.Header, want)
		}
		if got := sh.runs.Load(); got != 0 {
			t.Errorf("handler ran %d times, want 0", got)
		}
	})
}

// TestStoredKinds: what a retry gets for each kind of record another
// writer may have left under the key: idemhttp's markers (410, with the
// replay field), an answer without a kind and without a Content-Type
// (replayed without fasthttp's default type), and an outcome that is no
// HTTP answer (a gRPC one, ledger.Mutate's: 500 stored-outcome, never
// sent).
func TestStoredKinds(t *testing.T) {
	const body = `{"item":"book"}`
	for _, tc := range []struct {
		name string
		out  ledger.Outcome
		want answer
	}{
		{"marker", ledger.Outcome{Kind: idemhttp.KindNotStored, Status: 201, Body: []byte("oversized")},
			answer{410, `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed with status 201, but its answer was too large to keep, so it cannot be sent again","code":"outcome-not-stored"}` + "\n",
				"", idemhttp.ProblemContentType, "true", ""}},
		{"legacy marker", ledger.Outcome{Status: 201, Header: map[string][]string{"Idemhttp-Not-Stored": {"hijack"}}},
			answer{410, `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed with status 201, but its answer could not be kept, so it cannot be sent again","code":"outcome-not-stored"}` + "\n",
				"", idemhttp.ProblemContentType, "true", ""}},
		{"untyped answer", ledger.Outcome{Status: 202, Header: map[string][]string{"Location": {"/jobs/7"}}, Body: []byte("queued")},
			answer{202, "queued", "/jobs/7", "", "true", ""}},
		{"grpc answer", ledger.Outcome{Kind: "grpc", Body: []byte{0x0a}},
			answer{500, `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the answer stored for this idempotency key cannot be replayed over HTTP","code":"stored-outcome"}` + "\n",
				"", idemhttp.ProblemContentType, "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, s store) {
				sh := newShop(t, s, idemfiber.Options{})
				req := ledger.Request{Scope: "acme", Key: "k1",
					Fingerprint: hash.Request(http.MethodPost, "/orders", "application/json", []byte(body))}
				c, err := s.l.Claim(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.l.Complete(t.Context(), c, tc.out); err != nil {
					t.Fatal(err)
				}
				if got := post(t, sh.url, "k1", body); got != tc.want {
					t.Errorf("retry: %+v\nwant   %+v", got, tc.want)
				}
				if got := sh.runs.Load(); got != 0 {
					t.Errorf("handler ran %d times, want 0", got)
				}
			})
		})
	}
}

// TestLeaseLost: when the store goes away while the handler runs, a lease
// passes with no extension confirmed, and the handler hears it through
// c.Context(): cancelled, with a cause matching ledger.ErrLeaseLost, and
// Commit reports false, so it answers 503 instead of making its effect.
func TestLeaseLost(t *testing.T) {
	eachEngineWith(t, ledger.Options{Lease: 500 * time.Millisecond}, func(t *testing.T, s store) {
		sh := newShop(t, s, idemfiber.Options{})
		type heard struct {
			cause  error
			commit bool
		}
		got := make(chan heard, 1)
		sh.handle = func(c fiber.Ctx, _ int64) error {
			s.down()
			select {
			case <-c.Context().Done():
			case <-time.After(10 * time.Second): // twenty leases: never heard
			}
			h := heard{cause: context.Cause(c.Context()), commit: idemfiber.Commit(c)}
			got <- h
			if !h.commit {
				return fiber.ErrServiceUnavailable
			}
			return c.SendStatus(201)
		}
		if a := post(t, sh.url, "k1", `{"item":"book"}`); a.status != 503 {
			t.Errorf("answer %+v, want 503", a)
		}
		h := <-got
		if !errors.Is(h.cause, ledger.ErrLeaseLost) || h.commit {
			t.Errorf("the handler heard cause %v and Commit %v; want ErrLeaseLost and false", h.cause, h.commit)
		}
	})
}
