package idemgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TestStep: a first call that recorded its charge as a step, marked its
// commit point and vanished (made by hand here, as a process killed there
// leaves it) is resumed by the retry once its lease runs out, instead of
// DATA_LOSS: the charge is not made again, the receipt is, and the call
// answers OK. On every driver.
func TestStep(t *testing.T) {
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
		first, err := l.Claim(ctx, ledger.Request{Scope: "t1", Key: "k", Fingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.(lifecycle.StepLedger).RecordStep(ctx, first, "charge", []byte("ch_1")); err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx, first); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Minute)
		clock.Store(&later)

		var charges, receipts atomic.Int64
		p := &payments{handle: func(ctx context.Context, _ string, _ *structpb.Struct) (*structpb.Struct, error) {
			charge, err := idemgrpc.Step(ctx, "charge", func(context.Context, string) ([]byte, error) {
				charges.Add(1)
				return []byte("ch_2"), nil
			})
			if err != nil {
				return nil, err
			}
			if _, err := idemgrpc.Step(ctx, "receipt", func(context.Context, string) ([]byte, error) {
				receipts.Add(1)
				return nil, nil
			}); err != nil {
				return nil, err
			}
			return structpb.NewStruct(map[string]any{"id": string(charge)})
		}}
		conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
			idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope})})
		r := invoke(t, conn, withKey(ctx, "k"), methodCharge, in)
		if r.status.Code() != codes.OK {
			t.Fatalf("retry of a committed, vanished call with a step: %v; want OK", r.status)
		}
		if charges.Load() != 0 || receipts.Load() != 1 {
			t.Errorf("charges %d, receipts %d; want 0 (recorded) and 1", charges.Load(), receipts.Load())
		}
	})
}
