package idemwatermill_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

var errBoom = errors.New("boom")

// The router's answers of Middleware, called as the router calls it: a
// message in flight in another handler is nacked after the consumer's
// NackDelay (100 ms) with the *ledger.InFlightError; a handler error is
// returned unchanged and the redelivery runs; an error after Commit is a
// dead letter once: the redelivery is acked (nil error, nothing to
// publish) and does not run.
func TestMiddlewareAnswers(t *testing.T) {
	testdb.Each(t, testMiddlewareAnswers[*sql.Tx], testMiddlewareAnswers[pgx.Tx])
}

func testMiddlewareAnswers[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	c := newConsumer(t, d, "g")
	mw := idemwatermill.Middleware(c)

	// In flight.
	started, release := make(chan struct{}), make(chan struct{})
	first := mw(func(msg *message.Message) ([]*message.Message, error) {
		close(started)
		<-release
		return nil, nil
	})
	msg := message.NewMessage("m-1", []byte("p"))
	firstDone := make(chan error)
	go func() { _, err := first(msg.Copy()); firstDone <- err }()
	<-started
	ran := false
	second := mw(func(*message.Message) ([]*message.Message, error) { ran = true; return nil, nil })
	begin := time.Now()
	_, err := second(msg.Copy())
	if waited := time.Since(begin); !errors.Is(err, ledger.ErrInFlight) || waited < 100*time.Millisecond || ran {
		t.Fatalf("duplicate in flight: %v after %v (ran %v), want ErrInFlight after 100ms, not run", err, waited, ran)
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}

	// Errors before and after the commit point.
	cases := []struct {
		name   string
		commit bool
		want   error
		again  error // the redelivery's
		rerun  bool
	}{
		{"before the commit point", false, errBoom, errBoom, true},
		{"after the commit point", true, consume.ErrDeadLetter, nil, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			h := mw(func(msg *message.Message) ([]*message.Message, error) {
				runs++
				if tc.commit && !idemwatermill.Commit(msg) {
					t.Error("Commit: no run")
				}
				return nil, errBoom
			})
			m := message.NewMessage(string(rune('a'+i)), []byte("p"))
			if _, err := h(m.Copy()); !errors.Is(err, tc.want) || !errors.Is(err, errBoom) {
				t.Fatalf("first: %v, want %v", err, tc.want)
			}
			out, err := h(m.Copy())
			if !errors.Is(err, tc.again) || (tc.again == nil) != (err == nil) || idemwatermill.IsDeadLetter(err) || len(out) != 0 {
				t.Fatalf("redelivery: %v, %d messages; want %v and none", err, len(out), tc.again)
			}
			if wantRuns := map[bool]int{true: 2, false: 1}[tc.rerun]; runs != wantRuns {
				t.Fatalf("%d runs, want %d", runs, wantRuns)
			}
		})
	}
}
