package idemgin_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/idemledger/idemledger/idemgin"
)

// TestWrapPattern: the request the middleware gets carries the Gin route
// as its Pattern, "METHOD /path/:param" as net/http writes patterns, and
// so does the request the handlers after Wrap see; a pattern set before
// Gin (a ServeMux in front) is kept; a request no route matched does not
// reach the middleware at all, and gets Gin's 404 or 405.
func TestWrapPattern(t *testing.T) {
	var mu sync.Mutex
	var seen []string // the middleware's r.Pattern, then the handler's, per request
	record := func(p string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
	}
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			record(r.Pattern)
			next.ServeHTTP(w, r)
		})
	}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(idemgin.Wrap(mw))
	handler := func(c *gin.Context) {
		record(c.Request.Pattern)
		c.Status(http.StatusNoContent)
	}
	r.POST("/payments/:id", handler)
	r.GET("/files/*path", handler)
	r.Group("/v1").PUT("/orders", handler)
	r.POST("/mounted/:id", handler)
	direct := httptest.NewServer(r)
	t.Cleanup(direct.Close)
	mux := http.NewServeMux()
	mux.Handle("POST /mounted/{id}", r)
	mounted := httptest.NewServer(mux)
	t.Cleanup(mounted.Close)

	tests := []struct {
		srv          *httptest.Server
		method, path string
		status       int
		want         []string
	}{
		{direct, "POST", "/payments/42", 204, []string{"POST /payments/:id", "POST /payments/:id"}},
		{direct, "GET", "/files/a/b.txt", 204, []string{"GET /files/*path", "GET /files/*path"}},
		{direct, "PUT", "/v1/orders", 204, []string{"PUT /v1/orders", "PUT /v1/orders"}},
		{mounted, "POST", "/mounted/7", 204, []string{"POST /mounted/{id}", "POST /mounted/{id}"}},
		{direct, "POST", "/nowhere", 404, nil},
		{direct, "DELETE", "/payments/42", 405, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req, err := http.NewRequest(tt.method, tt.srv.URL+tt.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(seen, tt.want) {
				t.Errorf("patterns seen %q, want %q", seen, tt.want)
			}
		})
	}
}
