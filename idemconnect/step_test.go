package idemconnect_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemconnect"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TestStep: a first call that recorded its charge as a step, marked its
// commit point and vanished is resumed by the retry once its lease runs
// out, instead of data_loss: the charge is not made again, the receipt
// is, and the procedure answers. Every driver.
func TestStep(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	eachDriver(t, ledger.Options{Lease: time.Minute, Now: clock}, func(t *testing.T, l idemconnect.Ledger) {
		ctx := context.Background()
		var charges, receipts atomic.Int64
		p := &payments{handle: func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
			charge, err := idemconnect.Step(ctx, "charge", func(context.Context, string) ([]byte, error) {
				charges.Add(1)
				return []byte("ch_2"), nil
			})
			if err != nil {
				return nil, err
			}
			if _, err := idemconnect.Step(ctx, "receipt", func(context.Context, string) ([]byte, error) {
				receipts.Add(1)
				return nil, nil
			}); err != nil {
				return nil, err
			}
			return structpb.NewStruct(map[string]any{"charge": string(charge)})
		}}
		msg := mapMessage(t, 3)
		first, err := l.Claim(ctx, ledger.Request{Scope: "tenant-1", Key: "k", Fingerprint: fingerprint(t, msg)})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.(lifecycle.StepLedger).RecordStep(ctx, first, "charge", []byte("ch_1")); err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx, first); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		c := serve(t, p, l, idemconnect.Options{}, nil)
		if got := call(ctx, c, "k", msg); got.err != nil || got.charge != "ch_1" {
			t.Errorf("retry of a committed, vanished call with a step: %+v; want the charge recorded, ch_1", got)
		}
		if charges.Load() != 0 || receipts.Load() != 1 {
			t.Errorf("charges %d, receipts %d; want 0 (recorded) and 1", charges.Load(), receipts.Load())
		}
	})
}
