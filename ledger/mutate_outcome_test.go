package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// TestMutateOutcome: MutateOutcome stores fn's Outcome as lease mode's
// Complete does, so that records of the two modes replay in each other,
// and keeps Mutate's rollback of a failing fn.
func TestMutateOutcome(t *testing.T) {
	eachDriver(t, testMutateOutcome[*sql.Tx], testMutateOutcome[pgx.Tx])
}

func testMutateOutcome[TTx any](t *testing.T, b *bundle[TTx]) {
	out := ledger.Outcome{Status: 201, Header: map[string][]string{"Location": {"/orders/1"}, "Vary": {"B", "A"}}, Body: []byte(`{"id":1}`)}
	runs := 0
	fn := func(context.Context) (ledger.Outcome, error) { runs++; return out, nil }
	mutate := func(key string) ledger.Result[ledger.Outcome] {
		t.Helper()
		var res ledger.Result[ledger.Outcome]
		b.inTx(t, func(tx TTx) {
			var err error
			if res, err = ledger.MutateOutcome(b.ctx, b.l, tx, req(key, "p"), fn); err != nil {
				t.Fatal(err)
			}
		})
		return res
	}

	if res := mutate("k"); res.Replayed || res.Fence != 1 || !reflect.DeepEqual(res.Value, out) || runs != 1 {
		t.Fatalf("first execution = %+v, %d runs", res, runs)
	}
	r, err := b.l.Get(b.ctx, "tenant-1", "k")
	if err != nil || r.State != ledger.StateCompleted || !reflect.DeepEqual(r.Outcome, out) {
		t.Fatalf("stored record = %+v, %v; want the outcome as it is", r, err)
	}
	c, err := b.l.Claim(b.ctx, req("k", "p"))
	if err != nil || !c.Replayed() || !reflect.DeepEqual(c.Replay.Outcome, out) {
		t.Fatalf("lease-mode claim of a MutateOutcome record = %+v, %v; want its replay", c, err)
	}
	if res := mutate("k"); !res.Replayed || !reflect.DeepEqual(res.Value, out) || runs != 1 {
		t.Fatalf("replay = %+v, %d runs", res, runs)
	}

	// A record completed in lease mode replays through MutateOutcome.
	lease, err := b.l.Claim(b.ctx, req("lease", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.l.Complete(b.ctx, lease, out); err != nil {
		t.Fatal(err)
	}
	if res := mutate("lease"); !res.Replayed || !reflect.DeepEqual(res.Value, out) || runs != 1 {
		t.Fatalf("MutateOutcome of a lease-mode record = %+v, %d runs; want its replay", res, runs)
	}

	// fn's error rolls the claim back.
	errNo := errors.New("no")
	b.inTx(t, func(tx TTx) {
		_, err := ledger.MutateOutcome(b.ctx, b.l, tx, req("fails", "p"), func(context.Context) (ledger.Outcome, error) {
			return ledger.Outcome{}, errNo
		})
		if err != errNo {
			t.Fatalf("MutateOutcome with a failing fn = %v, want fn's error", err)
		}
	})
	if _, err := b.l.Get(b.ctx, "tenant-1", "fails"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("record after a failing fn: %v, want ErrNotFound", err)
	}
}

func TestMutateOutcomeNilArguments(t *testing.T) {
	b := setupOn(t, testdb.SQLiteDB(t, sqlite.Options{}))
	fn := func(context.Context) (ledger.Outcome, error) { return ledger.Outcome{}, nil }
	tx, err := b.l.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.l.Driver().Rollback(b.ctx, tx)
	for _, tt := range []struct {
		name string
		ctx  context.Context
		l    *ledger.Ledger[*sql.Tx]
		tx   *sql.Tx
		fn   func(context.Context) (ledger.Outcome, error)
		want string
	}{
		{"nil context", nil, b.l, tx, fn, "ledger: invalid request: nil context"},
		{"nil ledger", b.ctx, nil, tx, fn, "ledger: invalid request: nil ledger"},
		{"nil transaction", b.ctx, b.l, nil, fn, "ledger: invalid request: nil transaction"},
		{"nil function", b.ctx, b.l, tx, nil, "ledger: invalid request: nil function"},
	} {
		_, err := ledger.MutateOutcome(tt.ctx, tt.l, tt.tx, req("k", "p"), tt.fn)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ledger.ErrInvalidRequest) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
