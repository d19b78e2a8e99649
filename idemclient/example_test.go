package idemclient_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/idemclient"
)

// A client whose requests carry a key and survive a dropped connection:
// the server below drops the first two connections it gets, and the
// Transport retries with the same key and the same body.
func ExampleTransport() {
	var attempts atomic.Int32
	var mu sync.Mutex
	var keys, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.Header.Get(idemclient.HeaderName))
		bodies = append(bodies, string(b))
		if attempts.Add(1) <= 2 {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	client := &http.Client{Transport: &idemclient.Transport{
		Base:           &http.Transport{DisableKeepAlives: true},
		InitialBackoff: 10 * time.Millisecond,
	}}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", attempts.Load(), "attempts")
	fmt.Println("same key every time:", keys[0] == keys[1] && keys[1] == keys[2])
	fmt.Println("bodies:", bodies)
	// Output:
	// 201 after 3 attempts
	// same key every time: true
	// bodies: [{"amount":100} {"amount":100} {"amount":100}]
}

// Setting a key by hand: it is written as an RFC 9651 sf-string.
func ExampleSetKey() {
	req, _ := http.NewRequest(http.MethodPost, "https://api.example/payments", nil)
	if err := idemclient.SetKey(req.Header, `order-17/"retry"`); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Header.Get("Idempotency-Key"))
	// Output:
	// "order-17/\"retry\""
}

func ExampleNewKey() {
	key, err := idemclient.NewKey()
	if err != nil {
		fmt.Println("no randomness:", err)
		return
	}
	fmt.Println(len(key), key[14:15])
	// Output: 36 4
}
