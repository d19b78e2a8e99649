package idemgrpc_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
)

// withKey returns ctx with the key and the tenant in its outgoing metadata.
func withKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, idemgrpc.MetadataKey, key, "tenant", "t1")
}

// result is what a client saw of one call.
type result struct {
	resp     *structpb.Struct
	status   *status.Status
	replayed bool
}

func invoke(t *testing.T, conn *grpc.ClientConn, ctx context.Context, method string, in *structpb.Struct) result {
	t.Helper()
	out := new(structpb.Struct)
	var header metadata.MD
	err := conn.Invoke(ctx, method, in, out, grpc.Header(&header))
	r := result{status: status.Convert(err), replayed: strings.Join(header.Get(idemgrpc.ReplayedKey), ",") == "true"}
	if err == nil {
		r.resp = out
	}
	return r
}

// TestFirstCallAndReplay: the first call runs the handler, the retry with
// the same key and message gets the same message or status back, marked
// as replayed, without a second run.
func TestFirstCallAndReplay(t *testing.T) {
	notFound, err := status.New(codes.NotFound, "no such card").WithDetails(&errdetails.ErrorInfo{Reason: "CARD", Domain: "test"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		handle func(context.Context, string, *structpb.Struct) (*structpb.Struct, error)
		code   codes.Code
	}{
		{"ok", charged, codes.OK},
		{"not found with details", func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return nil, notFound.Err()
		}, codes.NotFound},
		{"invalid argument", func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return nil, status.Error(codes.InvalidArgument, "amount must be positive")
		}, codes.InvalidArgument},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := &payments{handle: tt.handle}
				conn := protected(t, engine, p, idemgrpc.ServerOptions{})
				ctx := withKey(context.Background(), "key-1")
				in := mustStruct(t, map[string]any{"amount": 1250, "currency": "EUR"})

				first := invoke(t, conn, ctx, methodCharge, in)
				second := invoke(t, conn, ctx, methodCharge, in)
				if got := first.status.Code(); got != tt.code {
					t.Fatalf("first call: code %v (%v), want %v", got, first.status.Message(), tt.code)
				}
				if first.replayed || !second.replayed {
					t.Errorf("replayed marks: first %v, second %v; want false, true", first.replayed, second.replayed)
				}
				if !proto.Equal(first.status.Proto(), second.status.Proto()) {
					t.Errorf("replayed status %v, want %v", second.status.Proto(), first.status.Proto())
				}
				if !proto.Equal(first.resp, second.resp) {
					t.Errorf("replayed response %v, want %v", second.resp, first.resp)
				}
				if tt.code == codes.NotFound && !proto.Equal(second.status.Proto(), notFound.Proto()) {
					t.Errorf("replayed status %v, want the handler's %v", second.status.Proto(), notFound.Proto())
				}
				if n := p.runs.Load(); n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
			})
		}
	})
}

// TestConcurrentDuplicates: 50 calls with one key at once, through the
// client interceptor (which retries the in-flight refusals), run the
// handler once and all get its answer.
func TestConcurrentDuplicates(t *testing.T) {
	const n = 50
	eachEngine(t, func(t *testing.T, engine string) {
		// The handler holds the key until every duplicate (each marked by
		// its "call" metadata) has been refused as in flight at least once,
		// so that all of them overlap with it.
		var seen sync.Map
		var distinct atomic.Int64
		allRefused := make(chan struct{})
		countInFlight := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			resp, err := next(ctx, req)
			if status.Code(err) == codes.Unavailable && reasonOf(err) == idemgrpc.ReasonInFlight {
				if _, dup := seen.LoadOrStore(firstMD(ctx, "call"), true); !dup && distinct.Add(1) == n-1 {
					close(allRefused)
				}
			}
			return resp, err
		}
		first := make(chan struct{})
		p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
			close(first)
			<-allRefused
			return charged(ctx, m, in)
		}}
		l, _ := newLedger(t, engine, 0)
		srv := idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, InFlightRetryAfter: 1})
		conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, countInFlight, srv},
			idemgrpc.UnaryClientInterceptor(idemgrpc.ClientOptions{MaxAttempts: 100, InitialBackoff: 1}))

		ctx := withKey(context.Background(), "dup")
		in := mustStruct(t, map[string]any{"amount": 7})
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if i > 0 {
					<-first // the first call holds the key by then
				}
				results[i] = invoke(t, conn, metadata.AppendToOutgoingContext(ctx, "call", strconv.Itoa(i)), methodCharge, in)
			})
		}
		wg.Wait()
		if got := p.runs.Load(); got != 1 {
			t.Fatalf("handler ran %d times, want 1", got)
		}
		want := mustStruct(t, map[string]any{"id": "ch_7", "amount": 7})
		replays := 0
		for i, r := range results {
			if r.status.Code() != codes.OK || !proto.Equal(r.resp, want) {
				t.Errorf("call %d: %v %v, want OK %v", i, r.status, r.resp, want)
			}
			if r.replayed {
				replays++
			}
		}
		if replays != n-1 {
			t.Errorf("%d replays, want %d", replays, n-1)
		}
	})
}

// TestInFlight: a duplicate while the first call runs is refused with
// UNAVAILABLE, reason IDEMPOTENCY_KEY_IN_FLIGHT and a RetryInfo delay no
// longer than InFlightRetryAfter, and does not run the handler.
func TestInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		started, finish := make(chan struct{}), make(chan struct{})
		p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
			close(started)
			<-finish
			return charged(ctx, m, in)
		}}
		conn := protected(t, engine, p, idemgrpc.ServerOptions{})
		ctx := withKey(context.Background(), "k")
		in := mustStruct(t, map[string]any{"amount": 1})
		done := make(chan result)
		go func() { done <- invoke(t, conn, ctx, methodCharge, in) }()
		<-started

		dup := invoke(t, conn, ctx, methodCharge, in)
		close(finish)
		if r := <-done; r.status.Code() != codes.OK {
			t.Fatalf("first call: %v", r.status)
		}
		if dup.status.Code() != codes.Unavailable || reasonOf(dup.status.Err()) != idemgrpc.ReasonInFlight {
			t.Fatalf("duplicate: %v (reason %q), want UNAVAILABLE %s", dup.status, reasonOf(dup.status.Err()), idemgrpc.ReasonInFlight)
		}
		var delay *errdetails.RetryInfo
		for _, d := range dup.status.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				delay = ri
			}
		}
		if delay == nil || delay.RetryDelay.AsDuration() <= 0 || delay.RetryDelay.AsDuration() > idemgrpc.DefaultInFlightRetryAfter {
			t.Errorf("RetryInfo %v, want a delay in (0, %v]", delay, idemgrpc.DefaultInFlightRetryAfter)
		}
		if got := p.runs.Load(); got != 1 {
			t.Errorf("handler ran %d times, want 1", got)
		}
	})
}

// TestKeyReused: the same key with another message or another method is
// refused with FAILED_PRECONDITION, reason IDEMPOTENCY_KEY_REUSED.
func TestKeyReused(t *testing.T) {
	tests := []struct {
		name   string
		method string
		amount int
	}{
		{"other message", methodCharge, 2},
		{"other method", methodRefund, 1},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := &payments{handle: charged}
				conn := protected(t, engine, p, idemgrpc.ServerOptions{})
				ctx := withKey(context.Background(), "k")
				if r := invoke(t, conn, ctx, methodCharge, mustStruct(t, map[string]any{"amount": 1})); r.status.Code() != codes.OK {
					t.Fatal(r.status)
				}
				r := invoke(t, conn, ctx, tt.method, mustStruct(t, map[string]any{"amount": tt.amount}))
				if r.status.Code() != codes.FailedPrecondition || reasonOf(r.status.Err()) != idemgrpc.ReasonKeyReused {
					t.Errorf("reuse: %v (reason %q), want FAILED_PRECONDITION %s", r.status, reasonOf(r.status.Err()), idemgrpc.ReasonKeyReused)
				}
				if got := p.runs.Load(); got != 1 {
					t.Errorf("handler ran %d times, want 1", got)
				}
			})
		}
	})
}

// TestPanic: a handler that panics before its commit point releases its
// key, so the retry runs it again; after Commit, the failure is stored and
// the retry replays it without running the handler.
func TestPanic(t *testing.T) {
	tests := []struct {
		name     string
		commit   bool
		runs     int64
		second   codes.Code
		replayed bool
	}{
		{"before the commit point", false, 2, codes.OK, false},
		{"after the commit point", true, 1, codes.Internal, true},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := &payments{}
				p.handle = func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
					if p.runs.Load() == 1 {
						if tt.commit && !idemgrpc.Commit(ctx) {
							t.Error("Commit reported an unprotected call")
						}
						panic("card processor exploded")
					}
					return charged(ctx, m, in)
				}
				conn := protected(t, engine, p, idemgrpc.ServerOptions{})
				ctx := withKey(context.Background(), "k")
				in := mustStruct(t, map[string]any{"amount": 3})
				if r := invoke(t, conn, ctx, methodCharge, in); r.status.Code() != codes.Internal {
					t.Fatalf("panicking call: %v, want INTERNAL from the recovery interceptor", r.status)
				}
				r := invoke(t, conn, ctx, methodCharge, in)
				if r.status.Code() != tt.second || r.replayed != tt.replayed {
					t.Errorf("retry: %v replayed=%v, want %v replayed=%v", r.status, r.replayed, tt.second, tt.replayed)
				}
				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
			})
		}
	})
}

// TestStoredOrReleased: ShouldStore decides by code, and Commit overrides
// it: a transient code releases the key (the retry runs again) unless the
// handler passed its commit point.
func TestStoredOrReleased(t *testing.T) {
	tests := []struct {
		name   string
		code   codes.Code
		commit bool
		runs   int64
	}{
		{"unavailable released", codes.Unavailable, false, 2},
		{"internal released", codes.Internal, false, 2},
		{"aborted released", codes.Aborted, false, 2},
		{"already exists stored", codes.AlreadyExists, false, 1},
		{"permission denied stored", codes.PermissionDenied, false, 1},
		{"unavailable after commit stored", codes.Unavailable, true, 1},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := &payments{handle: func(ctx context.Context, _ string, _ *structpb.Struct) (*structpb.Struct, error) {
					if tt.commit {
						idemgrpc.Commit(ctx)
					}
					return nil, status.Error(tt.code, "declined")
				}}
				conn := protected(t, engine, p, idemgrpc.ServerOptions{})
				ctx := withKey(context.Background(), "k")
				in := mustStruct(t, map[string]any{"amount": 3})
				for range 2 {
					if r := invoke(t, conn, ctx, methodCharge, in); r.status.Code() != tt.code || r.status.Message() != "declined" {
						t.Fatalf("call: %v, want %v declined", r.status, tt.code)
					}
				}
				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
			})
		}
	})
}

// TestKeyRefusals: bad keys are refused with INVALID_ARGUMENT before the
// handler and the ledger; a call without a key runs unprotected unless
// Required.
func TestKeyRefusals(t *testing.T) {
	tests := []struct {
		name     string
		md       []string
		required bool
		code     codes.Code
		reason   string
		runs     int64
	}{
		{"no key", nil, false, codes.OK, "", 1},
		{"no key, required", nil, true, codes.InvalidArgument, idemgrpc.ReasonKeyMissing, 0},
		{"empty", []string{idemgrpc.MetadataKey, ""}, false, codes.InvalidArgument, idemgrpc.ReasonKeyInvalid, 0},
		{"too long", []string{idemgrpc.MetadataKey, strings.Repeat("k", 256)}, false, codes.InvalidArgument, idemgrpc.ReasonKeyInvalid, 0},
		{"longest", []string{idemgrpc.MetadataKey, strings.Repeat("k", 255)}, false, codes.OK, "", 1},
		{"twice", []string{idemgrpc.MetadataKey, "a", idemgrpc.MetadataKey, "b"}, false, codes.InvalidArgument, idemgrpc.ReasonKeyInvalid, 0},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := &payments{handle: charged}
				conn := protected(t, engine, p, idemgrpc.ServerOptions{Required: tt.required})
				ctx := metadata.AppendToOutgoingContext(context.Background(), append([]string{"tenant", "t1"}, tt.md...)...)
				r := invoke(t, conn, ctx, methodCharge, mustStruct(t, map[string]any{"amount": 1}))
				if r.status.Code() != tt.code || reasonOf(r.status.Err()) != tt.reason {
					t.Errorf("got %v (reason %q), want %v %q", r.status, reasonOf(r.status.Err()), tt.code, tt.reason)
				}
				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
			})
		}
	})
}

// zeroMaxKey is a Ledger that reports a MaxKeyLength of 0, which the
// interceptor reads as ledger.DefaultMaxKeyLength.
type zeroMaxKey struct{ idemgrpc.Ledger }

func (zeroMaxKey) MaxKeyLength() int { return 0 }

// TestKeyLengthFromLedger: the longest key is the ledger's MaxKeyLength,
// the one key-length setting. A key of that length runs the handler; one
// byte more is refused by the interceptor, before the ledger, with the
// same status whatever the limit: never "longer than" under a ledger that
// accepts the key, never the ledger's own refusal under a lower limit.
func TestKeyLengthFromLedger(t *testing.T) {
	tooLong, err := status.New(codes.InvalidArgument, "the idempotency-key metadata is not a valid key: longer than the maximum length").
		WithDetails(&errdetails.ErrorInfo{Reason: idemgrpc.ReasonKeyInvalid, Domain: idemgrpc.ErrorDomain})
	if err != nil {
		t.Fatal(err)
	}
	var ok *status.Status // a success, as invoke reports it (status.Convert(nil))
	tests := []struct {
		name   string
		max    int  // ledger.Options.MaxKeyLength (0: the default, 255)
		zero   bool // the Ledger reports MaxKeyLength 0 (zeroMaxKey)
		keyLen int
		want   *status.Status
		runs   int64
	}{
		{"ledger 10, key of 10", 10, false, 10, ok, 1},
		{"ledger 10, key of 11", 10, false, 11, tooLong, 0},
		{"ledger default, key of 255", 0, false, 255, ok, 1},
		{"ledger default, key of 256", 0, false, 256, tooLong, 0},
		{"ledger 1000, key of 300", 1000, false, 300, ok, 1},
		{"ledger 1000, key of 1000", 1000, false, 1000, ok, 1},
		{"ledger 1000, key of 1001", 1000, false, 1001, tooLong, 0},
		{"ledger reporting 0, key of 255", 0, true, 255, ok, 1},
		{"ledger reporting 0, key of 256", 0, true, 256, tooLong, 0},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				l, _, _ := newStore(t, engine, ledger.Options{MaxKeyLength: tt.max})
				if tt.zero {
					l = zeroMaxKey{l}
				}
				p := &payments{handle: charged}
				conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope})})
				in := mustStruct(t, map[string]any{"amount": 1})
				ctx := withKey(context.Background(), strings.Repeat("k", tt.keyLen))
				for i := range 2 { // a refusal stays one; an accepted key replays
					r := invoke(t, conn, ctx, methodCharge, in)
					if !proto.Equal(r.status.Proto(), tt.want.Proto()) {
						t.Errorf("call %d: got %v %v, want %v %v", i+1, r.status, r.status.Details(), tt.want, tt.want.Details())
					}
					if replayed := i == 1 && tt.want.Code() == codes.OK; r.replayed != replayed {
						t.Errorf("call %d: replayed=%v, want %v", i+1, r.replayed, replayed)
					}
				}
				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
			})
		}
	})
}

// TestScope: a Scope error with a status is answered with it, another
// error with INVALID_ARGUMENT; keys of two scopes never meet.
func TestScope(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		p := &payments{handle: charged}
		conn := protected(t, engine, p, idemgrpc.ServerOptions{Scope: func(ctx context.Context, _ string) (string, error) {
			switch tenant := firstMD(ctx, "tenant"); tenant {
			case "":
				return "", status.Error(codes.Unauthenticated, "who are you?")
			case "bad":
				return "", context.Canceled // an error without a status
			case "long":
				return strings.Repeat("s", 256), nil // one the ledger refuses
			default:
				return tenant, nil
			}
		}})
		in := mustStruct(t, map[string]any{"amount": 1})
		call := func(tenant string) *status.Status {
			md := []string{idemgrpc.MetadataKey, "shared"}
			if tenant != "" {
				md = append(md, "tenant", tenant)
			}
			return invoke(t, conn, metadata.AppendToOutgoingContext(context.Background(), md...), methodCharge, in).status
		}
		if st := call(""); st.Code() != codes.Unauthenticated || st.Message() != "who are you?" {
			t.Errorf("no tenant: %v, want the Scope's UNAUTHENTICATED", st)
		}
		if st := call("bad"); st.Code() != codes.InvalidArgument || reasonOf(st.Err()) != idemgrpc.ReasonScope {
			t.Errorf("bad tenant: %v, want INVALID_ARGUMENT %s", st, idemgrpc.ReasonScope)
		}
		const tooLong = "the call's owner is not a valid scope: scope is 256 bytes, over the maximum of 255"
		if st := call("long"); st.Code() != codes.InvalidArgument || reasonOf(st.Err()) != idemgrpc.ReasonScope || st.Message() != tooLong {
			t.Errorf("over-long scope: %v, want INVALID_ARGUMENT %s %q", st, idemgrpc.ReasonScope, tooLong)
		}
		for _, tenant := range []string{"a", "b", "a"} {
			if st := call(tenant); st.Code() != codes.OK {
				t.Errorf("tenant %s: %v", tenant, st)
			}
		}
		if got := p.runs.Load(); got != 2 {
			t.Errorf("handler ran %d times, want 2 (once per scope)", got)
		}
	})
}

// TestNotMigratedFailsClosed: with the ledger's table missing (dropped
// after the ledger was built), every policy refuses the call with
// UNAVAILABLE and the handler never runs: FailOpen is for an unreachable
// store, not for a deployment that forgot schema.Migrate.
func TestNotMigratedFailsClosed(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		for _, policy := range []idemgrpc.FailurePolicy{idemgrpc.FailClosed, idemgrpc.FailOpen} {
			l, db := newLedger(t, engine, 0)
			p := &payments{handle: charged}
			srv := idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, FailurePolicy: policy})
			conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, srv})
			if _, err := db.Exec("DROP TABLE idempotency_ledger"); err != nil {
				t.Fatal(err)
			}
			r := invoke(t, conn, withKey(context.Background(), "k"), methodCharge, mustStruct(t, map[string]any{"amount": 1}))
			if r.status.Code() != codes.Unavailable || reasonOf(r.status.Err()) != idemgrpc.ReasonStoreUnavailable {
				t.Errorf("policy %d: got %v (reason %q), want Unavailable %q", policy, r.status, reasonOf(r.status.Err()), idemgrpc.ReasonStoreUnavailable)
			}
			if got := p.runs.Load(); got != 0 {
				t.Errorf("policy %d: handler ran %d times, want 0", policy, got)
			}
		}
	})
}

// TestStoreUnavailable: with the database closed, a call is refused with
// UNAVAILABLE (IDEMPOTENCY_STORE_UNAVAILABLE), or runs unprotected with
// FailOpen.
func TestStoreUnavailable(t *testing.T) {
	tests := []struct {
		policy idemgrpc.FailurePolicy
		code   codes.Code
		reason string
		runs   int64
	}{
		{idemgrpc.FailClosed, codes.Unavailable, idemgrpc.ReasonStoreUnavailable, 0},
		{idemgrpc.FailOpen, codes.OK, "", 1},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(map[idemgrpc.FailurePolicy]string{idemgrpc.FailClosed: "closed", idemgrpc.FailOpen: "open"}[tt.policy], func(t *testing.T) {
				l, _, closeStore := newStore(t, engine, ledger.Options{})
				p := &payments{handle: charged}
				srv := idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, FailurePolicy: tt.policy})
				conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, srv})
				closeStore()
				r := invoke(t, conn, withKey(context.Background(), "k"), methodCharge, mustStruct(t, map[string]any{"amount": 1}))
				if r.status.Code() != tt.code || reasonOf(r.status.Err()) != tt.reason {
					t.Errorf("got %v (reason %q), want %v %q", r.status, reasonOf(r.status.Err()), tt.code, tt.reason)
				}
				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
			})
		}
	})
}
