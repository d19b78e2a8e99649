package idemgrpc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
)

// TestCommittedThenGone: a first call that marked its commit point and
// vanished (its claim and mark are made by hand here, never completed, as
// a process killed after Commit leaves them) is answered DATA_LOSS with
// IDEMPOTENCY_OUTCOME_NOT_STORED once its lease runs out, and the handler
// does not run; with ServerOptions.Recover it runs, and Recovered tells
// it when the earlier call committed. On every driver.
func TestCommittedThenGone(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var clock atomic.Pointer[time.Time]
		clock.Store(&now)
		l, _, _ := newStore(t, engine, ledger.Options{Lease: time.Minute, Now: func() time.Time { return *clock.Load() }})
		ctx := context.Background()
		in := mustStruct(t, map[string]any{"amount": 5})
		fp, err := idemgrpc.Fingerprint(methodCharge, in)
		if err != nil {
			t.Fatal(err)
		}
		var recovered []time.Time
		p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
			at, ok := idemgrpc.Recovered(ctx)
			if ok {
				recovered = append(recovered, at)
			}
			return charged(ctx, m, in)
		}}
		var markedAt time.Time // of the recovered call's mark
		for _, recover := range []bool{false, true} {
			key := fmt.Sprintf("gone-%v", recover)
			markedAt = *clock.Load()
			first, err := l.Claim(ctx, ledger.Request{Scope: "t1", Key: key, Fingerprint: fp})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Commit(ctx, first); err != nil {
				t.Fatal(err)
			}
			later := clock.Load().Add(2 * time.Minute)
			clock.Store(&later)

			conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
				idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, Recover: recover})})
			r := invoke(t, conn, withKey(ctx, key), methodCharge, in)
			switch {
			case !recover && (r.status.Code() != codes.DataLoss || reasonOf(r.status.Err()) != idemgrpc.ReasonOutcomeNotStored):
				t.Errorf("retry of a committed, vanished call: %v (%s); want DATA_LOSS %s", r.status, reasonOf(r.status.Err()), idemgrpc.ReasonOutcomeNotStored)
			case recover && r.status.Code() != codes.OK:
				t.Errorf("recovery: %v; want the handler's answer", r.status)
			}
		}
		if n := p.runs.Load(); n != 1 || len(recovered) != 1 || !recovered[0].Equal(markedAt) {
			t.Errorf("handler runs %d, recovered %v; want one run, the recovery, knowing the mark of %v", n, recovered, markedAt)
		}
	})
}
