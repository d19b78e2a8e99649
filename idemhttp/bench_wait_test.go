package idemhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// BenchmarkWaitingDuplicate measures what Options.Wait adds to a duplicate
// of a running request, over loopback HTTP on every driver: the time from
// the first answer stored (the stored event, reported right after the
// record's Complete) to the duplicate's answer, the duplicate having
// waited hold before the first request answered. Beside it, in the same
// run, the bare time of a replay (the same key sent again once stored),
// and the time of one poll (a Claim that finds the key in flight: what a
// waiting duplicate costs the store at each poll). Ratios:
// added/replay, and the added latency's worst against the replay.
//
//	IDEMLEDGER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	IDEMLEDGER_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' \
//	go test -run '^$' -bench '^BenchmarkWaitingDuplicate$' -benchtime 40x -cpu 2 ./idemhttp/
func BenchmarkWaitingDuplicate(b *testing.B) {
	for _, e := range testdb.Drivers() {
		for _, hold := range []time.Duration{0, 10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
			b.Run(fmt.Sprintf("driver=%s/hold=%v", e, hold), func(b *testing.B) { runWaiting(b, e, hold) })
		}
	}
}

// waitEnv is a server of one driver whose handler answers once released,
// behind Middleware with Wait, and the moment its last answer was stored.
type waitEnv struct {
	srv      *httptest.Server
	started  chan struct{} // a handler runs
	release  chan struct{} // the running handler answers
	storedAt atomic.Int64  // Unix ns of the last stored event
	// poll claims a key held in flight: one poll of a waiting duplicate.
	poll func(ctx context.Context) error
}

func newWaitEnv(b *testing.B, e string) *waitEnv {
	env := &waitEnv{started: make(chan struct{}, 1), release: make(chan struct{})}
	opts := Options{
		Scope: func(*http.Request) (string, error) { return "tenant-1", nil },
		Wait:  time.Minute,
		Observer: ledger.ObserverFunc(func(_ context.Context, ev ledger.Event) {
			if ev.Kind == ledger.EventStored {
				env.storedAt.Store(time.Now().UnixNano())
			}
		}),
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env.started <- struct{}{}
		<-env.release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"order":1}`)
	})
	held := ledger.Request{Scope: "tenant-1", Key: "held", Fingerprint: hash.Bytes([]byte("held"))}
	var handler http.Handler
	if d, ok := testdb.OpenPgx(b, e); ok {
		l := benchLedger(b, d.Driver)
		handler, env.poll = Middleware(l, opts)(h), func(ctx context.Context) error { _, err := l.Claim(ctx, held); return err }
	} else if d, ok := testdb.OpenSQL(b, e); ok {
		l := benchLedger(b, d.Driver)
		handler, env.poll = Middleware(l, opts)(h), func(ctx context.Context) error { _, err := l.Claim(ctx, held); return err }
	} else {
		b.Fatalf("no driver %s", e)
	}
	if err := env.poll(context.Background()); err != nil {
		b.Fatal(err) // the first claim holds the key for every later poll
	}
	env.srv = httptest.NewServer(handler)
	b.Cleanup(env.srv.Close)
	return env
}

func benchLedger[TTx any](b *testing.B, d driver.Driver[TTx]) *ledger.Ledger[TTx] {
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// post sends a request with key and returns its status, after reading the
// whole answer.
func (env *waitEnv) post(client *http.Client, key string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, env.srv.URL+"/orders", strings.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderName, key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func runWaiting(b *testing.B, e string, hold time.Duration) {
	env := newWaitEnv(b, e)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	warm := make(chan error, 1)
	go func() { _, err := env.post(client, "warm-up"); warm <- err }()
	<-env.started
	env.release <- struct{}{}
	if err := <-warm; err != nil {
		b.Fatal(err)
	}
	var added, worst, replay, poll time.Duration
	b.ResetTimer()
	for i := range b.N {
		key := "wait-" + strconv.Itoa(i)
		first := make(chan error, 1)
		go func() {
			status, err := env.post(client, key)
			if err == nil && status != http.StatusCreated {
				err = fmt.Errorf("first request: %d", status)
			}
			first <- err
		}()
		<-env.started
		dup := make(chan error, 1)
		var answeredAt atomic.Int64
		go func() {
			status, err := env.post(client, key)
			answeredAt.Store(time.Now().UnixNano())
			if err == nil && status != http.StatusCreated {
				err = fmt.Errorf("duplicate: %d, want the first answer", status)
			}
			dup <- err
		}()
		time.Sleep(hold)
		env.release <- struct{}{}
		if err := errors.Join(<-first, <-dup); err != nil {
			b.Fatal(err)
		}
		d := time.Duration(answeredAt.Load() - env.storedAt.Load())
		added += d
		worst = max(worst, d)

		start := time.Now()
		if status, err := env.post(client, key); err != nil || status != http.StatusCreated {
			b.Fatalf("replay: %d, %v", status, err)
		}
		replay += time.Since(start)

		start = time.Now()
		var inFlight *ledger.InFlightError
		if err := env.poll(context.Background()); !errors.As(err, &inFlight) {
			b.Fatalf("poll: %v, want in flight", err)
		}
		poll += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(added.Microseconds())/n, "added-us")
	b.ReportMetric(float64(worst.Microseconds()), "worst-us")
	b.ReportMetric(float64(replay.Microseconds())/n, "replay-us")
	b.ReportMetric(float64(poll.Microseconds())/n, "poll-us")
	b.ReportMetric(float64(added)/float64(replay), "added/replay")
	b.ReportMetric(float64(worst)*n/float64(replay), "worst/replay")
}
