package echoexample_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// TestEcho: idemhttp's contract through echo.WrapMiddleware, on every
// engine, with the handler's errors written inside the chain.
func TestEcho(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		mw := testledger.Middleware(t, engine, idemhttp.Options{
			Scope: func(r *http.Request) (string, error) { return "alice", nil },
		})
		runs := 0
		srv := httptest.NewServer(newApp(mw, true, &runs))
		defer srv.Close()
		url := srv.URL + "/orders"
		steps := []struct {
			key, body, want string
			runs            int
		}{
			{"k1", `{"item":"book"}`, `201 {"item":"book","order":1} location="/orders/1" replayed=""`, 1},
			{"k1", `{"item":"book"}`, `201 {"item":"book","order":1} location="/orders/1" replayed="true"`, 1},
			{"k1", `{"item":"pen"}`, `422 {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's","code":"key-reused"} location="" replayed=""`, 1},
			// A returned 400 is stored and replayed like any answer.
			{"k2", `{}`, `400 {"message":"an order needs an item"} location="" replayed=""`, 2},
			{"k2", `{}`, `400 {"message":"an order needs an item"} location="" replayed="true"`, 2},
			// A returned 503 releases the key: the retry runs again.
			{"k3", `{"item":"outage"}`, `503 {"message":"warehouse unreachable"} location="" replayed=""`, 3},
			{"k3", `{"item":"outage"}`, `503 {"message":"warehouse unreachable"} location="" replayed=""`, 4},
		}
		for i, s := range steps {
			if got := post(url, s.key, s.body); got != s.want {
				t.Errorf("step %d:\n got %s\nwant %s", i+1, got, s.want)
			}
			if runs != s.runs {
				t.Errorf("step %d: %d runs, want %d", i+1, runs, s.runs)
			}
		}
	})
}

// TestEchoErrorsAfterTheChain shows why errorsInside is needed: without
// it, Echo writes a returned error after the middleware recorded the
// answer, so the client gets the 400 but the retry an empty 200.
func TestEchoErrorsAfterTheChain(t *testing.T) {
	mw := testledger.Middleware(t, "sqlite", idemhttp.Options{
		Scope: func(r *http.Request) (string, error) { return "alice", nil },
	})
	runs := 0
	srv := httptest.NewServer(newApp(mw, false, &runs))
	defer srv.Close()
	first := post(srv.URL+"/orders", "k", `{}`)
	second := post(srv.URL+"/orders", "k", `{}`)
	if !strings.HasPrefix(first, "400 ") || second != `200  location="" replayed="true"` {
		t.Errorf("without errorsInside: first %s, retry %s; want 400 then the empty 200 that was stored", first, second)
	}
}
