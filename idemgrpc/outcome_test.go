package idemgrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
)

// TestOutcomeTooLarge: an answer over MaxOutcomeBytes reaches the first
// caller whole; a marker is stored, and the retry gets DATA_LOSS instead
// of a second run.
func TestOutcomeTooLarge(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		big := strings.Repeat("x", 1000)
		p := &payments{handle: func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return structpb.NewStruct(map[string]any{"receipt": big})
		}}
		conn := protected(t, engine, p, idemgrpc.ServerOptions{MaxOutcomeBytes: 100})
		ctx := withKey(context.Background(), "k")
		in := mustStruct(t, map[string]any{"amount": 1})
		first := invoke(t, conn, ctx, methodCharge, in)
		if first.status.Code() != codes.OK || first.resp.Fields["receipt"].GetStringValue() != big {
			t.Fatalf("first call: %v, want the whole answer", first.status)
		}
		second := invoke(t, conn, ctx, methodCharge, in)
		if second.status.Code() != codes.DataLoss || reasonOf(second.status.Err()) != idemgrpc.ReasonOutcomeTooLarge || !second.replayed {
			t.Errorf("retry: %v (reason %q, replayed %v), want a replayed DATA_LOSS %s",
				second.status, reasonOf(second.status.Err()), second.replayed, idemgrpc.ReasonOutcomeTooLarge)
		}
		if got := p.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
	})
}

// TestStoredOutcomeNotGRPC: a completed record that is not a gRPC answer
// of this package (stored by idemhttp, say), or whose response type the
// server cannot resolve, is answered INTERNAL, never run again.
func TestStoredOutcomeNotGRPC(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		t.Run("http outcome", func(t *testing.T) {
			l, _ := newLedger(t, engine, 0)
			in := mustStruct(t, map[string]any{"amount": 1})
			fp, err := idemgrpc.Fingerprint(methodCharge, in)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c, err := l.Claim(ctx, ledger.Request{Scope: "t1", Key: "k", Fingerprint: fp})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Complete(ctx, c, ledger.Outcome{Status: 200, Body: []byte("{}")}); err != nil {
				t.Fatal(err)
			}
			p := &payments{handle: charged}
			conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
				idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope})})
			r := invoke(t, conn, withKey(ctx, "k"), methodCharge, in)
			if r.status.Code() != codes.Internal || reasonOf(r.status.Err()) != idemgrpc.ReasonStoredOutcome || p.runs.Load() != 0 {
				t.Errorf("got %v (reason %q), %d runs; want INTERNAL %s and no run", r.status, reasonOf(r.status.Err()), p.runs.Load(), idemgrpc.ReasonStoredOutcome)
			}
		})
		t.Run("unknown response type", func(t *testing.T) {
			p := &payments{handle: charged}
			conn := protected(t, engine, p, idemgrpc.ServerOptions{Types: new(protoregistry.Types)})
			ctx := withKey(context.Background(), "k")
			in := mustStruct(t, map[string]any{"amount": 1})
			invoke(t, conn, ctx, methodCharge, in)
			r := invoke(t, conn, ctx, methodCharge, in)
			if r.status.Code() != codes.Internal || reasonOf(r.status.Err()) != idemgrpc.ReasonStoredOutcome || p.runs.Load() != 1 {
				t.Errorf("got %v (reason %q), %d runs; want INTERNAL %s and one run", r.status, reasonOf(r.status.Err()), p.runs.Load(), idemgrpc.ReasonStoredOutcome)
			}
		})
	})
}

// extendCounter counts the heartbeat's extensions.
type extendCounter struct {
	idemgrpc.Ledger
	extended chan struct{}
}

func (e extendCounter) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	until, err := e.Ledger.Extend(ctx, c)
	if err == nil {
		select {
		case e.extended <- struct{}{}:
		default: // nobody counts any more
		}
	}
	return until, err
}

// TestHeartbeat: a handler slower than the lease keeps its key, since the
// lease is extended while it runs: a duplicate after more than a whole
// lease is still refused as in flight, and the handler runs once.
func TestHeartbeat(t *testing.T) {
	const lease = 300 * time.Millisecond
	eachEngine(t, func(t *testing.T, engine string) {
		l, _ := newLedger(t, engine, lease)
		counter := extendCounter{Ledger: l, extended: make(chan struct{}, 16)}
		dup := make(chan result)
		var conn *grpc.ClientConn
		in := mustStruct(t, map[string]any{"amount": 1})
		ctx := withKey(context.Background(), "k")
		p := &payments{handle: func(hctx context.Context, m string, req *structpb.Struct) (*structpb.Struct, error) {
			// Four extensions, a third of the lease apart, outlast the
			// lease taken at the claim.
			for range 4 {
				<-counter.extended
			}
			go func() { dup <- invoke(t, conn, ctx, methodCharge, in) }()
			d := <-dup
			if d.status.Code() != codes.Unavailable || reasonOf(d.status.Err()) != idemgrpc.ReasonInFlight {
				t.Errorf("duplicate after the lease: %v, want UNAVAILABLE %s", d.status, idemgrpc.ReasonInFlight)
			}
			return charged(hctx, m, req)
		}}
		conn = serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
			idemgrpc.UnaryServerInterceptor(counter, idemgrpc.ServerOptions{Scope: tenantScope})})
		if r := invoke(t, conn, ctx, methodCharge, in); r.status.Code() != codes.OK {
			t.Fatal(r.status)
		}
		if got := p.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
	})
}
