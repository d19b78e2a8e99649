package idemconnect

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/protorecord"
	"github.com/idemledger/idemledger/internal/redact"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// NewInterceptor returns the server interceptor that protects unary
// procedures with l (see the package doc). Streaming calls and client
// calls pass through. It panics when l or opts.Scope is nil, or when
// MaxOutcomeBytes or InFlightRetryAfter is negative.
func NewInterceptor(l Ledger, opts Options) connect.Interceptor {
	switch {
	case l == nil:
		panic("idemconnect: NewInterceptor needs a ledger")
	case opts.Scope == nil:
		panic("idemconnect: Options.Scope is required")
	case opts.MaxOutcomeBytes < 0:
		panic("idemconnect: Options.MaxOutcomeBytes is negative")
	case opts.InFlightRetryAfter < 0:
		panic("idemconnect: Options.InFlightRetryAfter is negative")
	}
	return &server{l: l, cfg: opts.withDefaults(), rules: idemhttp.KeyRules{MaxLength: l.MaxKeyLength()}}
}

type server struct {
	l     Ledger
	cfg   Options
	rules idemhttp.KeyRules
}

// call is a protected call on its way to the ledger.
type call struct {
	procedure string
	start     time.Time
	req       ledger.Request
}

func (s *server) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (s *server) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (s *server) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient || !s.cfg.Procedures(req.Spec().Procedure) {
			return next(ctx, req)
		}
		c, err := s.prepare(ctx, req)
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
		return s.run(ctx, c, d.Run, req, next)
	}
}

// prepare reads the key and the scope and takes the fingerprint. It
// returns (nil, nil) for a call to run unprotected, and a Connect error for
// a refusal.
func (s *server) prepare(ctx context.Context, req connect.AnyRequest) (*call, error) {
	start := time.Now()
	procedure := req.Spec().Procedure
	key, err := idemhttp.ParseKey(req.Header(), s.rules)
	switch {
	case errors.Is(err, idemhttp.ErrMissingKey) && !s.cfg.Required:
		return nil, nil
	case errors.Is(err, idemhttp.ErrMissingKey):
		return nil, refusal(connect.CodeInvalidArgument, protorecord.ReasonKeyMissing, "this call needs an "+HeaderName+" header", 0)
	case err != nil:
		// The error names the offending byte, never the key.
		return nil, refusal(connect.CodeInvalidArgument, protorecord.ReasonKeyInvalid, "the "+HeaderName+" header is not a valid key: "+
			strings.TrimPrefix(err.Error(), idemhttp.ErrInvalidKey.Error()+": "), 0)
	}
	scope, err := s.cfg.Scope(ctx, procedure, req.Header())
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, refusal(connect.CodeInvalidArgument, protorecord.ReasonScope, "the call's owner could not be determined", 0)
	}
	if err := ledger.CheckScope(scope); err != nil {
		return nil, refusal(connect.CodeInvalidArgument, protorecord.ReasonScope, "the call's owner is not a valid scope: "+strings.TrimPrefix(err.Error(), ledger.ErrInvalidRequest.Error()+": "), 0)
	}
	fp, err := protorecord.Fingerprint(procedure, req.Any())
	if err != nil {
		return nil, refusal(connect.CodeInternal, protorecord.ReasonNotProto, "the request could not be fingerprinted", 0)
	}
	return &call{procedure: procedure, start: start, req: ledger.Request{Scope: scope, Key: key, Fingerprint: fp, Recover: s.cfg.Recover}}, nil
}

// run runs the procedure under the won claim and stores or releases its
// answer.
func (s *server) run(ctx context.Context, c *call, run *lifecycle.Run, req connect.AnyRequest, next connect.UnaryFunc) (connect.AnyResponse, error) {
	finished := false
	defer func() {
		if finished {
			return
		}
		// The procedure panicked. Before its commit point the key goes
		// back; after it, the failure is kept. The panic goes on.
		if run.Committed() {
			s.complete(run, nil, &spb.Status{Code: int32(connect.CodeInternal), Message: "the procedure failed after its commit point"}, ledger.ReasonPanic)
			return
		}
		run.Release(ledger.ReasonPanic, lifecycle.NoStatus)
	}()
	res, herr := next(run.Context(ctx), req)
	finished = true
	run.Stop()

	var st *spb.Status
	code := connect.Code(0)
	if herr != nil {
		st = statusOf(herr)
		code = connect.Code(st.Code)
	}
	why := ledger.ReasonStatus
	if herr != nil {
		why = ledger.ReasonError
	}
	switch {
	case s.cfg.ShouldStore(code):
		s.complete(run, res, st, "")
	case run.Committed():
		s.complete(run, res, st, why) // stored only because of the commit point
	default:
		run.Release(why, int(code))
	}
	return res, herr
}

// complete stores the answer (res when st is nil, st otherwise), or a
// data_loss marker when it cannot be stored.
func (s *server) complete(run *lifecycle.Run, res connect.AnyResponse, st *spb.Status, why ledger.Reason) {
	var out ledger.Outcome
	var err error
	status := 0
	if st != nil {
		status = int(st.Code)
		out, err = protorecord.EncodeStatus(st)
	} else {
		out, err = protorecord.EncodeResponse(res.Any())
	}
	var cause error
	switch {
	case err != nil:
		why, cause = ledger.ReasonError, err
		out, _ = protorecord.EncodeStatus(&spb.Status{Code: int32(connect.CodeDataLoss), Message: "the answer to this call could not be stored"})
	case len(out.Body) > s.cfg.MaxOutcomeBytes:
		why = ledger.ReasonOversized
		out, _ = protorecord.EncodeStatus(statusOf(refusal(connect.CodeDataLoss, protorecord.ReasonOutcomeTooLarge,
			"the answer to this call was too large to keep for retries", 0)))
	}
	run.Complete(out, why, status, cause)
}

// replay answers a stored outcome, marked with ReplayedHeader.
func (s *server) replay(ctx context.Context, c *call, out ledger.Outcome) (connect.AnyResponse, error) {
	m, st, err := protorecord.Decode(out, s.cfg.Types)
	if err != nil {
		// Another kind of record under the key, or a response type this
		// server does not know: not a replay.
		return nil, refusal(connect.CodeInternal, protorecord.ReasonStoredOutcome, "the answer stored for this idempotency key cannot be replayed", 0)
	}
	if st != nil {
		s.emit(ctx, c, ledger.Event{Kind: ledger.EventReplayed, Status: int(st.Code), HasStatus: true})
		ce := errorOf(st)
		ce.Meta().Set(ReplayedHeader, "true")
		return nil, ce
	}
	// A *connect.Response of the procedure's own type cannot be made here
	// (its type parameter is the handler's); a dynamic message of the same
	// descriptor encodes to the same bytes in every codec.
	dm := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
	proto.Merge(dm, m)
	res := connect.NewResponse(dm)
	res.Header().Set(ReplayedHeader, "true")
	s.emit(ctx, c, ledger.Event{Kind: ledger.EventReplayed, HasStatus: true})
	return res, nil
}

// refuse answers a refused call with a Connect error, and reports it.
func (s *server) refuse(ctx context.Context, c *call, d lifecycle.Decision) error {
	var refused error
	e, ref := d.Event, d.Refusal
	switch ref.Why {
	case lifecycle.InFlight:
		refused = refusal(connect.CodeUnavailable, protorecord.ReasonInFlight, "a call with this idempotency key is in flight",
			min(ref.RetryAfter, s.cfg.InFlightRetryAfter))
		e.Status = int(connect.CodeUnavailable)
		e.HasStatus = true
	case lifecycle.NotStored:
		refused = refusal(connect.CodeDataLoss, protorecord.ReasonOutcomeNotStored,
			"the call with this idempotency key made its effect, then stopped before its answer was kept", 0)
		if ref.Reason == ledger.ReasonOversized {
			refused = refusal(connect.CodeDataLoss, protorecord.ReasonOutcomeTooLarge, "the answer to this call was too large to keep for retries", 0)
		}
		e.Status = int(connect.CodeDataLoss)
		e.HasStatus = true
	case lifecycle.KeyReused:
		refused = refusal(connect.CodeFailedPrecondition, protorecord.ReasonKeyReused, "this idempotency key was used with another call", 0)
		e.Status = int(connect.CodeFailedPrecondition)
		e.HasStatus = true
	case lifecycle.Invalid:
		refused = refusal(connect.CodeInvalidArgument, protorecord.ReasonKeyInvalid, "the idempotency key is not accepted by the ledger", 0)
	case lifecycle.Canceled:
		refused = connect.NewError(connect.CodeOf(ctx.Err()), ctx.Err())
		e.Status = int(connect.CodeOf(refused))
		e.HasStatus = true
	case lifecycle.Busy:
		refused = refusal(connect.CodeUnavailable, protorecord.ReasonStoreBusy, "the idempotency store is busy; retry shortly", ref.RetryAfter)
		e.Status = int(connect.CodeUnavailable)
		e.HasStatus = true
	default:
		refused = refusal(connect.CodeUnavailable, protorecord.ReasonStoreUnavailable, "the idempotency store is unavailable; retry later", 0)
		e.Status = int(connect.CodeUnavailable)
		e.HasStatus = true
	}
	if e.Kind != 0 {
		s.emit(ctx, c, e)
	}
	return refused
}

// emit reports an event of the call c: Method and Route are the procedure,
// Duration the time since the call's start; the key and the scope are
// blotted out of Err.
func (s *server) emit(ctx context.Context, c *call, e ledger.Event) {
	if s.cfg.Observer == nil {
		return
	}
	e.Method, e.Route, e.Transport = c.procedure, c.procedure, ledger.TransportRPC
	e.Duration = time.Since(c.start)
	if e.Err != nil {
		e.Err = redact.Error(e.Err, c.req.Key, c.req.Scope)
	}
	s.cfg.Observer.Observe(ctx, e)
}

// refusal returns a Connect error with an ErrorInfo detail, and a RetryInfo
// detail and a Retry-After header (whole seconds, rounded up) when retry
// is positive.
func refusal(code connect.Code, reason, msg string, retry time.Duration) *connect.Error {
	ce := connect.NewError(code, errors.New(msg))
	if d, err := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: reason, Domain: protorecord.Domain}); err == nil {
		ce.AddDetail(d)
	}
	if retry > 0 {
		if d, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}); err == nil {
			ce.AddDetail(d)
		}
		ce.Meta().Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
	}
	return ce
}

// statusOf is the google.rpc.Status of a procedure's error, as connect-go
// sends it: its code (unknown for an error that is no *connect.Error,
// canceled or deadline_exceeded for the context's), its message and its
// details.
func statusOf(err error) *spb.Status {
	st := &spb.Status{Code: int32(connect.CodeOf(err)), Message: err.Error()}
	var ce *connect.Error
	if errors.As(err, &ce) {
		st.Message = ce.Message()
		for _, d := range ce.Details() {
			st.Details = append(st.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
		}
	}
	return st
}

// errorOf is the Connect error of a stored status.
func errorOf(st *spb.Status) *connect.Error {
	ce := connect.NewError(connect.Code(st.Code), errors.New(st.Message))
	for _, a := range st.Details {
		if d, err := connect.NewErrorDetail(a); err == nil {
			ce.AddDetail(d)
		}
	}
	return ce
}

// Fingerprint returns the fingerprint the interceptor takes of a call to
// procedure with the request message req: idemgrpc.Fingerprint's layout
// (the tag "idemledger/grpc/v1", the procedure, the deterministic protobuf
// encoding), so that a record written by either integration replays
// through the other. It fails for a req that is not a protobuf message.
func Fingerprint(procedure string, req any) (hash.Digest, error) {
	return protorecord.Fingerprint(procedure, req)
}
