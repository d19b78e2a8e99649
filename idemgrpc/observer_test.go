package idemgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/internal/eventlog"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// recorder is an Observer that keeps every event.
type recorder = eventlog.Recorder

// ev is an expected event of the method m: its kind, reason, op and status.
func ev(m string, k ledger.EventKind, reason ledger.Reason, op string, code codes.Code) ledger.Event {
	return ledger.Event{Kind: k, Reason: reason, Op: op, Method: m, Route: m, Status: int(code)}
}

// failure reports whether events of kind k carry an Err.
func failure(k ledger.EventKind) bool {
	return k == ledger.EventLeaseLost || k == ledger.EventStoreBusy || k == ledger.EventStoreUnavailable
}

// checkEvents compares got with want on Kind, Reason, Op, Method, Route
// and Status, and checks that every event has a positive Duration and an
// Err exactly when it reports a failure.
func checkEvents(t *testing.T, got, want []ledger.Event) {
	t.Helper()
	fields := make([]ledger.Event, len(got))
	for i, e := range got {
		fields[i] = ledger.Event{Kind: e.Kind, Reason: e.Reason, Op: e.Op, Method: e.Method, Route: e.Route, Status: e.Status}
		if e.Duration <= 0 {
			t.Errorf("event %d (%v): Duration %v, want > 0", i, e.Kind, e.Duration)
		}
		if (e.Err != nil) != failure(e.Kind) {
			t.Errorf("event %d (%v): Err %v, want one only for a failure", i, e.Kind, e.Err)
		}
	}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("events:\n%s\nwant:\n%s", eventList(fields), eventList(want))
	}
}

func eventList(es []ledger.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\t%v reason=%q op=%q method=%s route=%s status=%d\n", e.Kind, e.Reason, e.Op, e.Method, e.Route, e.Status)
	}
	return b.String()
}

// takeover is a Ledger whose first heartbeat extension once armed (by the
// handler, so that a slow claim's renewal before the handler runs is not
// the one) waits until the lease has run out and a retry has taken the key
// over, as it would when the heartbeat stalls: the extension and the
// completion then find the lease lost. lost is closed after that extension.
type takeover struct {
	idemgrpc.Ledger
	armed atomic.Bool
	first atomic.Bool
	lost  chan struct{}
	err   error // the takeover's failure, read after lost is closed
}

func (l *takeover) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	if !l.armed.Load() || l.first.Swap(true) {
		return l.Ledger.Extend(ctx, c)
	}
	defer close(l.lost)
	for {
		_, err := l.Ledger.Claim(ctx, c.Request)
		var inFlight *ledger.InFlightError
		if errors.As(err, &inFlight) {
			time.Sleep(inFlight.RetryAfter)
			continue
		}
		if err != nil {
			l.err = err
			return time.Time{}, err
		}
		break
	}
	return l.Ledger.Extend(ctx, c)
}

// TestObserverEvents: each scenario the server tests drive reports its
// events in order, with the method as Method and Route, the code the call
// is answered with (0 is OK: stored and replayed always have one), a
// Duration, and an Err for failures.
func TestObserverEvents(t *testing.T) {
	const m, refund = methodCharge, methodRefund
	type env struct {
		conn *grpc.ClientConn
		ctx  context.Context
		in   *structpb.Struct
	}
	call := func(t *testing.T, e env, want codes.Code) {
		t.Helper()
		if r := invoke(t, e.conn, e.ctx, m, e.in); r.status.Code() != want {
			t.Fatalf("call: %v, want %v", r.status, want)
		}
	}
	failWith := func(c codes.Code, commit bool) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
		return func(ctx context.Context, _ string, _ *structpb.Struct) (*structpb.Struct, error) {
			if commit {
				idemgrpc.Commit(ctx)
			}
			return nil, status.Error(c, "declined")
		}
	}
	tests := []struct {
		name   string
		handle func(p *payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error)
		opts   idemgrpc.ServerOptions
		drive  func(t *testing.T, e env)
		want   []ledger.Event
	}{{
		name:  "first call",
		drive: func(t *testing.T, e env) { call(t, e, codes.OK) },
		want:  []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.OK)},
	}, {
		name:  "replay",
		drive: func(t *testing.T, e env) { call(t, e, codes.OK); call(t, e, codes.OK) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.OK),
			ev(m, ledger.EventReplayed, "", "", codes.OK)},
	}, {
		name: "replay of a stored failure",
		handle: func(*payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return failWith(codes.NotFound, false)
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.NotFound); call(t, e, codes.NotFound) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.NotFound),
			ev(m, ledger.EventReplayed, "", "", codes.NotFound)},
	}, {
		name: "in flight",
		handle: func(p *payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				// The duplicate, sent from the handler, is answered (in
				// flight) before the first call ends.
				invoke(t, p.conn, ctx2(ctx), m, in)
				return charged(ctx, m, in)
			}
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.OK) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventInFlight, "", "", codes.Unavailable),
			ev(m, ledger.EventStored, "", "", codes.OK)},
	}, {
		name: "key reused",
		drive: func(t *testing.T, e env) {
			call(t, e, codes.OK)
			if r := invoke(t, e.conn, e.ctx, refund, e.in); r.status.Code() != codes.FailedPrecondition {
				t.Fatalf("reuse: %v", r.status)
			}
		},
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.OK),
			ev(refund, ledger.EventKeyReused, "", "", codes.FailedPrecondition)},
	}, {
		name: "panic before the commit point",
		handle: func(p *payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				if p.runs.Load() == 1 {
					panic("card processor exploded")
				}
				return charged(ctx, m, in)
			}
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.Internal); call(t, e, codes.OK) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventReleased, ledger.ReasonPanic, "", 0),
			ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.OK)},
	}, {
		name: "panic after the commit point",
		handle: func(p *payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				idemgrpc.Commit(ctx)
				panic("card processor exploded")
			}
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.Internal); call(t, e, codes.Internal) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventCommitted, "", "", 0), ev(m, ledger.EventStored, ledger.ReasonPanic, "", codes.Internal),
			ev(m, ledger.EventReplayed, "", "", codes.Internal)},
	}, {
		name: "error with a code not stored",
		handle: func(*payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return failWith(codes.Unavailable, false)
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.Unavailable); call(t, e, codes.Unavailable) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventReleased, ledger.ReasonError, "", codes.Unavailable),
			ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventReleased, ledger.ReasonError, "", codes.Unavailable)},
	}, {
		name: "error with a code not stored, after the commit point",
		handle: func(*payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return failWith(codes.Unavailable, true)
		},
		drive: func(t *testing.T, e env) { call(t, e, codes.Unavailable); call(t, e, codes.Unavailable) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventCommitted, "", "", 0), ev(m, ledger.EventStored, ledger.ReasonError, "", codes.Unavailable),
			ev(m, ledger.EventReplayed, "", "", codes.Unavailable)},
	}, {
		name:  "OK not stored by ShouldStore",
		opts:  idemgrpc.ServerOptions{ShouldStore: func(c codes.Code) bool { return c != codes.OK }},
		drive: func(t *testing.T, e env) { call(t, e, codes.OK) },
		want:  []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventReleased, ledger.ReasonStatus, "", codes.OK)},
	}, {
		name: "answer too large to store",
		handle: func(*payments) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
				return structpb.NewStruct(map[string]any{"receipt": strings.Repeat("x", 1000)})
			}
		},
		opts:  idemgrpc.ServerOptions{MaxOutcomeBytes: 100},
		drive: func(t *testing.T, e env) { call(t, e, codes.OK); call(t, e, codes.DataLoss) },
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, ledger.ReasonOversized, "", codes.OK),
			ev(m, ledger.EventReplayed, "", "", codes.DataLoss)},
	}}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := &recorder{}
				p := &payments{handle: charged}
				if tt.handle != nil {
					p.handle = tt.handle(p)
				}
				opts := tt.opts
				opts.Observer = rec
				p.conn = protected(t, engine, p, opts)
				tt.drive(t, env{p.conn, withKey(context.Background(), "k"), mustStruct(t, map[string]any{"amount": 3})})
				checkEvents(t, rec.All(), tt.want)
			})
		}

		t.Run("store unavailable", func(t *testing.T) {
			for _, tt := range []struct {
				policy idemgrpc.FailurePolicy
				code   codes.Code
			}{{idemgrpc.FailClosed, codes.Unavailable}, {idemgrpc.FailOpen, codes.OK}} {
				rec := &recorder{}
				l, _, closeStore := newStore(t, engine, ledger.Options{})
				conn := serve(t, &payments{handle: charged}, []grpc.UnaryServerInterceptor{recoverPanics,
					idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{Scope: tenantScope, FailurePolicy: tt.policy, Observer: rec})})
				closeStore()
				call(t, env{conn, withKey(context.Background(), "k"), mustStruct(t, map[string]any{"amount": 1})}, tt.code)
				// Fail open, the handler runs unprotected: no answer is
				// known when the event is reported.
				status := tt.code
				if tt.policy == idemgrpc.FailOpen {
					status = 0
				}
				checkEvents(t, rec.All(), []ledger.Event{ev(m, ledger.EventStoreUnavailable, "", "claim", status)})
			}
		})

		t.Run("heartbeat lease lost", func(t *testing.T) {
			rec := &recorder{}
			l, _ := newLedger(t, engine, 300*time.Millisecond)
			tl := &takeover{Ledger: l, lost: make(chan struct{})}
			p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				tl.armed.Store(true)
				<-tl.lost
				return charged(ctx, m, in)
			}}
			conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
				idemgrpc.UnaryServerInterceptor(tl, idemgrpc.ServerOptions{Scope: tenantScope, Observer: rec})})
			// The answer still reaches the client; it is not stored.
			call(t, env{conn, withKey(context.Background(), "k"), mustStruct(t, map[string]any{"amount": 1})}, codes.OK)
			if tl.err != nil {
				t.Fatalf("takeover: %v", tl.err)
			}
			// The takeover waits out the lease inside the extension, so
			// the heartbeat may also report the lease running out
			// unconfirmed, before the extension returns: whether it does
			// is a race of two timers, and that report is left out.
			var got []ledger.Event
			for _, e := range rec.All() {
				if !errors.Is(e.Err, lifecycle.ErrLeaseExpired) {
					got = append(got, e)
				}
			}
			checkEvents(t, got, []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0),
				ev(m, ledger.EventLeaseLost, "", "extend", 0), ev(m, ledger.EventLeaseLost, "", "complete", codes.OK)})
			for _, e := range got {
				if e.Err != nil && !errors.Is(e.Err, ledger.ErrLeaseLost) {
					t.Errorf("%v %s: Err %v, want one matching ledger.ErrLeaseLost", e.Kind, e.Op, e.Err)
				}
			}
		})
	})
}

// ctx2 returns a fresh outgoing context with the key and tenant of the
// incoming call ctx, for a duplicate sent from inside a handler.
func ctx2(ctx context.Context) context.Context {
	return withKey(context.Background(), firstMD(ctx, idemgrpc.MetadataKey))
}

// leaky is a Ledger whose operations named in fail fail with errors that
// quote the key and the scope, as a database driver's message may (a
// constraint's detail, a logged statement). Extend fails only once, and
// closes extendFailed then.
type leaky struct {
	idemgrpc.Ledger
	fail         map[string]error // operation name -> the error it wraps
	extends      atomic.Int64
	extendFailed chan struct{}
}

func (l *leaky) leak(op string, req ledger.Request) error {
	base, ok := l.fail[op]
	if !ok {
		return nil
	}
	return fmt.Errorf("driver: %s: %w: row (%s, %s) key=%s scope='%s' %q", op, base, req.Scope, req.Key, req.Key, req.Scope, req.Key)
}

func (l *leaky) Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error) {
	if err := l.leak("claim", req); err != nil {
		return nil, err
	}
	return l.Ledger.Claim(ctx, req)
}

func (l *leaky) Complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) error {
	if err := l.leak("complete", c.Request); err != nil {
		return err
	}
	return l.Ledger.Complete(ctx, c, out)
}

func (l *leaky) Release(ctx context.Context, c *ledger.Claim) error {
	if err := l.leak("release", c.Request); err != nil {
		return err
	}
	return l.Ledger.Release(ctx, c)
}

func (l *leaky) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	if err := l.leak("extend", c.Request); err != nil && l.extends.Add(1) == 1 {
		close(l.extendFailed)
		return time.Time{}, err
	}
	return l.Ledger.Extend(ctx, c)
}

// TestObserverNoKeyOrScope: no event's fields, nor its Err's text, hold
// the key or the scope, even when the store's errors quote them, for keys
// and scopes of 1, 2 and 10 bytes. errors.Is still classifies Err.
func TestObserverNoKeyOrScope(t *testing.T) {
	const m, refund = methodCharge, methodRefund
	refused := errors.New("connection refused")
	secrets := []struct{ key, scope string }{{"K", "Q"}, {"K7", "Q7"}, {"KX-9876543", "QZ_1234567"}}
	tests := []struct {
		name   string
		fail   map[string]error
		handle func(l *leaky) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error)
		calls  []string // the methods called, in turn
		want   []ledger.Event
		is     error // what every failure's Err matches
	}{{
		name:  "claimed, stored, replayed, key reused",
		calls: []string{m, m, refund},
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStored, "", "", codes.OK),
			ev(m, ledger.EventReplayed, "", "", codes.OK), ev(refund, ledger.EventKeyReused, "", "", codes.FailedPrecondition)},
	}, {
		name:  "claim unavailable",
		fail:  map[string]error{"claim": refused},
		calls: []string{m},
		want:  []ledger.Event{ev(m, ledger.EventStoreUnavailable, "", "claim", codes.Unavailable)},
		is:    refused,
	}, {
		name:  "claim busy",
		fail:  map[string]error{"claim": ledger.ErrRetryable},
		calls: []string{m},
		want:  []ledger.Event{ev(m, ledger.EventStoreBusy, "", "claim", codes.Unavailable)},
		is:    ledger.ErrRetryable,
	}, {
		name:  "complete unavailable",
		fail:  map[string]error{"complete": refused},
		calls: []string{m},
		want:  []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStoreUnavailable, "", "complete", codes.OK)},
		is:    refused,
	}, {
		name: "release busy",
		fail: map[string]error{"release": ledger.ErrRetryable},
		handle: func(*leaky) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
				return nil, status.Error(codes.Unavailable, "try later")
			}
		},
		calls: []string{m},
		want:  []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStoreBusy, "", "release", codes.Unavailable)},
		is:    ledger.ErrRetryable,
	}, {
		name: "extend unavailable",
		fail: map[string]error{"extend": refused},
		handle: func(l *leaky) func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
				<-l.extendFailed
				return charged(ctx, m, in)
			}
		},
		calls: []string{m},
		want: []ledger.Event{ev(m, ledger.EventClaimed, "", "", 0), ev(m, ledger.EventStoreUnavailable, "", "extend", 0),
			ev(m, ledger.EventStored, "", "", codes.OK)},
		is: refused,
	}}
	eachEngine(t, func(t *testing.T, engine string) {
		for _, sec := range secrets {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%d bytes/%s", len(sec.key), tt.name), func(t *testing.T) {
					rec := &recorder{}
					l, _ := newLedger(t, engine, 300*time.Millisecond)
					lk := &leaky{Ledger: l, fail: tt.fail, extendFailed: make(chan struct{})}
					p := &payments{handle: charged}
					if tt.handle != nil {
						p.handle = tt.handle(lk)
					}
					conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics,
						idemgrpc.UnaryServerInterceptor(lk, idemgrpc.ServerOptions{Scope: tenantScope, Observer: rec})})
					ctx := metadata.AppendToOutgoingContext(context.Background(), idemgrpc.MetadataKey, sec.key, "tenant", sec.scope)
					for _, method := range tt.calls {
						invoke(t, conn, ctx, method, mustStruct(t, map[string]any{"amount": 1}))
					}
					got := rec.All()
					checkEvents(t, got, tt.want)
					for _, e := range got {
						fields := []string{e.Method, e.Route, e.Op, string(e.Reason)}
						if e.Err != nil {
							fields = append(fields, e.Err.Error())
							if !errors.Is(e.Err, tt.is) {
								t.Errorf("%v %s: Err %v does not match %v", e.Kind, e.Op, e.Err, tt.is)
							}
						}
						for _, f := range fields {
							if strings.Contains(f, sec.key) || strings.Contains(f, sec.scope) {
								t.Errorf("%v %s: %q holds the key %q or the scope %q", e.Kind, e.Op, f, sec.key, sec.scope)
							}
						}
					}
				})
			}
		}
	})
}
