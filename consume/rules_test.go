package consume_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/ledger"
)

var errBoom = errors.New("boom")

// form is one of the two ways to handle a message. run delivers msg to
// c; its handler counts the run in runs, makes msg's effect (a row in the
// transaction, for HandleTx) and returns h's answer.
type form[TTx any] struct {
	name string
	run  func(b *bundle[TTx], c *consume.Consumer[TTx], msg consume.Message, runs *atomic.Int32, h func(ctx context.Context) (consume.Output, error)) consume.Decision
}

func forms[TTx any]() []form[TTx] {
	return []form[TTx]{
		{"HandleTx", func(b *bundle[TTx], c *consume.Consumer[TTx], msg consume.Message, runs *atomic.Int32, h func(context.Context) (consume.Output, error)) consume.Decision {
			return c.HandleTx(b.ctx, msg, func(ctx context.Context, tx TTx, m consume.Message) (consume.Output, error) {
				runs.Add(1)
				if err := b.writeEffect(ctx, tx, m); err != nil {
					return consume.Output{}, err
				}
				return h(ctx)
			})
		}},
		{"Handle", func(b *bundle[TTx], c *consume.Consumer[TTx], msg consume.Message, runs *atomic.Int32, h func(context.Context) (consume.Output, error)) consume.Decision {
			return c.Handle(b.ctx, msg, func(ctx context.Context, m consume.Message) (consume.Output, error) {
				runs.Add(1)
				return h(ctx)
			})
		}},
	}
}

// eachForm runs body on every driver, once per form.
func eachForm(t *testing.T, sqlBody func(*testing.T, *bundle[*sql.Tx], form[*sql.Tx]), pgxBody func(*testing.T, *bundle[pgx.Tx], form[pgx.Tx])) {
	t.Helper()
	for i := range forms[*sql.Tx]() {
		t.Run(forms[*sql.Tx]()[i].name, func(t *testing.T) {
			eachDriver(t,
				func(t *testing.T, b *bundle[*sql.Tx]) { sqlBody(t, b, forms[*sql.Tx]()[i]) },
				func(t *testing.T, b *bundle[pgx.Tx]) { pgxBody(t, b, forms[pgx.Tx]()[i]) })
		})
	}
}

var (
	order   = consume.Message{ID: "msg-1", Payload: []byte(`{"order":42}`), Metadata: map[string]string{"delivery": "1"}}
	shipped = consume.Output{Result: []byte(`{"shipment":7}`), Publish: []consume.Outgoing{
		{ID: "out-1", Topic: "shipments", Payload: []byte(`{"shipment":7}`), Metadata: map[string]string{"order": "42"}},
		{ID: "out-2", Payload: []byte(`{"mail":"sent"}`)},
	}}
)

func ok(context.Context) (consume.Output, error) { return shipped, nil }

func fail(context.Context) (consume.Output, error) { return consume.Output{}, errBoom }

// wantDecision compares the parts of a Decision that tests fix exactly;
// errors are checked by the caller.
func wantDecision(t *testing.T, got consume.Decision, action consume.Action, delay time.Duration, out *consume.Output, replayed bool) {
	t.Helper()
	if got.Action != action || got.Delay != delay || got.Replayed != replayed || !reflect.DeepEqual(got.Output, out) {
		t.Fatalf("decision = {%v %v replayed=%v output=%+v err=%v}, want {%v %v replayed=%v output=%+v}",
			got.Action, got.Delay, got.Replayed, got.Output, got.Err, action, delay, replayed, out)
	}
	if (got.Err == nil) != (action == consume.Ack) {
		t.Fatalf("decision %v with error %v", got.Action, got.Err)
	}
}

func wantKinds(t *testing.T, obs *recorder, want ...string) {
	t.Helper()
	if got := obs.kinds(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

// wantEffects checks the effects table for the transactional form, where
// the handler's writes commit or vanish with the record.
func wantEffects[TTx any](t *testing.T, b *bundle[TTx], f form[TTx], n int) {
	t.Helper()
	if f.name != "HandleTx" {
		n = 0
	}
	if got := b.effects(t); got != n {
		t.Fatalf("effects = %d, want %d", got, n)
	}
}

// A redelivery of a handled message is acknowledged without running the
// handler, with the first run's Output (result and messages to publish)
// given back equal, also to another process (a new ledger and consumer on
// the same database): a first run whose acknowledgement or publication was
// lost, its process killed after the commit, loses neither.
func TestRedelivery(t *testing.T) {
	eachForm(t, testRedelivery[*sql.Tx], testRedelivery[pgx.Tx])
}

func testRedelivery[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	var runs atomic.Int32
	d := f.run(b, b.c, order, &runs, ok)
	wantDecision(t, d, consume.Ack, 0, &shipped, false)
	wantKinds(t, b.obs, "claimed", "stored")

	// The adapter died before it published and acknowledged: the broker
	// redelivers, with another delivery count (not fingerprinted).
	again := order
	again.Metadata = map[string]string{"delivery": "2"}
	d = f.run(b, b.c, again, &runs, ok)
	wantDecision(t, d, consume.Ack, 0, &shipped, true)
	wantKinds(t, b.obs, "replayed")

	l2, err := ledger.New(b.d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	c2, err := consume.New(l2, consume.Options{Scope: "orders-sub"})
	if err != nil {
		t.Fatal(err)
	}
	d = f.run(b, c2, again, &runs, ok)
	wantDecision(t, d, consume.Ack, 0, &shipped, true)
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
	wantEffects(t, b, f, 1)

	// Another subscription is another scope: the message runs there once.
	other := b.consumer(t, consume.Options{Scope: "audit-sub"})
	d = f.run(b, other, again, &runs, func(context.Context) (consume.Output, error) { return consume.Output{}, nil })
	if f.name == "HandleTx" {
		// The effect's row exists already: the business table decides.
		if d.Action != consume.Nack || d.Err == nil {
			t.Fatalf("decision = %v %v, want a nack for the duplicate row", d.Action, d.Err)
		}
		return
	}
	wantDecision(t, d, consume.Ack, 0, &consume.Output{}, false)
}

// A handler error before any commit point releases the key: the message
// is nacked with the error unchanged after NackDelay, its writes vanish,
// and the redelivery runs it again.
func TestHandlerError(t *testing.T) {
	eachForm(t, testHandlerError[*sql.Tx], testHandlerError[pgx.Tx])
}

func testHandlerError[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	var runs atomic.Int32
	d := f.run(b, b.c, order, &runs, fail)
	wantDecision(t, d, consume.Nack, nackDelay, nil, false)
	if d.Err != errBoom {
		t.Fatalf("Err = %v, want the handler's error unchanged", d.Err)
	}
	wantKinds(t, b.obs, "claimed", "released")
	wantEffects(t, b, f, 0)

	d = f.run(b, b.c, order, &runs, ok)
	wantDecision(t, d, consume.Ack, 0, &shipped, false)
	if runs.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2", runs.Load())
	}
	wantEffects(t, b, f, 1)
}

// The same ID with another payload is never run: it goes to the
// dead-letter path with ReasonKeyReused.
func TestKeyReused(t *testing.T) {
	eachForm(t, testKeyReused[*sql.Tx], testKeyReused[pgx.Tx])
}

func testKeyReused[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	var runs atomic.Int32
	wantDecision(t, f.run(b, b.c, order, &runs, ok), consume.Ack, 0, &shipped, false)
	b.obs.kinds()

	reused := order
	reused.Payload = []byte(`{"order":43}`)
	d := f.run(b, b.c, reused, &runs, ok)
	wantDecision(t, d, consume.DeadLetter, 0, nil, false)
	var dl *consume.DeadLetterError
	if !errors.As(d.Err, &dl) || dl.Reason != consume.ReasonKeyReused || !errors.Is(d.Err, ledger.ErrKeyReused) || !errors.Is(d.Err, consume.ErrDeadLetter) {
		t.Fatalf("Err = %v, want a dead letter for a reused key", d.Err)
	}
	if got, want := d.Err.Error(), "consume: dead letter: key_reused: ledger: idempotency key reused with a different fingerprint"; got != want {
		t.Fatalf("Err = %q, want %q", got, want)
	}
	wantKinds(t, b.obs, "key_reused")
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
}

// A message whose handler still runs elsewhere (a lease held) is nacked
// with the rest of the lease, capped at NackDelay, and never run; once
// the first run is done, the redelivery replays it.
func TestInFlight(t *testing.T) {
	eachForm(t, testInFlight[*sql.Tx], testInFlight[pgx.Tx])
}

func testInFlight[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan consume.Decision)
	go func() {
		first <- b.c.Handle(b.ctx, order, func(ctx context.Context, m consume.Message) (consume.Output, error) {
			close(started)
			<-release
			return shipped, nil
		})
	}()
	<-started
	var runs atomic.Int32
	d := f.run(b, b.c, order, &runs, ok)
	wantDecision(t, d, consume.Nack, nackDelay, nil, false)
	var inFlight *ledger.InFlightError
	if !errors.As(d.Err, &inFlight) || inFlight.RetryAfter != time.Minute {
		t.Fatalf("Err = %v, want an *ledger.InFlightError with the whole lease (1m0s) left", d.Err)
	}
	close(release)
	wantDecision(t, <-first, consume.Ack, 0, &shipped, false)
	wantKinds(t, b.obs, "claimed", "in_flight", "stored")

	d = f.run(b, b.c, order, &runs, ok)
	wantDecision(t, d, consume.Ack, 0, &shipped, true)
	if runs.Load() != 0 {
		t.Fatalf("the duplicate's handler ran %d times, want 0", runs.Load())
	}
}

// Two transactional deliveries of one message at once: the second waits
// for the first's transaction and is answered from its record, never run.
func TestConcurrentTx(t *testing.T) {
	eachDriver(t, testConcurrentTx[*sql.Tx], testConcurrentTx[pgx.Tx])
}

func testConcurrentTx[TTx any](t *testing.T, b *bundle[TTx]) {
	f := forms[TTx]()[0]
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	first := make(chan consume.Decision)
	go func() {
		first <- f.run(b, b.c, order, &runs, func(context.Context) (consume.Output, error) {
			close(started)
			<-release
			return shipped, nil
		})
	}()
	<-started
	second := make(chan consume.Decision)
	go func() { second <- f.run(b, b.c, order, &runs, ok) }()
	time.Sleep(100 * time.Millisecond) // the second waits (for the row, or SQLite's lock)
	close(release)
	wantDecision(t, <-first, consume.Ack, 0, &shipped, false)
	wantDecision(t, <-second, consume.Ack, 0, &shipped, true)
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
	wantEffects(t, b, f, 1)
}

// Rules of the commit point (Handle): a failure after it is stored and
// dead-lettered, now and on every redelivery, without a second run; a
// panic after it too; a panic before it releases the key.
func TestCommitPoint(t *testing.T) {
	eachDriver(t, testCommitPoint[*sql.Tx], testCommitPoint[pgx.Tx])
}

func testCommitPoint[TTx any](t *testing.T, b *bundle[TTx]) {
	var runs atomic.Int32
	committedThenFailed := func(ctx context.Context, m consume.Message) (consume.Output, error) {
		runs.Add(1)
		if !consume.Commit(ctx) {
			t.Error("Commit reported no run")
		}
		return consume.Output{}, errBoom
	}
	d := b.c.Handle(b.ctx, order, committedThenFailed)
	wantDecision(t, d, consume.DeadLetter, 0, nil, false)
	var dl *consume.DeadLetterError
	var failed *consume.FailedError
	if !errors.As(d.Err, &dl) || dl.Reason != consume.ReasonFailed || !errors.As(d.Err, &failed) || failed.Message != "boom" || !errors.Is(d.Err, errBoom) {
		t.Fatalf("Err = %v, want a dead letter for a failure after the commit point, wrapping the handler's error", d.Err)
	}
	wantKinds(t, b.obs, "claimed", "committed", "stored")

	// One dead letter per operation: a copy is acknowledged, unrun.
	d = b.c.Handle(b.ctx, order, committedThenFailed)
	wantDecision(t, d, consume.Ack, 0, &consume.Output{}, true)
	wantKinds(t, b.obs, "replayed")
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}

	// Panics.
	cases := []struct {
		name, id string
		commit   bool
		then     consume.Action
	}{
		{"before the commit point: released, run again", "panic-1", false, consume.Ack},
		{"after the commit point: stored, dead-lettered", "panic-2", true, consume.DeadLetter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := consume.Message{ID: tc.id, Payload: []byte("x")}
			func() {
				defer func() {
					if r := recover(); r != "handler bug" {
						t.Fatalf("recovered %v, want the handler's panic", r)
					}
				}()
				b.c.Handle(b.ctx, msg, func(ctx context.Context, m consume.Message) (consume.Output, error) {
					if tc.commit {
						consume.Commit(ctx)
					}
					panic("handler bug")
				})
			}()
			d := b.c.Handle(b.ctx, msg, func(context.Context, consume.Message) (consume.Output, error) { return shipped, nil })
			if d.Action != tc.then {
				t.Fatalf("redelivery: %v (%v), want %v", d.Action, d.Err, tc.then)
			}
			if tc.commit && d.Err.Error() != "consume: dead letter: failed_after_commit_point: consume: the handler panicked after its commit point" {
				t.Fatalf("Err = %q", d.Err)
			}
		})
	}
	if consume.Commit(b.ctx) {
		t.Fatal("Commit outside a run reported one")
	}
}

// A run whose process vanished: before its commit point, the redelivery
// is nacked while the lease lasts and runs once it ran out; after its
// commit point, the redelivery is dead-lettered with
// ReasonOutcomeNotStored, or with Recover runs knowing it.
func TestVanished(t *testing.T) {
	eachDriver(t, testVanished[*sql.Tx], testVanished[pgx.Tx])
}

func testVanished[TTx any](t *testing.T, b *bundle[TTx]) {
	req := func(msg consume.Message) ledger.Request {
		return ledger.Request{Scope: "orders-sub", Key: msg.ID, Fingerprint: consume.Fingerprint(msg, nil)}
	}
	var runs atomic.Int32
	handler := func(ctx context.Context, m consume.Message) (consume.Output, error) {
		runs.Add(1)
		if at, ok := consume.Recovered(ctx); ok {
			return consume.Output{Result: []byte(at.Format(time.RFC3339Nano))}, nil
		}
		return shipped, nil
	}

	// Before the commit point.
	if _, err := b.l.Claim(b.ctx, req(order)); err != nil {
		t.Fatal(err)
	}
	d := b.c.Handle(b.ctx, order, handler)
	wantDecision(t, d, consume.Nack, nackDelay, nil, false)
	b.clock.Advance(time.Minute)
	d = b.c.Handle(b.ctx, order, handler)
	wantDecision(t, d, consume.Ack, 0, &shipped, false)

	// After it.
	late := consume.Message{ID: "msg-2", Payload: []byte("y")}
	c, err := b.l.Claim(b.ctx, req(late))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.l.Commit(b.ctx, c); err != nil {
		t.Fatal(err)
	}
	committedAt := b.clock.Now()
	b.clock.Advance(time.Minute)
	d = b.c.Handle(b.ctx, late, handler)
	wantDecision(t, d, consume.DeadLetter, 0, nil, false)
	var dl *consume.DeadLetterError
	if !errors.As(d.Err, &dl) || dl.Reason != consume.ReasonOutcomeNotStored || !errors.Is(d.Err, ledger.ErrCommitted) {
		t.Fatalf("Err = %v, want a dead letter for an outcome not stored", d.Err)
	}
	// One dead letter per operation: every later copy is acknowledged,
	// whichever form handles it, and nothing runs.
	for range 2 {
		d = b.c.Handle(b.ctx, late, handler)
		wantDecision(t, d, consume.Ack, 0, &consume.Output{}, true)
		d = b.c.HandleTx(b.ctx, late, func(context.Context, TTx, consume.Message) (consume.Output, error) {
			runs.Add(1)
			return shipped, nil
		})
		wantDecision(t, d, consume.Ack, 0, &consume.Output{}, true)
	}

	// With Recover, the run goes on knowing it.
	again := consume.Message{ID: "msg-3", Payload: []byte("z")}
	c, err = b.l.Claim(b.ctx, req(again))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.l.Commit(b.ctx, c); err != nil {
		t.Fatal(err)
	}
	committedAt = b.clock.Now()
	b.clock.Advance(time.Minute)
	d = b.consumer(t, consume.Options{Recover: true}).Handle(b.ctx, again, handler)
	wantDecision(t, d, consume.Ack, 0, &consume.Output{Result: []byte(committedAt.Format(time.RFC3339Nano))}, false)
	if runs.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2", runs.Load())
	}
}

// Events never hold the key or the scope: a handler error that quotes
// them reaches the Decision unchanged (the adapter's to log or not), and
// the observer with both blotted out.
func TestEventsHoldNoKey(t *testing.T) {
	eachForm(t, testEventsHoldNoKey[*sql.Tx], testEventsHoldNoKey[pgx.Tx])
}

func testEventsHoldNoKey[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	msg := consume.Message{ID: "k7secret", Payload: []byte("p")}
	var runs atomic.Int32
	d := f.run(b, b.c, msg, &runs, func(context.Context) (consume.Output, error) {
		return consume.Output{}, errors.New("payment k7secret of orders-sub declined")
	})
	if d.Action != consume.Nack || d.Err.Error() != "payment k7secret of orders-sub declined" {
		t.Fatalf("decision %v %v, want a nack with the handler's error unchanged", d.Action, d.Err)
	}
	b.obs.mu.Lock()
	defer b.obs.mu.Unlock()
	var released []string
	for _, e := range b.obs.events {
		if e.Err != nil {
			released = append(released, e.Kind.String()+": "+e.Err.Error())
		}
	}
	for _, r := range released {
		if strings.Contains(r, "k7secret") || strings.Contains(r, "orders-sub") {
			t.Fatalf("event %q holds the key or the scope", r)
		}
	}
	if f.name == "HandleTx" && (len(released) != 1 || released[0] != "released: payment [redacted] of [redacted] declined") {
		t.Fatalf("events with an error: %q, want the release", released)
	}
}

// The retry budget: a message whose handler keeps failing before its
// commit point is nacked until its MaxAttempts-th failed run, which sends
// it to the dead-letter path with ReasonMaxAttempts and the last error;
// every later copy is acknowledged without running (one dead letter per
// operation). A message with the same ID and another payload after a
// failure is another operation, with a budget of its own.
func TestRetryBudget(t *testing.T) {
	eachForm(t, testRetryBudget[*sql.Tx], testRetryBudget[pgx.Tx])
}

func testRetryBudget[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	c := b.consumer(t, consume.Options{MaxAttempts: 3})
	var runs atomic.Int32
	var got []consume.Action
	for range 2 {
		got = append(got, f.run(b, c, order, &runs, fail).Action)
	}
	d := f.run(b, c, order, &runs, fail)
	wantDecision(t, d, consume.DeadLetter, 0, nil, false)
	var dl *consume.DeadLetterError
	var attempts *consume.AttemptsError
	if !errors.As(d.Err, &dl) || dl.Reason != consume.ReasonMaxAttempts || !errors.As(d.Err, &attempts) ||
		attempts.Attempts != 3 || !errors.Is(d.Err, errBoom) {
		t.Fatalf("Err = %v, want a dead letter for 3 failed runs, wrapping the last error", d.Err)
	}
	if got, want := d.Err.Error(), "consume: dead letter: max_attempts: consume: the handler failed on 3 runs: boom"; got != want {
		t.Fatalf("Err = %q, want %q", got, want)
	}
	got = append(got, d.Action)
	for range 2 {
		d = f.run(b, c, order, &runs, ok)
		wantDecision(t, d, consume.Ack, 0, &consume.Output{}, true)
		got = append(got, d.Action)
	}
	if want := []consume.Action{consume.Nack, consume.Nack, consume.DeadLetter, consume.Ack, consume.Ack}; !reflect.DeepEqual(got, want) {
		t.Fatalf("decisions = %v, want %v", got, want)
	}
	if runs.Load() != 3 {
		t.Fatalf("handler ran %d times, want 3", runs.Load())
	}
	wantEffects(t, b, f, 0)

	// Two failures of one payload, then another payload under the same
	// ID: released records take any payload, and the count starts again.
	reused := consume.Message{ID: "msg-9", Payload: []byte("a")}
	for range 2 {
		if d := f.run(b, c, reused, &runs, fail); d.Action != consume.Nack {
			t.Fatalf("failure: %v (%v), want nack", d.Action, d.Err)
		}
	}
	other := consume.Message{ID: "msg-9", Payload: []byte("b")}
	if d := f.run(b, c, other, &runs, fail); d.Action != consume.Nack {
		t.Fatalf("another payload's first failure: %v (%v), want nack", d.Action, d.Err)
	}
	if d := f.run(b, c, other, &runs, ok); d.Action != consume.Ack || d.Replayed {
		t.Fatalf("another payload's second run: %v replayed %v (%v), want a first ack", d.Action, d.Replayed, d.Err)
	}
}

// A handler that panics before its commit point (Handle) spends the budget
// too: once MaxAttempts runs panicked, the next copy goes to the
// dead-letter path without running.
func TestRetryBudgetPanics(t *testing.T) {
	eachDriver(t, testRetryBudgetPanics[*sql.Tx], testRetryBudgetPanics[pgx.Tx])
}

func testRetryBudgetPanics[TTx any](t *testing.T, b *bundle[TTx]) {
	c := b.consumer(t, consume.Options{MaxAttempts: 2})
	var runs atomic.Int32
	for range 2 {
		func() {
			defer func() {
				if r := recover(); r != "handler bug" {
					t.Fatalf("recovered %v, want the handler's panic", r)
				}
			}()
			c.Handle(b.ctx, order, func(context.Context, consume.Message) (consume.Output, error) {
				runs.Add(1)
				panic("handler bug")
			})
		}()
	}
	d := c.Handle(b.ctx, order, func(context.Context, consume.Message) (consume.Output, error) {
		runs.Add(1)
		return shipped, nil
	})
	var attempts *consume.AttemptsError
	if d.Action != consume.DeadLetter || !errors.As(d.Err, &attempts) || attempts.Attempts != 2 || attempts.Err != nil {
		t.Fatalf("after 2 panics: %v (%v), want a dead letter for 2 failed runs", d.Action, d.Err)
	}
	d = c.Handle(b.ctx, order, func(context.Context, consume.Message) (consume.Output, error) { return shipped, nil })
	wantDecision(t, d, consume.Ack, 0, &consume.Output{}, true)
	if runs.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2", runs.Load())
	}
}

// A failure of the ledger's store never spends the budget: a run whose
// handler fails while the store cannot record the release (the record
// stays in flight until its lease runs out) is not counted, so a budget of
// 2 still gives the message two counted runs after it.
func TestRetryBudgetStoreDown(t *testing.T) {
	eachForm(t, testRetryBudgetStoreDown[*sql.Tx], testRetryBudgetStoreDown[pgx.Tx])
}

func testRetryBudgetStoreDown[TTx any](t *testing.T, b *bundle[TTx], f form[TTx]) {
	down := &downRelease[TTx]{Driver: b.d.Driver}
	l, err := ledger.New[TTx](down, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: "orders-sub", NackDelay: nackDelay, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	down.down.Store(true)
	if d := f.run(b, c, order, &runs, fail); d.Action != consume.Nack || !errors.Is(d.Err, errBoom) {
		t.Fatalf("failure with the store down: %v (%v), want nack with the handler's error", d.Action, d.Err)
	}
	down.down.Store(false)
	b.clock.Advance(time.Minute) // the unreleased record's lease runs out
	var got []consume.Action
	for range 2 {
		got = append(got, f.run(b, c, order, &runs, fail).Action)
	}
	if want := []consume.Action{consume.Nack, consume.DeadLetter}; !reflect.DeepEqual(got, want) {
		t.Fatalf("decisions after the outage = %v, want %v", got, want)
	}
	if runs.Load() != 3 {
		t.Fatalf("handler ran %d times, want 3", runs.Load())
	}
}

// downRelease is a driver whose pool's Release fails while down is set,
// as a store that cannot be reached would.
type downRelease[TTx any] struct {
	driver.Driver[TTx]
	down atomic.Bool
}

func (d *downRelease[TTx]) DB() driver.Executor { return downExecutor{d.Driver.DB(), &d.down} }

type downExecutor struct {
	driver.Executor
	down *atomic.Bool
}

func (e downExecutor) Release(ctx context.Context, p driver.ReleaseParams) (bool, error) {
	if e.down.Load() {
		return false, errors.New("connection refused")
	}
	return e.Executor.Release(ctx, p)
}
