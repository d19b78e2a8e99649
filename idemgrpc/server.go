package idemgrpc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemledger/idemledger/ledger"
)

// UnaryServerInterceptor returns an interceptor that protects unary calls
// with the ledger l, in lease mode: see the package doc for the answers,
// what is stored, Commit and the heartbeat. Install it with
// grpc.ChainUnaryInterceptor after the interceptors that authenticate the
// call (Scope reads what they found) and after a recovery interceptor
// (grpc-go does not recover a handler's panic; this interceptor releases
// the key and lets the panic go on).
//
// It panics when l is nil or opts.Scope is nil. The interceptor is safe for
// concurrent use.
func UnaryServerInterceptor(l Ledger, opts ServerOptions) grpc.UnaryServerInterceptor {
	if l == nil || opts.Scope == nil {
		panic("idemgrpc: UnaryServerInterceptor needs a ledger and ServerOptions.Scope")
	}
	s := &server{cfg: newServerConfig(opts), l: l}
	return s.intercept
}

type server struct {
	cfg *serverConfig
	l   Ledger
}

// call is a protected call on its way to the ledger.
type call struct {
	method string
	req    ledger.Request
}

func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if !s.cfg.Methods(info.FullMethod) {
		return next(ctx, req)
	}
	c, err := s.prepare(ctx, req, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return next(ctx, req)
	}

	claim, err := s.l.Claim(ctx, c.req)
	if err != nil {
		if err := s.refuseLedger(ctx, c, err); err != nil {
			return nil, err
		}
		return next(ctx, req) // fail open
	}
	if claim.Replayed() {
		return s.replay(ctx, c, claim.Replay.Outcome)
	}

	hctx, committed := withCommit(ctx)
	hb := s.startHeartbeat(ctx, c.method, claim)
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit). Before its
		// commit point the key goes back, so a retry can run; after it,
		// the failure is kept, so a retry cannot repeat the effect. The
		// panic goes on either way.
		hb.stop()
		if committed.Load() {
			st := status.New(codes.Internal, "the handler failed after its commit point")
			s.complete(ctx, c, claim, nil, st)
			return
		}
		s.release(ctx, c, claim, "handler panicked")
	}()
	resp, herr := next(hctx, req)
	finished = true
	hb.stop()

	// The status the client gets, as grpc-go makes it from the handler's
	// error.
	st, ok := status.FromError(herr)
	if !ok {
		st = status.FromContextError(herr)
	}
	if !committed.Load() && !s.cfg.ShouldStore(st.Code()) {
		s.release(ctx, c, claim, "code not stored")
		return resp, herr
	}
	s.complete(ctx, c, claim, resp, st)
	return resp, herr
}

// prepare reads the key and the scope and takes the fingerprint. It
// returns (nil, nil) for a call to run unprotected, and a status error for
// a refusal.
func (s *server) prepare(ctx context.Context, req any, method string) (*call, error) {
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
	if problem := keyProblem(key, s.cfg.MaxKeyLength); problem != "" {
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
		return nil, refusal(codes.InvalidArgument, ReasonScope, "the call's owner is not a valid scope", 0)
	}
	fp, err := Fingerprint(method, req)
	if err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "idempotency: request cannot be fingerprinted",
			slog.String("method", method), slog.String("error", err.Error()))
		return nil, refusal(codes.Internal, ReasonNotProto, "the request could not be fingerprinted", 0)
	}
	return &call{method: method, req: ledger.Request{Scope: scope, Key: key, Fingerprint: fp}}, nil
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

// refuseLedger answers a Claim error with a status error, or returns nil
// when the call is to run unprotected (FailOpen, the ledger unreachable).
func (s *server) refuseLedger(ctx context.Context, c *call, err error) error {
	log := s.cfg.Logger
	var inFlight *ledger.InFlightError
	switch {
	case errors.As(err, &inFlight):
		wait := min(max(inFlight.RetryAfter, time.Millisecond), s.cfg.InFlightRetryAfter)
		log.LogAttrs(ctx, slog.LevelInfo, "idempotency: in flight",
			slog.String("method", c.method), slog.Duration("retry_after", wait))
		return refusal(codes.Unavailable, ReasonInFlight, "a call with this idempotency key is in flight", wait)
	case errors.Is(err, ledger.ErrKeyReused):
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency: reused", slog.String("method", c.method))
		return refusal(codes.FailedPrecondition, ReasonKeyReused, "this idempotency key was used with another call", 0)
	case errors.Is(err, ledger.ErrInvalidRequest):
		return refusal(codes.InvalidArgument, ReasonKeyInvalid, "the idempotency key is not accepted by the ledger", 0)
	case ctx.Err() != nil:
		// The client left while the claim ran: nothing is unavailable.
		return status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, ledger.ErrRetryable):
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency: store busy",
			slog.String("method", c.method), slog.String("error", c.redact(err)))
		return refusal(codes.Unavailable, ReasonStoreBusy, "the idempotency store is busy; retry shortly", time.Second)
	}
	log.LogAttrs(ctx, slog.LevelError, "idempotency: store unavailable",
		slog.String("method", c.method), slog.Bool("fail_open", s.cfg.FailurePolicy == FailOpen),
		slog.String("error", c.redact(err)))
	if s.cfg.FailurePolicy == FailOpen {
		return nil
	}
	return refusal(codes.Unavailable, ReasonStoreUnavailable, "the idempotency store is unavailable; retry later", 0)
}

// replay answers a stored outcome, marked with ReplayedKey.
func (s *server) replay(ctx context.Context, c *call, out ledger.Outcome) (any, error) {
	resp, err := decodeOutcome(out, s.cfg.Types)
	if errors.Is(err, errStoredOutcome) {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "idempotency: stored outcome is no gRPC answer",
			slog.String("method", c.method), slog.String("error", err.Error()))
		return nil, refusal(codes.Internal, ReasonStoredOutcome, "the answer stored for this idempotency key cannot be replayed", 0)
	}
	// SetHeader fails only outside a server call or after the header was
	// sent, neither of which can be the case here.
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedKey, "true"))
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "idempotency: replayed",
		slog.String("method", c.method), slog.String("code", status.Code(err).String()))
	return resp, err
}

// complete stores the handler's answer, or a marker when it cannot be
// stored: retries then learn that it is lost instead of running again.
func (s *server) complete(ctx context.Context, c *call, claim *ledger.Claim, resp any, st *status.Status) {
	out, err := encodeOutcome(resp, st)
	switch {
	case err != nil:
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "idempotency: answer cannot be stored",
			slog.String("method", c.method), slog.String("error", err.Error()))
		out, _ = encodeOutcome(nil, status.New(codes.DataLoss, "the answer to this call could not be stored"))
	case len(out.Body) > s.cfg.MaxOutcomeBytes:
		s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "idempotency: answer too large to store",
			slog.String("method", c.method), slog.Int("bytes", len(out.Body)))
		out, _ = encodeOutcome(nil, status.Convert(refusal(codes.DataLoss, ReasonOutcomeTooLarge,
			"the answer to this call was too large to keep for retries", 0)))
	}
	dctx, cancel := s.detached(ctx)
	defer cancel()
	if err := s.l.Complete(dctx, claim, out); err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "idempotency: completion failed",
			slog.String("method", c.method), slog.String("code", st.Code().String()),
			slog.String("error", c.redact(err)))
	}
}

func (s *server) release(ctx context.Context, c *call, claim *ledger.Claim, why string) {
	dctx, cancel := s.detached(ctx)
	defer cancel()
	if err := s.l.Release(dctx, claim); err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "idempotency: release failed",
			slog.String("method", c.method), slog.String("reason", why), slog.String("error", c.redact(err)))
	}
}

// detached returns a context that outlives the client's cancellation but
// not the lease: past it another call may own the key, and the ledger would
// refuse the write anyway.
func (s *server) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), max(s.l.Lease(), time.Second))
}

// redact returns err's text with the key and the scope blotted out: the
// ledger never quotes them, but a database driver's message may, and logs
// must not carry them.
func (c *call) redact(err error) string {
	msg := err.Error()
	for _, secret := range []string{c.req.Key, c.req.Scope} {
		if len(secret) >= 4 { // shorter ones would garble the message more than they hide
			msg = strings.ReplaceAll(msg, secret, "[redacted]")
		}
	}
	return msg
}
