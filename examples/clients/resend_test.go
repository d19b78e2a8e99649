package clients_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// cutter is an HTTP/1.1 proxy on loopback that, once armed, lets the next
// request on a reused connection reach the server, throws the answer away
// and closes the connection: the client wrote its request on a kept-alive
// connection and read nothing back.
type cutter struct {
	ln    net.Listener
	armed atomic.Bool
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(cc, target)
		}
	}()
	return c
}

func (c *cutter) serve(cc net.Conn, target string) {
	defer cc.Close()
	sc, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer sc.Close()
	br, sbr := bufio.NewReader(cc), bufio.NewReader(sc)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if err := req.Write(sc); err != nil {
			return
		}
		resp, err := http.ReadResponse(sbr, req)
		if err != nil {
			return
		}
		if n >= 2 && c.armed.CompareAndSwap(true, false) {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return // the server ran it; the client hears nothing
		}
		err = resp.Write(cc)
		resp.Body.Close()
		if err != nil {
			return
		}
	}
}

// TestNetHTTPResend: net/http's Transport sends a request that carries an
// Idempotency-Key header again, once and by itself, when the kept-alive
// connection it was written on closes before any answer (golang/go#19943;
// the Transport treats such a request as replayable). The server ran the
// first copy: the resend is answered with the stored answer, marked
// replayed, and the effect is made once. Without a key the Transport
// reports the error instead. On every driver.
func TestNetHTTPResend(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		s := &shop{status: 201, body: func(n int64) string { return `{"order":1}` }}
		s.start(t, engine, idemhttp.Options{})
		cut := newCutter(t, strings.TrimPrefix(s.srv.URL, "http://"))
		client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
		defer client.CloseIdleConnections()
		post := func(key string) (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+cut.ln.Addr().String()+"/orders", strings.NewReader(`{"amount":1250}`))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set(idemhttp.HeaderName, key)
			}
			return client.Do(req)
		}
		// A first request opens the connection the next one reuses.
		if resp, err := post("warm-up"); err != nil || resp.StatusCode != 201 {
			t.Fatalf("warm-up: %v, %v", resp, err)
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cut.armed.Store(true)
		resp, err := post("order 42")
		if err != nil {
			t.Fatalf("with a key: %v; want the Transport's own resend to be answered", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 || string(body) != `{"order":1}` || resp.Header.Get(idemhttp.DefaultReplayHeader) != "true" {
			t.Errorf("with a key: %d %q replayed %q; want the stored 201, replayed", resp.StatusCode, body, resp.Header.Get(idemhttp.DefaultReplayHeader))
		}
		if h, e := s.hitsOf("order 42"), s.effectsOf("order 42"); h != 2 || e != 1 {
			t.Errorf("with a key: %d requests reached the server, %d effects; want 2 (the resend), 1", h, e)
		}

		// Without a key the request is not replayable: no resend.
		if resp, err := post("warm-up-2"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cut.armed.Store(true)
		if resp, err := post(""); err == nil {
			resp.Body.Close()
			t.Errorf("without a key: %d; want the Transport to report the closed connection", resp.StatusCode)
		}
	})
}
