package echoexample_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// errorsInside writes a handler's returned error inside the chain that
// idemhttp's middleware records, instead of after it (see the package
// doc): place it right after echo.WrapMiddleware.
func errorsInside(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := next(c); err != nil {
			c.Error(err)
		}
		return nil
	}
}

// newApp returns an Echo application whose POST /orders runs at most once
// per Idempotency-Key, the middleware made by mw, and counts its runs.
func newApp(mw func(http.Handler) http.Handler, inside bool, runs *int) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(echo.WrapMiddleware(mw))
	if inside {
		e.Use(errorsInside)
	}
	e.POST("/orders", func(c echo.Context) error {
		*runs++
		var in struct{ Item string }
		if err := c.Bind(&in); err != nil || in.Item == "" {
			return echo.NewHTTPError(http.StatusBadRequest, "an order needs an item")
		}
		if in.Item == "outage" {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "warehouse unreachable")
		}
		c.Response().Header().Set("Location", "/orders/1")
		return c.JSON(http.StatusCreated, map[string]any{"order": *runs, "item": in.Item})
	})
	return e
}

func post(url, key, body string) string {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s location=%q replayed=%q", resp.StatusCode, strings.TrimSpace(string(b)),
		resp.Header.Get("Location"), resp.Header.Get(idemhttp.DefaultReplayHeader))
}

// An Echo application with idemhttp's middleware: the retry is answered
// from the ledger; the key reused for another order is refused with 422.
func Example() {
	dir, _ := os.MkdirTemp("", "idemecho")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	d := sqlite.New(db)
	if err := schema.Migrate(context.Background(), d); err != nil {
		panic(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope: func(r *http.Request) (string, error) { return "alice", nil },
	})
	runs := 0
	srv := httptest.NewServer(newApp(mw, true, &runs))
	defer srv.Close()

	fmt.Println(post(srv.URL+"/orders", "k1", `{"item":"book"}`))
	fmt.Println(post(srv.URL+"/orders", "k1", `{"item":"book"}`))
	fmt.Println(post(srv.URL+"/orders", "k1", `{"item":"pen"}`)[:3])
	fmt.Println("runs:", runs)
	// Output:
	// 201 {"item":"book","order":1} location="/orders/1" replayed=""
	// 201 {"item":"book","order":1} location="/orders/1" replayed="true"
	// 422
	// runs: 1
}
