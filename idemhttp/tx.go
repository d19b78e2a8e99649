package idemhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TxFunc is a handler whose effects are all writes through tx, a
// transaction of the ledger's database (*sql.Tx or pgx.Tx, by driver). It
// must leave tx open: [TxHandler] commits it after storing the response, and
// a TxFunc that commits or rolls back tx itself breaks exactly once (see
// [ledger.Mutate]).
type TxFunc[TTx any] func(w http.ResponseWriter, r *http.Request, tx TTx)

// TxHandler serves fn exactly once per idempotency key, for handlers whose
// effects are all in the ledger's database: it begins a transaction there,
// runs fn inside [ledger.MutateOutcome] (the claim, fn's writes and the
// stored response share one savepoint), and commits when
// [Options].ShouldStore accepts fn's status, rolling back otherwise. fn's
// response is buffered and sent after the commit; a retry gets the stored
// response, as [Middleware] would give it. The package doc's section Transactional
// handlers says how it differs from Middleware (concurrent duplicates wait
// and replay, SQLite's write lock is held for fn's run, [FailurePolicy] does
// not apply), and Events what [Options].Observer receives.
//
// TxHandler panics when l or fn is nil, or opts.Scope is nil. The handler
// is safe for concurrent use.
func TxHandler[TTx any](l *ledger.Ledger[TTx], opts Options, fn TxFunc[TTx]) http.Handler {
	if l == nil || fn == nil {
		panic("idemhttp: TxHandler needs a ledger and a function")
	}
	return &txHandler[TTx]{cfg: newConfig(opts, l.MaxKeyLength()), l: l, fn: fn}
}

type txHandler[TTx any] struct {
	cfg *config
	l   *ledger.Ledger[TTx]
	fn  TxFunc[TTx]
}

// errNotStored carries a response that ShouldStore rejected (or that was
// too long) out of Mutate's callback, so that Mutate rolls back.
type errNotStored struct {
	buf *buffer
}

func (e *errNotStored) Error() string { return "idemhttp: response not stored" }

func (h *txHandler[TTx]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cfg := h.cfg
	p, ok := cfg.prepare(w, r, nil)
	if !ok {
		return
	}
	// hold is fn's answer, for DecideTx: committed with fn's writes only
	// when ShouldStore accepts it and it was short enough to hold back.
	hold := func(buf *buffer) (ledger.Outcome, error) {
		if buf.tooLarge() || !cfg.shouldStore(buf.status) {
			return ledger.Outcome{}, &errNotStored{buf}
		}
		return ledger.Outcome{Kind: KindResponse, Status: buf.status, Header: buf.outcomeHeader(cfg.allow), Body: buf.body}, nil
	}
	if p == nil {
		// No key: fn runs in a transaction all the same, and nothing is
		// stored.
		var buf *buffer
		res := lifecycle.DecideTx(r.Context(), h.l, ledger.Request{}, func(_ context.Context, tx TTx) (ledger.Outcome, error) {
			buf = h.run(w, r, tx)
			return hold(buf)
		})
		var notStored *errNotStored
		switch {
		case res.Verdict == lifecycle.Refused:
			h.unavailable(w, r, res.Refusal.Err)
		case res.Err != nil && !errors.As(res.Err, &notStored):
			h.unavailable(w, r, res.Err)
		default:
			h.send(w, r, buf)
		}
		return
	}

	req := p.req
	// ClaimFrom gives the handler the client's key; under a Middleware it
	// gives the Middleware's claim, already in r's context.
	nested := underMiddleware(r, h.l, req)
	if nested {
		req.Key = nestedKey(req.Key) // see nested.go
	}
	var first *buffer
	// ran: the claim won and fn was called; finished: DecideTx returned
	// (it did not, when fn panicked).
	ran, finished := false, false
	defer func() {
		if ran && !finished {
			// DecideTx rolled the claim and fn's writes back; the panic
			// goes on.
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic})
		}
	}()
	res := lifecycle.DecideTx(r.Context(), h.l, req, func(_ context.Context, tx TTx) (ledger.Outcome, error) {
		ran = true
		cfg.emit(p, ledger.Event{Kind: ledger.EventClaimed})
		ctx := r.Context()
		if !nested {
			ctx = context.WithValue(ctx, ctxKey{}, &held{l: h.l, req: p.req})
		}
		first = h.run(w, p.forHandler(ctx), tx)
		return hold(first)
	})
	finished = true
	var notStored *errNotStored
	switch {
	case res.Verdict == lifecycle.Refused:
		// Refuse lets no request through without FailOpen: TxHandler's
		// handler cannot run without the store.
		cfg.answer(w, p, lifecycle.Decision{Verdict: res.Verdict, Refusal: res.Refusal, Event: res.Event}, h.l.Lease())
	case res.Verdict == lifecycle.Replayed:
		cfg.replay(w, p, res.Outcome)
	case errors.As(res.Err, &notStored):
		if notStored.buf.tooLarge() {
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonOversized, Status: http.StatusInternalServerError})
		} else {
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonStatus, Status: notStored.buf.status})
		}
		h.send(w, p.r, notStored.buf)
	case res.Err != nil:
		// fn ran, and then the transaction failed: storing the answer,
		// releasing the savepoint or committing (the store failed, or fn
		// ended the transaction itself). fn's writes and the claim are
		// gone.
		h.failed(w, p, res.Err)
	default:
		cfg.emit(p, ledger.Event{Kind: ledger.EventStored, Status: first.status})
		h.send(w, p.r, first)
	}
}

// run calls fn with a buffering writer.
func (h *txHandler[TTx]) run(w http.ResponseWriter, r *http.Request, tx TTx) *buffer {
	buf := newBuffer(w.Header(), h.cfg.maxBody)
	h.fn(buf, r, tx)
	buf.finish()
	return buf
}

// send writes fn's buffered answer, or 500 (CodeResponseTooLarge) when it
// was too long to hold back until the commit. The detail names the limit
// and says the writes are gone: "could not be stored" misled on a request
// without a key, which stores nothing but is held back all the same.
func (h *txHandler[TTx]) send(w http.ResponseWriter, r *http.Request, buf *buffer) {
	if buf.tooLarge() {
		h.cfg.refuse(w, r, Refusal{Status: http.StatusInternalServerError, Code: CodeResponseTooLarge,
			Detail: "the response is longer than " + strconv.FormatInt(h.cfg.maxBody, 10) + " bytes (MaxBodyBytes), the most TxHandler holds back until its commit; the transaction was rolled back"})
		return
	}
	buf.writeTo(w)
}

// failed answers a transaction that failed after fn ran, and reports the
// claim released with ReasonError: the rollback took it away with fn's
// writes, so a retry runs fn again. 503 busy for a lock not had in time,
// else 503 (CodeUnavailable) whose detail does not blame the store: the
// cause may be fn's own, a statement of its that failed (on PostgreSQL
// the transaction is then aborted, and storing the answer fails) or a
// transaction it ended itself; the event's Err says which.
func (h *txHandler[TTx]) failed(w http.ResponseWriter, p *prepared, err error) {
	h.cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Status: http.StatusServiceUnavailable, Err: err})
	if busy(err) {
		h.cfg.refuseBusy(w, p.r, err)
		return
	}
	h.cfg.refuse(w, p.r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Detail: "the request's transaction failed after the handler ran (a statement of the handler's, its own commit or rollback, or the store): it was rolled back and nothing was kept; retry later", Err: err})
}

// unavailable answers a failure of the store: 503 busy (CodeBusy, with
// Retry-After) for a lock not had in time, else 503 (CodeUnavailable).
func (h *txHandler[TTx]) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	if busy(err) {
		h.cfg.refuseBusy(w, r, err)
		return
	}
	h.cfg.refuseUnavailable(w, r, err)
}
