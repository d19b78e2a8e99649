package idemconnect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemconnect"
	"github.com/idemledger/idemledger/ledger"
)

// TestReplayEveryProtocol: on every driver and each of the three
// protocols, a call with ten map entries runs once, and its retry, sent
// anew (other bytes on the wire), gets the same response marked as
// replayed; an error answer is replayed with its code, message and
// details; another message under the key is refused failed_precondition.
func TestReplayEveryProtocol(t *testing.T) {
	eachDriver(t, ledger.Options{}, func(t *testing.T, l idemconnect.Ledger) {
		for _, proto := range protocols {
			t.Run(proto.name, func(t *testing.T) {
				p := &payments{}
				c := serve(t, p, l, idemconnect.Options{}, proto.opt)
				ctx := context.Background()
				key := "order-" + proto.name
				steps := []struct {
					msg  *structpb.Struct
					want result
					runs int64
				}{
					{mapMessage(t, 5), result{charge: "ch_1"}, 1},
					{mapMessage(t, 5), result{charge: "ch_1", replayed: "true"}, 1},
					{mapMessage(t, 5), result{charge: "ch_1", replayed: "true"}, 1},
					{mapMessage(t, 6), result{code: connect.CodeFailedPrecondition}, 1},
				}
				for i, s := range steps {
					got := call(ctx, c, key, s.msg)
					got.err = nil
					if got != s.want || p.runs.Load() != s.runs {
						t.Errorf("step %d: %+v after %d runs; want %+v after %d", i+1, got, p.runs.Load(), s.want, s.runs)
					}
				}

				// A stored error: invalid_argument with a detail.
				p2 := &payments{handle: func(context.Context, *structpb.Struct) (*structpb.Struct, error) {
					ce := connect.NewError(connect.CodeInvalidArgument, errors.New("amount must be positive"))
					d, _ := connect.NewErrorDetail(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "amount"}}})
					ce.AddDetail(d)
					return nil, ce
				}}
				c2 := serve(t, p2, l, idemconnect.Options{}, proto.opt)
				for i := range 2 {
					got := call(ctx, c2, "bad-"+proto.name, mapMessage(t, -1))
					var ce *connect.Error
					if !errors.As(got.err, &ce) || ce.Code() != connect.CodeInvalidArgument || ce.Message() != "amount must be positive" ||
						len(ce.Details()) != 1 || ce.Details()[0].Type() != "google.rpc.BadRequest" {
						t.Fatalf("error call %d: %v", i+1, got.err)
					}
					if want := []string{"", "true"}[i]; got.replayed != want {
						t.Errorf("error call %d: replayed %q, want %q", i+1, got.replayed, want)
					}
				}
				if n := p2.runs.Load(); n != 1 {
					t.Errorf("the failing procedure ran %d times, want 1", n)
				}
			})
		}
	})
}

// TestConcurrentDuplicates: 50 calls with one key and one message at
// once, through the client interceptor, on every driver and protocol: the
// procedure runs once, and every call ends with its answer.
func TestConcurrentDuplicates(t *testing.T) {
	eachDriver(t, ledger.Options{}, func(t *testing.T, l idemconnect.Ledger) {
		for _, proto := range protocols {
			t.Run(proto.name, func(t *testing.T) {
				p := &payments{delay: 300 * time.Millisecond}
				c := serve(t, p, l, idemconnect.Options{InFlightRetryAfter: 50 * time.Millisecond}, proto.opt,
					idemconnect.NewClientInterceptor(idemconnect.ClientOptions{MaxAttempts: 40, MaxElapsed: 10 * time.Second}))
				var wg sync.WaitGroup
				results := make([]result, 50)
				for i := range results {
					wg.Add(1)
					go func() {
						defer wg.Done()
						results[i] = call(context.Background(), c, "dup-"+proto.name, mapMessage(t, 9))
					}()
				}
				wg.Wait()
				replays := 0
				for i, r := range results {
					if r.err != nil || r.charge != "ch_1" {
						t.Errorf("call %d: %+v; want ch_1", i, r)
					}
					if r.replayed == "true" {
						replays++
					}
				}
				if n := p.runs.Load(); n != 1 || replays != 49 {
					t.Errorf("procedure ran %d times, %d replays; want 1 run and 49 replays", n, replays)
				}
			})
		}
	})
}

// TestConcurrentDuplicatesWait: with Options.Wait, duplicates sent by a
// client with no retries at all while the first call runs (300 ms) wait
// for it and end with its answer, in one attempt each; without Wait they
// end with the in-flight unavailable. Every protocol, every driver.
func TestConcurrentDuplicatesWait(t *testing.T) {
	eachDriver(t, ledger.Options{}, func(t *testing.T, l idemconnect.Ledger) {
		for _, proto := range protocols {
			for _, wait := range []time.Duration{10 * time.Second, 0} {
				t.Run(fmt.Sprintf("%s/wait=%v", proto.name, wait), func(t *testing.T) {
					p := &payments{delay: 300 * time.Millisecond}
					c := serve(t, p, l, idemconnect.Options{Wait: wait}, proto.opt)
					key := fmt.Sprintf("dup-%s-%v", proto.name, wait)
					first := make(chan result, 1)
					go func() { first <- call(context.Background(), c, key, mapMessage(t, 9)) }()
					for p.runs.Load() == 0 {
						time.Sleep(time.Millisecond)
					}
					var wg sync.WaitGroup
					results := make([]result, 10)
					for i := range results {
						wg.Add(1)
						go func() {
							defer wg.Done()
							results[i] = call(context.Background(), c, key, mapMessage(t, 9))
						}()
					}
					wg.Wait()
					if r := <-first; r.err != nil || r.charge != "ch_1" || r.replayed != "" {
						t.Errorf("first call: %+v; want ch_1, not replayed", r)
					}
					for i, r := range results {
						if wait > 0 && (r.err != nil || r.charge != "ch_1" || r.replayed != "true") {
							t.Errorf("duplicate %d: %+v; want ch_1, replayed", i, r)
						}
						if wait == 0 && r.code != connect.CodeUnavailable {
							t.Errorf("duplicate %d: %+v; want unavailable", i, r)
						}
					}
					if n := p.runs.Load(); n != 1 {
						t.Errorf("procedure ran %d times, want 1", n)
					}
				})
			}
		}
	})
}

// TestCommittedThenGone: a first call that marked its commit point and
// vanished is answered data_loss (IDEMPOTENCY_OUTCOME_NOT_STORED) after its
// lease, never run again; with Options.Recover it runs once more, and
// Recovered tells it when the first committed. Every driver.
func TestCommittedThenGone(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	eachDriver(t, ledger.Options{Lease: time.Minute, Now: clock}, func(t *testing.T, l idemconnect.Ledger) {
		ctx := context.Background()
		var recovered []time.Time
		p := &payments{handle: func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
			if at, ok := idemconnect.Recovered(ctx); ok {
				recovered = append(recovered, at)
			}
			return structpb.NewStruct(map[string]any{"charge": "looked up"})
		}}
		msg := mapMessage(t, 3)
		fp := fingerprint(t, msg)
		var markedAt time.Time
		for _, recover := range []bool{false, true} {
			key := fmt.Sprintf("gone-%v", recover)
			mu.Lock()
			markedAt = now
			mu.Unlock()
			first, err := l.Claim(ctx, ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: fp})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Commit(ctx, first); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			now = now.Add(2 * time.Minute)
			mu.Unlock()
			c := serve(t, p, l, idemconnect.Options{Recover: recover}, nil)
			got := call(ctx, c, key, msg)
			var ce *connect.Error
			switch {
			case !recover && (!errors.As(got.err, &ce) || ce.Code() != connect.CodeDataLoss || reason(ce) != "IDEMPOTENCY_OUTCOME_NOT_STORED"):
				t.Errorf("retry of a committed, vanished call: %v; want data_loss IDEMPOTENCY_OUTCOME_NOT_STORED", got.err)
			case recover && (got.err != nil || got.charge != "looked up"):
				t.Errorf("recovery: %+v; want the procedure's answer", got)
			}
		}
		if n := p.runs.Load(); n != 1 || len(recovered) != 1 || !recovered[0].Equal(markedAt) {
			t.Errorf("procedure ran %d times, recovered %v; want one run knowing the mark of %v", n, recovered, markedAt)
		}
	})
}

// fingerprint is the interceptor's fingerprint of msg to the procedure,
// computed as idemgrpc documents it, through the same layout.
func fingerprint(t *testing.T, msg *structpb.Struct) hash.Digest {
	t.Helper()
	d, err := idemconnect.Fingerprint(chargeProcedure, msg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func reason(ce *connect.Error) string {
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.Reason
			}
		}
	}
	return ""
}

// TestScopeRefused: a scope the ledger refuses gets invalid_argument that
// says why without quoting the scope, and the handler never runs.
func TestScopeRefused(t *testing.T) {
	eachDriver(t, ledger.Options{}, func(t *testing.T, l idemconnect.Ledger) {
		p := &payments{}
		c := serve(t, p, l, idemconnect.Options{Scope: func(context.Context, string, http.Header) (string, error) {
			return strings.Repeat("s", 256), nil
		}}, protocols[0].opt)
		got := call(context.Background(), c, "k", mapMessage(t, 5))
		const want = "the call's owner is not a valid scope: scope is 256 bytes, over the maximum of 255"
		var ce *connect.Error
		if got.code != connect.CodeInvalidArgument || !errors.As(got.err, &ce) || ce.Message() != want {
			t.Errorf("got %v (%v), want invalid_argument %q", got.code, got.err, want)
		}
		if n := p.runs.Load(); n != 0 {
			t.Errorf("handler ran %d times", n)
		}
	})
}
