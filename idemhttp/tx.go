package idemhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/idemledger/idemledger/ledger"
)

// TxFunc is a handler whose effects are all writes through tx, a
// transaction of the ledger's database (*sql.Tx or pgx.Tx, by driver). It
// must leave tx open: TxHandler commits it after storing the response, and
// a TxFunc that commits or rolls back tx itself breaks exactly once (see
// ledger.Mutate).
type TxFunc[TTx any] func(w http.ResponseWriter, r *http.Request, tx TTx)

// TxHandler serves fn exactly once per idempotency key, for handlers whose
// effects are all in the ledger's database: it begins a transaction there
// (through the ledger's driver), runs fn inside
// ledger.MutateOutcome (so the claim, fn's writes and the stored response
// share one savepoint), and commits. A retry after the commit gets the stored
// response; a retry after a crash or rollback finds no record and runs fn
// again, with none of the first attempt's writes left behind.
//
// The stored response is a ledger.Outcome as Middleware stores it
// (ledger.MutateOutcome), so a key may move between the two forms, in a
// rolling deployment for instance: a retry replays the answer that the
// other form stored. Under a Middleware (a route of a ServeMux that the
// middleware wraps), TxHandler records its transaction under a key derived
// from the middleware's, so that both work and the route keeps exactly once
// for its database effects.
//
// fn's response is buffered and sent only after the commit, so a client
// never sees an answer whose effects were then lost. Flush and Hijack are
// not supported (http.ResponseController reports http.ErrNotSupported).
// fn reads the key and the scope with ClaimFrom (Fence 0: the transaction
// guards fn's writes). Commit does not change TxHandler's own record, whose
// writes commit or vanish with the transaction; under a Middleware it marks
// the Middleware's claim.
// A retry of a completed record is answered from a plain read, as are a
// key held by a lease-mode claim and a reused key: on SQLite before BEGIN,
// so it never waits for the write lock; on PostgreSQL the claim in the
// transaction writes nothing.
// The key, the scope, the fingerprint and the refusals are as for
// Middleware, with these differences:
//
//   - The transaction commits when opts.ShouldStore accepts the status, and
//     is rolled back otherwise (fn's writes vanish with the claim, and the
//     client gets fn's answer). Requests that pass through unprotected (no
//     key, or a method outside opts.Methods) follow the same rule, without
//     the ledger.
//   - A response longer than opts.MaxBodyBytes cannot be stored, so the
//     transaction is rolled back and the client gets 500 (CodeResponseTooLarge):
//     raise the limit for such handlers.
//   - A concurrent duplicate waits for the first transaction (SQLite's write
//     lock; immediate transactions) and then replays, rather than answering
//     409; 409 remains for a key held by a lease-mode claim. A duplicate
//     that waits longer than the database's busy timeout gets 503 busy
//     (CodeBusy, with Retry-After).
//   - On SQLite, fn's whole run holds the database's write lock, for every
//     process that opens the file: every other TxHandler request, every
//     Middleware claim and completion, and every other writer wait for it,
//     and those that wait past busy_timeout get 503 busy. Keep fn short
//     (no calls to other services inside it), or use PostgreSQL, whose
//     locks are per row.
//   - FailurePolicy does not apply: the ledger and fn's effects live in the
//     same database, so when one is unreachable so is the other, and the
//     answer is 503. A failed commit is 503 too.
//
// The transaction begins and commits with a context the client's disconnect
// does not cancel; fn should use r.Context() for its own statements if it
// wants them to stop when the client goes. If fn panics the transaction is
// rolled back and the panic goes on.
//
// TxHandler panics when l or fn is nil, or opts.Scope is nil.
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
	p, ok := cfg.prepare(w, r)
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
		h.unavailable(w, r, p, err)
		return
	}
	defer d.Rollback(ctx, tx) // after a commit, a no-op

	if p == nil {
		buf := h.run(w, r, tx)
		if buf.tooLarge() || !cfg.shouldStore(buf.status) {
			_ = d.Rollback(ctx, tx)
		} else if err := d.Commit(ctx, tx); err != nil {
			h.unavailable(w, r, nil, err)
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
	res, err := ledger.MutateOutcome(ctx, h.l, tx, req, func(context.Context) (ledger.Outcome, error) {
		first = h.run(w, fr, tx)
		if first.tooLarge() || !cfg.shouldStore(first.status) {
			return ledger.Outcome{}, &errNotStored{first}
		}
		return ledger.Outcome{Status: first.status, Header: first.outcomeHeader(cfg.allow), Body: first.body}, nil
	})
	var notStored *errNotStored
	switch {
	case errors.As(err, &notStored):
		_ = d.Rollback(ctx, tx)
		h.send(w, p.r, notStored.buf)
		return
	case err != nil:
		_ = d.Rollback(ctx, tx)
		h.refuseLedger(w, p, err)
		return
	}
	if err := d.Commit(ctx, tx); err != nil {
		h.unavailable(w, p.r, p, err)
		return
	}
	if res.Replayed {
		cfg.replay(w, p.r, res.Value)
		return
	}
	h.send(w, p.r, first)
}

// lookup answers a retry whose record stands (a replay, a live lease, a
// reused key) from a plain read on SQLite, before BEGIN: SQLite's immediate
// transactions take the database's write lock at BEGIN, so replays would
// otherwise queue behind every writer and one another. It reports whether
// it answered; a read that failed is answered as a failed claim (503).
// No record, or one that may be taken over, goes on to the transaction,
// which decides as before. On PostgreSQL the claim in the transaction writes nothing for
// a record that stands, and the extra round trip would slow first
// requests, so it is skipped there.
func (h *txHandler[TTx]) lookup(w http.ResponseWriter, p *prepared, r *http.Request) bool {
	if h.l.Engine() != "sqlite" {
		return false
	}
	req := p.req
	if underMiddleware(r, h.l, req) {
		req.Key = nestedKey(req.Key) // as in ServeHTTP
	}
	c, err := h.l.Lookup(r.Context(), req)
	switch {
	case err != nil:
		h.refuseLedger(w, p, err)
		return true
	case c == nil:
		return false
	}
	h.cfg.replay(w, p.r, c.Replay.Outcome)
	return true
}

// refuseLedger answers an error of the ledger: a refusal (in flight, key
// reused) or 503.
func (h *txHandler[TTx]) refuseLedger(w http.ResponseWriter, p *prepared, err error) {
	if h.cfg.refuseLedger(w, p, err, h.l.Lease()) {
		return
	}
	// refuseLedger lets a request through only under FailOpen, which
	// TxHandler does not honour.
	h.cfg.refuse(w, p.r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Detail: "the idempotency store is unavailable; retry later", Err: err})
}

// run calls fn with a buffering writer.
func (h *txHandler[TTx]) run(w http.ResponseWriter, r *http.Request, tx TTx) *buffer {
	buf := newBuffer(w.Header(), h.cfg.maxBody)
	h.fn(buf, r, tx)
	buf.finish()
	return buf
}

func (h *txHandler[TTx]) send(w http.ResponseWriter, r *http.Request, buf *buffer) {
	if buf.tooLarge() {
		h.cfg.emit(r, nil, event{kind: evTxTooLarge, limit: h.cfg.maxBody})
		h.cfg.refuse(w, r, Refusal{Status: http.StatusInternalServerError, Code: CodeResponseTooLarge,
			Detail: "the response is longer than " + strconv.FormatInt(h.cfg.maxBody, 10) + " bytes and could not be stored"})
		return
	}
	buf.writeTo(w)
}

func (h *txHandler[TTx]) unavailable(w http.ResponseWriter, r *http.Request, p *prepared, err error) {
	if busy(err) {
		h.cfg.refuseBusy(w, r, p, err)
		return
	}
	h.cfg.emit(r, p, event{kind: evStoreUnavailable, err: err})
	h.cfg.refuse(w, r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Detail: "the idempotency store is unavailable; retry later", Err: err})
}
