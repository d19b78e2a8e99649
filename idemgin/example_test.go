package idemgin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/idemledger/idemledger/idemgin"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// A Gin engine whose POST routes run at most once per Idempotency-Key:
// the retry is answered from the ledger, with Idempotent-Replayed: true.
func ExampleWrap() {
	dir, _ := os.MkdirTemp("", "idemgin")
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
		// The scope comes from what the authentication middleware found.
		Scope: func(r *http.Request) (string, error) {
			c, _ := idemgin.Context(r)
			return c.GetString("user"), nil
		},
	})
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery(), func(c *gin.Context) { c.Set("user", "alice") }, idemgin.Wrap(mw))
	orders := 0
	r.POST("/orders", func(c *gin.Context) {
		orders++
		c.JSON(http.StatusCreated, gin.H{"order": orders})
	})
	srv := httptest.NewServer(r)
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"item":"book"}`))
		req.Header.Set("Idempotency-Key", "order-42")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"))
	}
	// Output:
	// 201 {"order":1} replayed=""
	// 201 {"order":1} replayed="true"
}
