package idemgrpc_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
)

// TestClientInterceptor runs the client interceptor against a real server
// that fails a number of times before answering, and records the key of
// every attempt.
func TestClientInterceptor(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "busy")
	retryInfo, _ := status.New(codes.Unavailable, "in flight").WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Millisecond)})
	tests := []struct {
		name     string
		opts     idemgrpc.ClientOptions
		callKey  string // the caller's own key, if any
		failures []error
		deadline time.Duration
		wantCode codes.Code
		attempts int
		keyed    bool // the calls carry a key
	}{
		{name: "key added, retried with it", failures: []error{unavailable, unavailable}, wantCode: codes.OK, attempts: 3, keyed: true},
		{name: "caller's key kept", callKey: "mine", failures: []error{unavailable}, wantCode: codes.OK, attempts: 2, keyed: true},
		{name: "gives up after MaxAttempts", opts: idemgrpc.ClientOptions{MaxAttempts: 3},
			failures: []error{unavailable, unavailable, unavailable, unavailable}, wantCode: codes.Unavailable, attempts: 3, keyed: true},
		{name: "other codes are final", failures: []error{status.Error(codes.FailedPrecondition, "reused")},
			wantCode: codes.FailedPrecondition, attempts: 1, keyed: true},
		// With a backoff longer than MaxElapsed, only the server's RetryInfo
		// delay lets the second attempt happen.
		{name: "RetryInfo delay honoured", opts: idemgrpc.ClientOptions{InitialBackoff: time.Hour, MaxBackoff: time.Hour},
			failures: []error{retryInfo.Err()}, wantCode: codes.OK, attempts: 2, keyed: true},
		{name: "no wait past MaxElapsed", opts: idemgrpc.ClientOptions{InitialBackoff: time.Hour, MaxBackoff: time.Hour},
			failures: []error{unavailable}, wantCode: codes.Unavailable, attempts: 1, keyed: true},
		{name: "no wait past the deadline", opts: idemgrpc.ClientOptions{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 2 * time.Hour},
			deadline: time.Minute, failures: []error{unavailable}, wantCode: codes.Unavailable, attempts: 1, keyed: true},
		{name: "method not protected: no key, no retry",
			opts:     idemgrpc.ClientOptions{Methods: func(m string) bool { return m != methodCharge }},
			failures: []error{unavailable}, wantCode: codes.Unavailable, attempts: 1, keyed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			p := &payments{}
			p.handle = func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				mu.Lock()
				defer mu.Unlock()
				keys = append(keys, md.Get(idemgrpc.MetadataKey)...)
				if n := int(p.runs.Load()); n <= len(tt.failures) {
					return nil, tt.failures[n-1]
				}
				return charged(ctx, m, in)
			}
			conn := serve(t, p, nil, idemgrpc.UnaryClientInterceptor(tt.opts))
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			if tt.callKey != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, idemgrpc.MetadataKey, tt.callKey)
			}
			err := conn.Invoke(ctx, methodCharge, mustStruct(t, map[string]any{"amount": 1}), new(structpb.Struct))

			if got := status.Code(err); got != tt.wantCode {
				t.Fatalf("code %v (%v), want %v", got, err, tt.wantCode)
			}
			if got := int(p.runs.Load()); got != tt.attempts {
				t.Errorf("%d attempts reached the server, want %d", got, tt.attempts)
			}
			if !tt.keyed {
				if len(keys) != 0 {
					t.Errorf("keys sent %q, want none", keys)
				}
				return
			}
			if len(keys) != tt.attempts {
				t.Fatalf("keys %q, want one per attempt", keys)
			}
			for _, k := range keys {
				if k != keys[0] {
					t.Errorf("keys %q, want the same key on every attempt", keys)
				}
			}
			if tt.callKey != "" && keys[0] != tt.callKey {
				t.Errorf("key %q, want the caller's %q", keys[0], tt.callKey)
			}
			if err == nil {
				return
			}
			var ce *idemgrpc.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T, want a *CallError", err)
			}
			if ce.Key != keys[0] || ce.Attempts != tt.attempts {
				t.Errorf("CallError{Key: %q, Attempts: %d}, want {%q, %d}", ce.Key, ce.Attempts, keys[0], tt.attempts)
			}
			if want := status.Convert(tt.failures[0]).Message(); status.Convert(err).Message() != want {
				t.Errorf("status message %q, want the server's %q", status.Convert(err).Message(), want)
			}
		})
	}
}

// TestClientAgainstCrashedCall: a call whose server crashed holds its key
// in flight until the lease runs out (a claim made straight in the ledger,
// never completed, stands for it). The default client gives up after its
// five attempts; one with MaxAttempts = Lease / InFlightRetryAfter + 2 and
// MaxElapsed past the lease, as the package doc says, outlasts the lease and
// takes the key over: the handler runs once.
func TestClientAgainstCrashedCall(t *testing.T) {
	const (
		lease      = time.Second
		retryAfter = 50 * time.Millisecond // ServerOptions.InFlightRetryAfter
	)
	inFlight, err := status.New(codes.Unavailable, "a call with this idempotency key is in flight").
		WithDetails(&errdetails.ErrorInfo{Reason: idemgrpc.ReasonInFlight, Domain: idemgrpc.ErrorDomain})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     idemgrpc.ClientOptions
		want     *status.Status // the last attempt's, without its RetryInfo
		attempts int            // of the failed call
		runs     int64
	}{
		{"defaults give up", idemgrpc.ClientOptions{}, inFlight, idemgrpc.DefaultMaxAttempts, 0},
		{"attempts and time for the lease", idemgrpc.ClientOptions{MaxAttempts: int(lease/retryAfter) + 2, MaxElapsed: 2 * lease}, nil, 0, 1},
	}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				l, _, _ := newStore(t, engine, ledger.Options{Lease: lease})
				p := &payments{handle: charged}
				srv := idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, InFlightRetryAfter: retryAfter})
				conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, srv}, idemgrpc.UnaryClientInterceptor(tt.opts))
				in := mustStruct(t, map[string]any{"amount": 1})
				fp, err := idemgrpc.Fingerprint(methodCharge, in)
				if err != nil {
					t.Fatal(err)
				}
				// The crashed call's claim.
				if _, err := l.Claim(context.Background(), ledger.Request{Scope: "t1", Key: "k", Fingerprint: fp}); err != nil {
					t.Fatal(err)
				}
				out := new(structpb.Struct)
				err = conn.Invoke(withKey(context.Background(), "k"), methodCharge, in, out)

				if got := p.runs.Load(); got != tt.runs {
					t.Errorf("handler ran %d times, want %d", got, tt.runs)
				}
				if tt.want == nil {
					if want := mustStruct(t, map[string]any{"id": "ch_1", "amount": 1}); err != nil || !proto.Equal(out, want) {
						t.Errorf("got %v %v, want %v", out, err, want)
					}
					return
				}
				var ce *idemgrpc.CallError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T), want a *CallError", err, err)
				}
				if ce.Key != "k" || ce.Attempts != tt.attempts {
					t.Errorf("CallError{Key: %q, Attempts: %d}, want {%q, %d}", ce.Key, ce.Attempts, "k", tt.attempts)
				}
				got := status.Convert(err).Proto()
				got.Details = slices.DeleteFunc(got.Details, func(a *anypb.Any) bool {
					return a.MessageIs((*errdetails.RetryInfo)(nil))
				})
				if !proto.Equal(got, tt.want.Proto()) {
					t.Errorf("status %v, want %v", got, tt.want.Proto())
				}
			})
		}
	})
}

// TestNewKey: keys are version 4 UUIDs, fresh each time.
func TestNewKey(t *testing.T) {
	a, err := idemgrpc.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := idemgrpc.NewKey()
	if len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) || a == b {
		t.Errorf("NewKey gave %q then %q, want two different version 4 UUIDs", a, b)
	}
}

var _ grpc.UnaryClientInterceptor = idemgrpc.UnaryClientInterceptor(idemgrpc.ClientOptions{})
