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
	ctx := context.WithoutCancel(r.Context())
	if p != nil && h.lookup(w, p, r) {
		return
	}
	d := h.l.Driver()
	tx, err := d.Begin(ctx)
	if err != nil {
		if p != nil {
			cfg.emit(p, ledger.Event{Kind: failureKind(err), Op: "claim", Status: http.StatusServiceUnavailable, Err: err})
		}
		h.unavailable(w, r, err)
		return
	}
	defer d.Rollback(ctx, tx) // after a commit, a no-op

	if p == nil {
		buf := h.run(w, r, tx)
		if buf.tooLarge() || !cfg.shouldStore(buf.status) {
			_ = d.Rollback(ctx, tx)
		} else if err := d.Commit(ctx, tx); err != nil {
			h.unavailable(w, r, err)
			return
		}
		h.send(w, r, buf)
		return
	}

	req := p.req
	fr := p.r
	if underMiddleware(r, h.l, req) {
		req.Key = nestedKey(req.Key) // see nested.go
	} else {
		// ClaimFrom gives the handler the client's key; under a
		// Middleware it gives the Middleware's claim, already in r.
		fr = withHeld(p.r, &held{l: h.l, req: p.req})
	}
	var first *buffer
	// ran: the claim won and fn was called; finished: MutateOutcome
	// returned (it did not, when fn panicked).
	ran, finished := false, false
	defer func() {
		if ran && !finished {
			// MutateOutcome rolled the claim and fn's writes back to its
			// savepoint; the panic goes on.
			_ = d.Rollback(ctx, tx)
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic})
		}
	}()
	// MutateOutcomeCommit commits tx too: on pgxv5 the COMMIT then
	// travels with the stored answer (and BEGIN with the claim).
	res, err := ledger.MutateOutcomeCommit(ctx, h.l, tx, req, func(context.Context) (ledger.Outcome, error) {
		ran = true
		cfg.emit(p, ledger.Event{Kind: ledger.EventClaimed})
		first = h.run(w, fr, tx)
		if first.tooLarge() || !cfg.shouldStore(first.status) {
			return ledger.Outcome{}, &errNotStored{first}
		}
		return ledger.Outcome{Kind: KindResponse, Status: first.status, Header: first.outcomeHeader(cfg.allow), Body: first.body}, nil
	})
	finished = true
	var notStored *errNotStored
	switch {
	case errors.As(err, &notStored):
		_ = d.Rollback(ctx, tx)
		if notStored.buf.tooLarge() {
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonOversized, Status: http.StatusInternalServerError})
		} else {
			cfg.emit(p, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonStatus, Status: notStored.buf.status})
		}
		h.send(w, p.r, notStored.buf)
		return
	case err != nil && ran:
		// fn ran, and then the transaction failed: storing the answer,
		// releasing the savepoint or committing (the store failed, or fn
		// ended the transaction itself). fn's writes and the claim are
		// gone.
		_ = d.Rollback(ctx, tx)
		h.failed(w, p, err)
		return
	case err != nil:
		// The claim failed, or a replay's commit.
		_ = d.Rollback(ctx, tx)
		// Refuse lets no request through without FailOpen: TxHandler's
		// handler cannot run without the store.
		cfg.answer(w, p, lifecycle.Refuse(r.Context(), err, lifecycle.Config{}), h.l.Lease())
		return
	}
	if res.Replayed {
		cfg.replay(w, p, res.Value)
		return
	}
	cfg.emit(p, ledger.Event{Kind: ledger.EventStored, Status: first.status})
	h.send(w, p.r, first)
}

// lookup answers a retry whose record stands (a replay, a live lease, a
// reused key) from a plain read before BEGIN when BEGIN takes the write
// lock (SQLite's immediate transactions: driver.Driver.BeginLocks), since
// replays would otherwise queue behind every writer and one another. It
// reports whether it answered; a read that failed is answered as a failed
// claim (503). No record, or one that may be taken over, goes on to the
// transaction, which decides as before. Where BEGIN locks nothing
// (PostgreSQL) the claim in the transaction writes nothing for a record
// that stands, and the extra round trip would slow first requests, so
// only the ledger's cache is asked (ledger.Ledger.Recall), which costs
// none and spares a replay its transaction.
func (h *txHandler[TTx]) lookup(w http.ResponseWriter, p *prepared, r *http.Request) bool {
	look := h.l.Lookup
	if !h.l.Driver().BeginLocks() {
		look = h.l.Recall
	}
	req := p.req
	if underMiddleware(r, h.l, req) {
		req.Key = nestedKey(req.Key) // as in ServeHTTP
	}
	c, err := look(r.Context(), req)
	switch {
	case err != nil:
		h.cfg.answer(w, p, lifecycle.Refuse(r.Context(), err, lifecycle.Config{}), h.l.Lease())
		return true
	case c == nil:
		return false
	}
	h.cfg.replay(w, p, c.Replay.Outcome)
	return true
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
