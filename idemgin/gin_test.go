package idemgin_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/idemledger/idemledger/idemgin"
	"github.com/idemledger/idemledger/idemhttp"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// answer is what a client saw.
type answer struct {
	status   int
	body     string
	location string
	ctype    string
	replayed string
	retry    string
}

func post(t *testing.T, url, key, body string) answer {
	t.Helper()
	return send(t, http.MethodPost, url, key, body)
}

// send is post with another method.
func send(t *testing.T, method, url, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header.Get("Location"), resp.Header.Get("Content-Type"),
		resp.Header.Get(idemhttp.DefaultReplayHeader), resp.Header.Get("Retry-After")}
}

// shop is a Gin engine over loopback: an authentication middleware puts
// the tenant in the Gin context, Wrap reads it as the scope, and POST
// /orders creates an order with c.JSON.
type shop struct {
	url  string
	runs atomic.Int64
	// hold, when set, blocks the handler until it is closed; started is
	// closed when the handler starts.
	hold, started chan struct{}
	panics        atomic.Bool
}

func newShop(t *testing.T, engine string) *shop {
	t.Helper()
	s := &shop{}
	mw, _ := middleware(t, engine, idemhttp.Options{Scope: func(r *http.Request) (string, error) {
		c, ok := idemgin.Context(r)
		if !ok {
			t.Error("idemgin.Context: no Gin context in the request")
			return "", nil
		}
		return c.GetString("tenant"), nil
	}})
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard), func(c *gin.Context) { c.Set("tenant", c.GetHeader("X-Tenant")) }, idemgin.Wrap(mw))
	r.POST("/orders", func(c *gin.Context) {
		n := s.runs.Add(1)
		if s.started != nil {
			close(s.started)
		}
		if s.hold != nil {
			<-s.hold
		}
		if s.panics.Load() && n == 1 {
			panic("stock service exploded")
		}
		var in struct{ Item string }
		if err := c.ShouldBindJSON(&in); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
			return
		}
		c.Header("Location", "/orders/1")
		c.JSON(http.StatusCreated, gin.H{"id": 1, "item": in.Item, "run": n})
	})
	r.POST("/ping", func(c *gin.Context) { c.Status(http.StatusAccepted) })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// TestWrap: the first request runs the handler; the retry gets the same
// status, body and headers, marked as replayed; a key reused with another
// body gets 422; a bad key 400; and the handler runs once.
func TestWrap(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		s := newShop(t, engine)
		first := post(t, s.url+"/orders", "k1", `{"item":"book"}`)
		want := answer{201, `{"id":1,"item":"book","run":1}`, "/orders/1", "application/json; charset=utf-8", "", ""}
		if first != want {
			t.Errorf("first:  %+v\nwant    %+v", first, want)
		}
		want.replayed = "true"
		if second := post(t, s.url+"/orders", "k1", `{ "item": "book" }`); second != want {
			t.Errorf("replay: %+v\nwant    %+v", second, want)
		}
		if got := post(t, s.url+"/orders", "k1", `{"item":"pen"}`); got.status != http.StatusUnprocessableEntity ||
			!strings.Contains(got.body, `"code":"key-reused"`) {
			t.Errorf("reuse: %+v, want 422 key-reused", got)
		}
		if got := post(t, s.url+"/orders", strings.Repeat("k", 256), `{"item":"book"}`); got.status != http.StatusBadRequest {
			t.Errorf("bad key: %+v, want 400", got)
		}
		if got := s.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
	})
}

// TestWrapInFlight: a retry while the first request runs gets 409 with
// Retry-After, and does not run the handler.
func TestWrapInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		s := newShop(t, engine)
		s.hold, s.started = make(chan struct{}), make(chan struct{})
		done := make(chan answer)
		go func() { done <- post(t, s.url+"/orders", "k1", `{"item":"book"}`) }()
		<-s.started
		dup := post(t, s.url+"/orders", "k1", `{"item":"book"}`)
		close(s.hold)
		if first := <-done; first.status != http.StatusCreated {
			t.Errorf("first: %+v", first)
		}
		if dup.status != http.StatusConflict || dup.retry != "1" || !strings.Contains(dup.body, `"code":"in-flight"`) {
			t.Errorf("duplicate: %+v, want 409 in-flight with Retry-After: 1", dup)
		}
		if got := s.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
	})
}

// TestWrapScopes: the scope comes from the Gin context: two tenants with
// the same key each run the handler.
func TestWrapScopes(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		s := newShop(t, engine)
		for _, tenant := range []string{"a", "b", "a"} {
			req, _ := http.NewRequest(http.MethodPost, s.url+"/orders", bytes.NewReader([]byte(`{"item":"book"}`)))
			req.Header.Set("Idempotency-Key", "same")
			req.Header.Set("X-Tenant", tenant)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if got := s.runs.Load(); got != 2 {
			t.Errorf("handler ran %d times, want 2", got)
		}
	})
}

// TestWrapPanic: a panicking handler releases its key (gin.Recovery
// answers 500), and the retry runs the handler again.
func TestWrapPanic(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		s := newShop(t, engine)
		s.panics.Store(true)
		if got := post(t, s.url+"/orders", "k1", `{"item":"book"}`); got.status != http.StatusInternalServerError {
			t.Errorf("panicking request: %+v, want 500 from gin.Recovery", got)
		}
		if got := post(t, s.url+"/orders", "k1", `{"item":"book"}`); got.status != http.StatusCreated || got.replayed != "" {
			t.Errorf("retry: %+v, want a fresh 201", got)
		}
		if got := s.runs.Load(); got != 2 {
			t.Errorf("handler ran %d times, want 2", got)
		}
	})
}

// TestWrapStatusOnly: a status set with c.Status and no body, which Gin
// sends only after the chain, is stored and replayed.
func TestWrapStatusOnly(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		s := newShop(t, engine)
		for i, replayed := range []string{"", "true"} {
			if got := post(t, s.url+"/ping", "k1", ``); got.status != http.StatusAccepted || got.replayed != replayed {
				t.Errorf("request %d: %+v, want 202 replayed %q", i+1, got, replayed)
			}
		}
	})
}
