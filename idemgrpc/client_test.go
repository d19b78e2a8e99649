package idemgrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
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
