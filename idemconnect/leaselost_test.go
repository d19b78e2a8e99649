package idemconnect_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemconnect"
	"github.com/idemledger/idemledger/ledger"
)

// takenOver is a ledger whose extensions find the lease taken over, as
// after a retry's takeover, once armed (by the handler: a slow claim's
// renewal before the handler runs goes through).
type takenOver struct {
	idemconnect.Ledger
	armed *atomic.Bool
}

func (t takenOver) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	if !t.armed.Load() {
		return t.Ledger.Extend(ctx, c)
	}
	return time.Time{}, ledger.ErrLeaseLost
}

// TestLeaseLostCancelsHandler: when an extension finds the lease taken
// over, the procedure's context is cancelled with ledger.ErrLeaseLost as
// its cause, before it makes its effect, and Commit returns false.
func TestLeaseLostCancelsHandler(t *testing.T) {
	eachDriver(t, ledger.Options{Lease: 300 * time.Millisecond}, func(t *testing.T, l idemconnect.Ledger) {
		type seen struct {
			cause     error
			committed bool
		}
		got := make(chan seen, 1)
		var armed atomic.Bool
		p := &payments{handle: func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
			armed.Store(true)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				return structpb.NewStruct(map[string]any{"charge": "made after the lease was gone"})
			}
			got <- seen{cause: context.Cause(ctx), committed: idemconnect.Commit(ctx)}
			return nil, ctx.Err()
		}}
		c := serve(t, p, takenOver{l, &armed}, idemconnect.Options{}, nil)
		call(context.Background(), c, "k", mapMessage(t, 1))
		var s seen
		select {
		case s = <-got:
		default:
			t.Fatal("the handler's context was never cancelled")
		}
		if !errors.Is(s.cause, ledger.ErrLeaseLost) {
			t.Fatalf("procedure's context ended with cause %v, want ledger.ErrLeaseLost", s.cause)
		}
		if s.committed {
			t.Error("Commit returned true after the lease was lost")
		}
	})
}
