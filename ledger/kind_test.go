package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// TestCompleteKind: Outcome.Kind is stored and read back as written, and a
// kind that is not printable ASCII, or too long, is refused before anything
// is stored: the claim stays in flight and may still complete.
func TestCompleteKind(t *testing.T) {
	eachDriver(t, testCompleteKind[*sql.Tx], testCompleteKind[pgx.Tx])
}

func testCompleteKind[TTx any](t *testing.T, b *bundle[TTx]) {
	refused := []struct{ kind, err string }{
		{strings.Repeat("k", 65), `ledger: invalid request: outcome kind is 65 bytes, longer than 64`},
		{"http not_stored", `ledger: invalid request: outcome kind "http not_stored" holds byte 0x20 at offset 4; want printable ASCII without spaces`},
		{"ok\x7f", `ledger: invalid request: outcome kind "ok\x7f" holds byte 0x7f at offset 2; want printable ASCII without spaces`},
		{"caf\xc3\xa9", `ledger: invalid request: outcome kind "café" holds byte 0xc3 at offset 3; want printable ASCII without spaces`},
	}
	c := b.claim(t, req("k", "p"))
	for _, r := range refused {
		err := b.l.Complete(b.ctx, c, ledger.Outcome{Kind: r.kind, Status: 200})
		if !errors.Is(err, ledger.ErrInvalidRequest) || err.Error() != r.err {
			t.Errorf("Complete with kind %q = %v\nwant %s", r.kind, err, r.err)
		}
	}
	if got := b.get(t, "k"); got.State != ledger.StateInFlight {
		t.Fatalf("after refused kinds the record is %v, want in flight", got.State)
	}
	longest := strings.Repeat("~", ledger.MaxKindLength)
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Kind: longest, Status: 200}); err != nil {
		t.Fatal(err)
	}
	if got := b.get(t, "k").Outcome; got.Kind != longest || got.Status != 200 {
		t.Errorf("stored outcome %+v, want kind %q, status 200", got, longest)
	}
	// A takeover after expiry clears the kind with the rest of the outcome.
	b.clock.Advance(2 * b.l.TTL())
	c = b.claim(t, req("k", "p"))
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 204}); err != nil {
		t.Fatal(err)
	}
	if got := b.get(t, "k").Outcome; got.Kind != "" || got.Status != 204 {
		t.Errorf("outcome after the takeover %+v, want no kind, status 204", got)
	}
}

// TestMutateReplaysOnlyValues: Mutate replays only what it stores (kind
// "value", or a record without a kind and status 0, as Mutate stored before
// schema version 3); a key first used by another kind of operation is
// refused with a *KindError and the function never runs.
func TestMutateReplaysOnlyValues(t *testing.T) {
	eachDriver(t, testMutateReplaysOnlyValues[*sql.Tx], testMutateReplaysOnlyValues[pgx.Tx])
}

func testMutateReplaysOnlyValues[TTx any](t *testing.T, b *bundle[TTx]) {
	tests := []struct {
		name   string
		stored ledger.Outcome
		want   order
		err    string
	}{
		{"value", ledger.Outcome{Kind: "value", Body: []byte(`{"id":9,"item":"kept"}`)}, order{ID: 9, Item: "kept"}, ""},
		{"before kinds", ledger.Outcome{Body: []byte(`{"id":8,"item":"old"}`)}, order{ID: 8, Item: "old"}, ""},
		{"http", ledger.Outcome{Kind: "http", Status: 201, Body: []byte(`{"id":7}`)}, order{},
			`ledger: mutate: stored outcome is of kind "http", not "value": the key was used by another kind of operation`},
		{"status without kind", ledger.Outcome{Status: 200, Body: []byte(`{"id":6}`)}, order{},
			`ledger: mutate: stored outcome is of kind "", not "value": the key was used by another kind of operation`},
	}
	for _, tt := range tests {
		c := b.claim(t, req(tt.name, "p"))
		if err := b.l.Complete(b.ctx, c, tt.stored); err != nil {
			t.Fatal(err)
		}
		b.inTx(t, func(tx TTx) {
			res, err := ledger.Mutate(b.ctx, b.l, tx, req(tt.name, "p"), func(context.Context) (order, error) {
				t.Errorf("%s: fn ran", tt.name)
				return order{}, nil
			})
			if tt.err != "" {
				var ke *ledger.KindError
				if err == nil || err.Error() != tt.err || !errors.As(err, &ke) || ke.Want != "value" || ke.Kind != tt.stored.Kind {
					t.Errorf("%s: Mutate = %+v, %v\nwant %s", tt.name, res, err, tt.err)
				}
				return
			}
			if err != nil || res != (ledger.Result[order]{Value: tt.want, Replayed: true, Fence: 1}) {
				t.Errorf("%s: Mutate = %+v, %v; want a replay of %+v", tt.name, res, err, tt.want)
			}
		})
	}
}
