package idemgrpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
)

// takenOver is a ledger whose extensions find the lease taken over, as
// after a retry's takeover, once armed (by the handler: a slow claim's
// renewal before the handler runs goes through).
type takenOver struct {
	idemgrpc.Ledger
	armed *atomic.Bool
}

func (t takenOver) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	if !t.armed.Load() {
		return t.Ledger.Extend(ctx, c)
	}
	return time.Time{}, ledger.ErrLeaseLost
}

// TestLeaseLostCancelsHandler: when an extension finds the lease taken
// over, the handler's context is cancelled with ledger.ErrLeaseLost as its
// cause, before the handler makes its effect, and Commit returns false.
func TestLeaseLostCancelsHandler(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		l, _ := newLedger(t, engine, 300*time.Millisecond)
		type seen struct {
			cause     error
			committed bool
		}
		got := make(chan seen, 1)
		var armed atomic.Bool
		p := &payments{handle: func(hctx context.Context, m string, req *structpb.Struct) (*structpb.Struct, error) {
			armed.Store(true)
			select {
			case <-hctx.Done():
			case <-time.After(10 * time.Second):
				return charged(hctx, m, req) // the effect, made after the lease was gone
			}
			got <- seen{cause: context.Cause(hctx), committed: idemgrpc.Commit(hctx)}
			return nil, hctx.Err()
		}}
		conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
			idemgrpc.UnaryServerInterceptor(takenOver{l, &armed}, idemgrpc.ServerOptions{Scope: tenantScope})})
		invoke(t, conn, withKey(context.Background(), "k"), methodCharge, mustStruct(t, map[string]any{"amount": 1}))
		var s seen
		select {
		case s = <-got:
		default:
			t.Fatal("the handler's context was never cancelled")
		}
		if !errors.Is(s.cause, ledger.ErrLeaseLost) {
			t.Fatalf("handler's context ended with cause %v, want ledger.ErrLeaseLost", s.cause)
		}
		if s.committed {
			t.Error("Commit returned true after the lease was lost")
		}
	})
}
