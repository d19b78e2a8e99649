package idemgrpc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemledger/idemledger/internal/protorecord"
	"github.com/idemledger/idemledger/internal/redact"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// UnaryServerInterceptor returns an interceptor that protects unary calls
// with the ledger l, in lease mode: see the package doc for the answers,
// what is stored, Commit and the heartbeat. Install it with
// grpc.ChainUnaryInterceptor after the interceptors that authenticate the
// call (Scope reads what they found) and after a recovery interceptor
// (grpc-go does not recover a handler's panic; this interceptor releases
// the key and lets the panic go on). The longest key accepted is
// l.MaxKeyLength(), read once, here.
//
// It panics when l is nil or opts.Scope is nil. The interceptor is safe for
// concurrent use.
func UnaryServerInterceptor(l Ledger, opts ServerOptions) grpc.UnaryServerInterceptor {
	if l == nil || opts.Scope == nil {
		panic("idemgrpc: UnaryServerInterceptor needs a ledger and ServerOptions.Scope")
	}
	s := &server{cfg: newServerConfig(opts, l.MaxKeyLength()), l: l}
	return s.intercept
}

type server struct {
	cfg *serverConfig
	l   Ledger
}

// call is a protected call on its way to the ledger.
type call struct {
	method string
	start  time.Time // when the interceptor began its work on the call
	req    ledger.Request
}

func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if !s.cfg.Methods(info.FullMethod) {
		return next(ctx, req)
	}
	start := time.Now()
	c, err := s.prepare(ctx, req, info.FullMethod, start)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return next(ctx, req)
	}

	d := lifecycle.Decide(ctx, s.l, c.req, lifecycle.Config{
		Wait: s.cfg.Wait, FailOpen: s.cfg.FailurePolicy == FailOpen, Emit: func(e ledger.Event) { s.emit(ctx, c, e) },
	})
	switch d.Verdict {
	case lifecycle.Replayed:
		return s.replay(ctx, c, d.Outcome)
	case lifecycle.Unprotected:
		s.emit(ctx, c, d.Event)
		return next(ctx, req) // fail open
	case lifecycle.Refused:
		return nil, s.refuse(ctx, c, d)
	}
	run := d.Run
	hctx := run.Context(ctx)
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit). Before its
		// commit point the key goes back, so a retry can run; after it,
		// the failure is kept, so a retry cannot repeat the effect. The
		// panic goes on either way.
		if run.Committed() {
			st := status.New(codes.Internal, "the handler failed after its commit point")
			s.complete(run, nil, st, ledger.ReasonPanic)
			return
		}
		run.Release(ledger.ReasonPanic, lifecycle.NoStatus)
	}()
	resp, herr := next(hctx, req)
	finished = true
	run.Stop()

	// The status the client gets, as grpc-go makes it from the handler's
	// error.
	st, ok := status.FromError(herr)
	if !ok {
		st = status.FromContextError(herr)
	}
	// Why the answer is not one ShouldStore keeps: the handler failed, or
	// (with a ShouldStore that refuses OK) its code.
	why := ledger.ReasonStatus
	if herr != nil {
		why = ledger.ReasonError
	}
	switch {
	case s.cfg.ShouldStore(st.Code()):
		s.complete(run, resp, st, "")
	case run.Committed():
		s.complete(run, resp, st, why) // stored only because of the commit point
	default:
		run.Release(why, int(st.Code()))
	}
	return resp, herr
}

// prepare reads the key and the scope and takes the fingerprint. It
// returns (nil, nil) for a call to run unprotected, and a status error for
// a refusal.
func (s *server) prepare(ctx context.Context, req any, method string, start time.Time) (*call, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	keys := md.Get(MetadataKey)
	switch {
	case len(keys) == 0 && !s.cfg.Required:
		return nil, nil
	case len(keys) == 0:
		return nil, refusal(codes.InvalidArgument, ReasonKeyMissing, "this call needs an "+MetadataKey+" metadata entry", 0)
	case len(keys) > 1:
		return nil, refusal(codes.InvalidArgument, ReasonKeyInvalid, "the "+MetadataKey+" metadata is sent more than once", 0)
	}
	key := keys[0]
	if problem := keyProblem(key, s.cfg.maxKey); problem != "" {
		return nil, refusal(codes.InvalidArgument, ReasonKeyInvalid, "the "+MetadataKey+" metadata is not a valid key: "+problem, 0)
	}
	scope, err := s.cfg.Scope(ctx, method)
	if err != nil {
		if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
			return nil, err
		}
		var gs interface{ GRPCStatus() *status.Status }
		if errors.As(err, &gs) {
			return nil, gs.GRPCStatus().Err()
		}
		return nil, refusal(codes.InvalidArgument, ReasonScope, "the call's owner could not be determined", 0)
	}
	if err := ledger.CheckScope(scope); err != nil {
		return nil, refusal(codes.InvalidArgument, ReasonScope, "the call's owner is not a valid scope: "+strings.TrimPrefix(err.Error(), ledger.ErrInvalidRequest.Error()+": "), 0)
	}
	fp, err := Fingerprint(method, req)
	if err != nil {
		// A server whose codec is not protobuf: a refusal, no event.
		return nil, refusal(codes.Internal, ReasonNotProto, "the request could not be fingerprinted", 0)
	}
	return &call{method: method, start: start, req: ledger.Request{Scope: scope, Key: key, Fingerprint: fp, Recover: s.cfg.Recover}}, nil
}

// keyProblem says what is wrong with a key, without quoting it, or returns
// "" for a good key.
func keyProblem(key string, maxLen int) string {
	if key == "" {
		return "empty"
	}
	if len(key) > maxLen {
		return "longer than the maximum length"
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return "not printable ASCII"
		}
	}
	return ""
}

// refuse answers a refused call with a status error, and reports it.
func (s *server) refuse(ctx context.Context, c *call, d lifecycle.Decision) error {
	var refused error
	e, ref := d.Event, d.Refusal
	switch ref.Why {
	case lifecycle.InFlight:
		wait := min(ref.RetryAfter, s.cfg.InFlightRetryAfter)
		refused = refusal(codes.Unavailable, ReasonInFlight, "a call with this idempotency key is in flight", wait)
		// grpc-go's own retry policy (service config) reads no RetryInfo:
		// it waits as long as this trailer says (gRFC A6), and retries
		// only an answer that carries no header metadata (see the package
		// doc, Retries).
		_ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, strconv.FormatInt(wait.Milliseconds(), 10)))
		e.Status = int(codes.Unavailable)
		e.HasStatus = true
	case lifecycle.NotStored:
		// The first call passed its commit point and vanished: its effect
		// was made and its answer is lost, as for an oversized answer.
		refused = refusal(codes.DataLoss, ReasonOutcomeNotStored,
			"the call with this idempotency key made its effect, then stopped before its answer was kept", 0)
		if ref.Reason == ledger.ReasonOversized {
			refused = refusal(codes.DataLoss, ReasonOutcomeTooLarge, "the answer to this call was too large to keep for retries", 0)
		}
		e.Status = int(codes.DataLoss)
		e.HasStatus = true
	case lifecycle.KeyReused:
		refused = refusal(codes.FailedPrecondition, ReasonKeyReused, "this idempotency key was used with another call", 0)
		e.Status = int(codes.FailedPrecondition)
		e.HasStatus = true
	case lifecycle.Invalid:
		refused = refusal(codes.InvalidArgument, ReasonKeyInvalid, "the idempotency key is not accepted by the ledger", 0)
	case lifecycle.Canceled:
		// The client left while the claim ran: nothing is unavailable.
		refused = status.FromContextError(ctx.Err()).Err()
		e.Status = int(status.Code(refused))
		e.HasStatus = true
	case lifecycle.Busy:
		refused = refusal(codes.Unavailable, ReasonStoreBusy, "the idempotency store is busy; retry shortly", ref.RetryAfter)
		e.Status = int(codes.Unavailable)
		e.HasStatus = true
	default:
		refused = refusal(codes.Unavailable, ReasonStoreUnavailable, "the idempotency store is unavailable; retry later", 0)
		e.Status = int(codes.Unavailable)
		e.HasStatus = true
	}
	if e.Kind != 0 {
		s.emit(ctx, c, e)
	}
	return refused
}

// replay answers a stored outcome, marked with ReplayedKey.
func (s *server) replay(ctx context.Context, c *call, out ledger.Outcome) (any, error) {
	resp, err := decodeOutcome(out, s.cfg.Types)
	if errors.Is(err, protorecord.ErrStoredOutcome) {
		// Another kind of record under the key, or a response type the
		// server no longer knows: not a replay, and no event names it.
		return nil, refusal(codes.Internal, ReasonStoredOutcome, "the answer stored for this idempotency key cannot be replayed", 0)
	}
	// SetHeader fails only outside a server call or after the header was
	// sent, neither of which can be the case here.
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedKey, "true"))
	s.emit(ctx, c, ledger.Event{Kind: ledger.EventReplayed, Status: int(status.Code(err)), HasStatus: true})
	return resp, err
}

// complete stores the handler's answer (resp or st), or a marker when it
// cannot be stored: retries then learn that it is lost instead of running
// again. why is the Reason of the stored event when the answer is stored
// only because of the commit point ("" otherwise).
func (s *server) complete(run *lifecycle.Run, resp any, st *status.Status, why ledger.Reason) {
	out, err := encodeOutcome(resp, st)
	var cause error
	switch {
	case err != nil:
		// A response that is not a protobuf message: the handler's bug.
		why, cause = ledger.ReasonError, err
		out, _ = encodeOutcome(nil, status.New(codes.DataLoss, "the answer to this call could not be stored"))
	case len(out.Body) > s.cfg.MaxOutcomeBytes:
		why = ledger.ReasonOversized
		out, _ = encodeOutcome(nil, status.Convert(refusal(codes.DataLoss, ReasonOutcomeTooLarge,
			"the answer to this call was too large to keep for retries", 0)))
	}
	run.Complete(out, why, int(st.Code()), cause)
}

// emit reports an event of the call c to ServerOptions.Observer: every
// event goes through it. It sets Method and Route to the full method name
// and Duration to the time since the call's start, and blots the key and
// the scope out of Err.
func (s *server) emit(ctx context.Context, c *call, e ledger.Event) {
	if s.cfg.Observer == nil {
		return
	}
	e.Method, e.Route, e.Transport = c.method, c.method, ledger.TransportRPC
	e.Duration = time.Since(c.start)
	if e.Err != nil {
		e.Err = redact.Error(e.Err, c.req.Key, c.req.Scope)
	}
	s.cfg.Observer.Observe(ctx, e)
}
