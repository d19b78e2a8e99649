package consume_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// A message without a usable key is never run: it is dead-lettered with
// ReasonInvalidKey, and no event quotes the key.
func TestInvalidKey(t *testing.T) {
	testdb.Each(t, testInvalidKey[*sql.Tx], testInvalidKey[pgx.Tx])
}

func testInvalidKey[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	b := setupOn(t, d, consume.Options{})
	errNoOrder := errors.New("no order-id header")
	byOrder := b.consumer(t, consume.Options{Key: func(m consume.Message) (string, error) {
		id, ok := m.Metadata["order-id"]
		if !ok {
			return "", errNoOrder
		}
		return id, nil
	}})
	cases := []struct {
		name string
		c    *consume.Consumer[TTx]
		msg  consume.Message
		want string
	}{
		{"no ID", b.c, consume.Message{Payload: []byte("x")}, "consume: dead letter: invalid_key: consume: the message has no ID"},
		{"Key fails", byOrder, consume.Message{ID: "m", Payload: []byte("x")}, "consume: dead letter: invalid_key: consume: key: no order-id header"},
		{"control byte", byOrder, consume.Message{ID: "m", Metadata: map[string]string{"order-id": "secret\n"}},
			"consume: dead letter: invalid_key: ledger: invalid request: key byte 6 is not printable ASCII"},
		{"too long", b.c, consume.Message{ID: strings.Repeat("k", 256)},
			"consume: dead letter: invalid_key: ledger: invalid request: key is 256 bytes, over the maximum of 255"},
	}
	var runs atomic.Int32
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range forms[TTx]() {
				d := f.run(b, tc.c, tc.msg, &runs, ok)
				if d.Action != consume.DeadLetter || d.Err.Error() != tc.want || !errors.Is(d.Err, consume.ErrDeadLetter) {
					t.Fatalf("%s: %v %q, want dead letter %q", f.name, d.Action, d.Err, tc.want)
				}
			}
		})
	}
	if runs.Load() != 0 {
		t.Fatalf("handler ran %d times, want 0", runs.Load())
	}
	wantKinds(t, b.obs)
}

// Options.Key derives the key from a business ID: two messages with
// different IDs for the same order run once.
func TestDerivedKey(t *testing.T) {
	testdb.Each(t, testDerivedKey[*sql.Tx], testDerivedKey[pgx.Tx])
}

func testDerivedKey[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	b := setupOn(t, d, consume.Options{})
	c := b.consumer(t, consume.Options{Key: func(m consume.Message) (string, error) {
		return hash.DeriveKey("ship", m.Metadata["order-id"]), nil
	}})
	var runs atomic.Int32
	h := func(ctx context.Context, m consume.Message) (consume.Output, error) {
		runs.Add(1)
		return shipped, nil
	}
	first := consume.Message{ID: "a", Payload: []byte("ship 42"), Metadata: map[string]string{"order-id": "42"}}
	second := consume.Message{ID: "b", Payload: []byte("ship 42"), Metadata: map[string]string{"order-id": "42"}}
	wantDecision(t, c.Handle(b.ctx, first, h), consume.Ack, 0, &shipped, false)
	wantDecision(t, c.Handle(b.ctx, second, h), consume.Ack, 0, &shipped, true)
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
}

// A key first used by another kind of operation (a Mutate) is not
// replayed as a message: dead-lettered with ReasonStoredOutcome.
func TestStoredOutcomeOfAnotherKind(t *testing.T) {
	testdb.Each(t, testOtherKind[*sql.Tx], testOtherKind[pgx.Tx])
}

func testOtherKind[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	b := setupOn(t, d, consume.Options{})
	tx := d.Begin(t)
	req := ledger.Request{Scope: "orders-sub", Key: order.ID, Fingerprint: consume.Fingerprint(order, nil)}
	if _, err := ledger.Mutate(b.ctx, b.l, tx, req, func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	d.Commit(t, tx)
	var runs atomic.Int32
	for _, f := range forms[TTx]() {
		got := f.run(b, b.c, order, &runs, ok)
		var ke *ledger.KindError
		if got.Action != consume.DeadLetter || !errors.As(got.Err, &ke) || ke.Kind != ledger.KindValue || ke.Want != consume.Kind {
			t.Fatalf("%s: %v %v, want a dead letter for a value record", f.name, got.Action, got.Err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	msg := func(id, payload string, md map[string]string) consume.Message {
		return consume.Message{ID: id, Payload: []byte(payload), Metadata: md}
	}
	base := msg("1", "p", map[string]string{"a": "x", "b": "y"})
	cases := []struct {
		name   string
		x, y   consume.Message
		names  []string // for both; yNames, when set, for y
		yNames []string
		same   bool
	}{
		{"another ID", base, msg("2", "p", map[string]string{"a": "x", "b": "y"}), []string{"a"}, nil, true},
		{"metadata not named", base, msg("1", "p", map[string]string{"a": "x", "b": "z"}), []string{"a"}, nil, true},
		{"names repeated", base, base, []string{"a"}, []string{"a", "a"}, true},
		{"another payload", base, msg("1", "q", map[string]string{"a": "x", "b": "y"}), []string{"a"}, nil, false},
		{"named metadata differs", base, msg("1", "p", map[string]string{"a": "w", "b": "y"}), []string{"a"}, nil, false},
		{"named metadata missing, not empty", msg("1", "p", map[string]string{"b": ""}), msg("1", "p", nil), []string{"b"}, nil, false},
		{"boundary moved", msg("1", "pa", nil), msg("1", "p", map[string]string{"a": ""}), []string{"a"}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yNames := tc.names
			if tc.yNames != nil {
				yNames = tc.yNames
			}
			x, y := consume.Fingerprint(tc.x, tc.names), consume.Fingerprint(tc.y, yNames)
			if (x == y) != tc.same {
				t.Fatalf("fingerprints equal = %v, want %v", x == y, tc.same)
			}
		})
	}
	// Fixed, so that records of one version of the library are answered
	// by the next. The digest was computed apart from this code, with
	// Python's hashlib: sha256(tag + len8(b"p") + b"p" + len8(b"a") + b"a"
	// + len8(b"x") + b"x" + b"\x01").
	if got, want := consume.Fingerprint(base, []string{"a"}).String(), "cc8579747db8cc5cb086e7275712c8cf384388db3e5119167b452956108d799e"; got != want {
		t.Errorf("Fingerprint = %s, want %s", got, want)
	}
}

func TestNew(t *testing.T) {
	d := testdb.SQLiteDB(t, sqlite.Options{})
	l, err := ledger.New(d.Driver, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		l    *ledger.Ledger[*sql.Tx]
		opts consume.Options
		want string
	}{
		{"nil ledger", nil, consume.Options{}, "consume: invalid options: nil ledger"},
		{"bad scope", l, consume.Options{Scope: "a\nb"}, "consume: invalid options: scope: ledger: invalid request: scope byte 1 is a control character"},
		{"negative delay", l, consume.Options{NackDelay: -time.Second}, "consume: invalid options: NackDelay -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := consume.New(tc.l, tc.opts)
			if !errors.Is(err, consume.ErrInvalidOptions) || err.Error() != tc.want {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// A delivery whose context has ended (the adapter shuts down) is nacked
// at once, with no event: nothing failed.
func TestCancelled(t *testing.T) {
	testdb.Each(t, testCancelled[*sql.Tx], testCancelled[pgx.Tx])
}

func testCancelled[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	b := setupOn(t, d, consume.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.ctx = ctx
	var runs atomic.Int32
	for _, f := range forms[TTx]() {
		got := f.run(b, b.c, order, &runs, ok)
		if got.Action != consume.Nack || got.Delay != 0 || !errors.Is(got.Err, context.Canceled) {
			t.Fatalf("%s: %v after %v (%v), want a nack at once with context.Canceled", f.name, got.Action, got.Delay, got.Err)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("handler ran %d times, want 0", runs.Load())
	}
	wantKinds(t, b.obs)
}
