package idemgin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/idemledger/idemledger/idemgin"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/eventlog"
	"github.com/idemledger/idemledger/ledger"
)

// TestWrapNoRoute: a request that matched no Gin route, which Gin still
// runs through the r.Use middleware in its 404 or 405 chain, passes
// through Wrap unprotected. Gin (or a NoRoute handler) answers it, with
// or without a key, and every time afresh: nothing is stored under its
// key, nothing is replayed, the observer hears nothing of it. The same
// key then runs the handler of a real route (neither 422 nor a replayed
// 404), whose retry is replayed as before. Were the 404 stored, a POST to
// a route only a newer version has, answered 404 by an older server
// during a rolling deploy, would be answered 404 by the newer ones for
// the record's lifetime.
func TestWrapNoRoute(t *testing.T) {
	tests := []struct {
		name         string
		noMethod     bool // the engine's HandleMethodNotAllowed
		noRoute      bool // a NoRoute handler answers in JSON
		method, path string
		status       int
		body         string // Gin's answer
	}{
		{"unknown path", false, false, http.MethodPost, "/nope", http.StatusNotFound, "404 page not found"},
		{"unknown path with HandleMethodNotAllowed", true, false, http.MethodPost, "/nope", http.StatusNotFound, "404 page not found"},
		{"unknown path with a NoRoute handler", false, true, http.MethodPost, "/nope", http.StatusNotFound, `{"error":"no route"}`},
		{"method without a route", false, false, http.MethodPatch, "/orders", http.StatusNotFound, "404 page not found"},
		{"method without a route with HandleMethodNotAllowed", true, false, http.MethodPatch, "/orders", http.StatusMethodNotAllowed, "405 method not allowed"},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				obs := &eventlog.Recorder{}
				mw, store := middleware(t, engine, idemhttp.Options{
					Scope:    func(*http.Request) (string, error) { return "shop", nil },
					Observer: obs,
				})
				r := gin.New()
				r.HandleMethodNotAllowed = tt.noMethod
				r.Use(gin.RecoveryWithWriter(io.Discard), idemgin.Wrap(mw))
				if tt.noRoute {
					r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "no route"}) })
				}
				var mu sync.Mutex
				runs := 0
				r.POST("/orders", func(c *gin.Context) {
					mu.Lock()
					runs++
					n := runs
					mu.Unlock()
					c.JSON(http.StatusCreated, gin.H{"run": n})
				})
				srv := httptest.NewServer(r)
				t.Cleanup(srv.Close)

				const body = `{"item":"book"}`
				for i, key := range []string{"", "k1", "k1"} {
					got := send(t, tt.method, srv.URL+tt.path, key, body)
					if got.status != tt.status || got.body != tt.body || got.replayed != "" {
						t.Errorf("request %d, key %q: %+v, want %d %q, not replayed", i+1, key, got, tt.status, tt.body)
					}
				}
				if rec, err := store.Get(context.Background(), "shop", "k1"); !errors.Is(err, ledger.ErrNotFound) {
					t.Errorf("record under k1: %+v, %v; want ledger.ErrNotFound", rec, err)
				}
				var rows int
				if err := store.DB.QueryRow(`SELECT count(*) FROM idempotency_ledger`).Scan(&rows); err != nil {
					t.Fatal(err)
				}
				if rows != 0 {
					t.Errorf("%d rows in the ledger, want 0", rows)
				}
				if evs := obs.All(); len(evs) != 0 {
					t.Errorf("observer got %+v for requests no route matched, want nothing", evs)
				}

				want := answer{status: http.StatusCreated, body: `{"run":1}`, ctype: "application/json; charset=utf-8"}
				if got := post(t, srv.URL+"/orders", "k1", body); got != want {
					t.Errorf("same key on POST /orders: %+v\nwant %+v", got, want)
				}
				want.replayed = "true"
				if got := post(t, srv.URL+"/orders", "k1", body); got != want {
					t.Errorf("retry on POST /orders: %+v\nwant %+v", got, want)
				}
				mu.Lock()
				if runs != 1 {
					t.Errorf("handler ran %d times, want 1", runs)
				}
				mu.Unlock()
				claimed := 0
				for _, ev := range obs.All() {
					if ev.Kind == ledger.EventClaimed {
						claimed++
						if ev.Method != http.MethodPost || ev.Route != "POST /orders" {
							t.Errorf("claimed event %+v, want method POST, route POST /orders", ev)
						}
					}
				}
				if claimed != 1 {
					t.Errorf("%d claimed events, want 1 (POST /orders)", claimed)
				}
			})
		}
	})
}
