package ledger

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// Lookup answers req from one plain read of its record on the driver's
// pool, as [Ledger.Claim] would answer when the record stands, but claims
// nothing: a Claim whose Replay is the completed record, [ErrKeyReused], or
// an *InFlightError. It returns a nil Claim and no error when the key has
// no record or one that a claim may take over: claim it then (Claim,
// Mutate). It never writes and takes no lock; see the package doc,
// Replays, for why its answer is safe to act on. A completed record the
// ledger's cache holds is answered from it, without the read (see the
// package doc, The cache of completed outcomes). idemhttp's TxHandler
// calls it before beginning its transaction on SQLite, where BEGIN takes
// the database's write lock. Bad input returns an error wrapping
// [ErrInvalidRequest] before the database is used.
func (l *Ledger[TTx]) Lookup(ctx context.Context, req Request) (*Claim, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.check(req); err != nil {
		return nil, err
	}
	return l.throughCache(ctx, req, "lookup", func(st *stood) (*Claim, error) {
		got, err := l.db.Get(ctx, driver.GetParams{Scope: req.Scope, Key: req.Key, Now: l.clock()})
		if err != nil {
			return nil, wrapOp("lookup", classify(err))
		}
		if got.Row == nil {
			return nil, nil
		}
		c, err := standing(req, got.Row, got.Now)
		if err != nil && !isAnswer(err) {
			return nil, wrapOp("lookup", err)
		}
		if c != nil || err != nil {
			st.note(got.Row, got.Now)
		}
		return c, err
	})
}

// Recall answers req from the ledger's cache of completed outcomes alone,
// never the database: a Claim whose Replay is the completed record, or
// [ErrKeyReused], when the cache holds req's key (see the package doc, The
// cache of completed outcomes); a nil Claim and no error when it does not,
// and always when the cache is off ([Options.CacheBytes]). A hit is reported
// to [Options.Observer] (Op "recall"); nothing is reported otherwise, as
// nothing was read. It costs no round trip, so a layer may call it before
// work that a hit makes needless: idemhttp's TxHandler calls it before
// beginning its transaction. Bad input returns an error wrapping
// ErrInvalidRequest.
func (l *Ledger[TTx]) Recall(ctx context.Context, req Request) (*Claim, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.check(req); err != nil {
		return nil, err
	}
	if l.cache == nil {
		return nil, nil
	}
	start := time.Now()
	mono, wall := l.cacheClock(start)
	c, ok, err := l.recall(req, mono, wall)
	if ok {
		l.observe(ctx, EventCacheHit, "recall", start)
	}
	return c, err
}
