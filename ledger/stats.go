package ledger

import (
	"context"
	"time"
)

// Stats describes the ledger's table at one moment, for monitoring and for
// the idemledger stats command.
type Stats struct {
	// InFlight and Completed count records by state, expired ones included.
	// Completed is an estimate when Estimated is set.
	InFlight, Completed int64
	// Released counts the records that [Ledger.Release] ended: they hold no
	// operation (any claim takes them over, Get does not find them), only
	// the key's fence and count of failed runs, until Purge deletes them.
	// Exact on every engine.
	Released int64
	// Estimated reports that Completed is the engine's estimate rather than
	// a count: on PostgreSQL, the planner's row count as of the table's
	// last VACUUM or ANALYZE (autovacuum's included), less InFlight, since
	// counting millions of rows takes seconds. Every other figure but
	// Expired (see ExpiredEstimated) is exact on every engine.
	Estimated bool
	// Expired counts records that Claim already ignores and Purge would
	// delete now (see [Record.Expired]), of either state: each is counted in
	// InFlight or Completed too. It is an estimate when ExpiredEstimated
	// is set.
	Expired int64
	// ExpiredEstimated reports that Expired is an estimate. Past 100,000
	// expired records, which would otherwise be counted one entry of the
	// expiry index at a time (seconds at millions): on SQLite it is
	// estimated from the rowids of the oldest record and of the expired
	// record that expires last, since records are numbered as they are
	// inserted and expire in about that order (records deleted out of that
	// order make it high); on PostgreSQL it is the planner's
	// estimate, as of the table's last ANALYZE. Below that, and on MySQL,
	// Expired is a count.
	ExpiredEstimated bool
	// LeaseExpired counts the records in flight whose lease has run out:
	// their holder is presumed gone (a crash, a kill), and a retry with the
	// same fingerprint takes them over. Those past their ExpiresAt too are
	// in Expired as well.
	LeaseExpired int64
	// Committed counts the records in flight that passed their commit point
	// ([Ledger.Commit]) without an outcome yet. Those whose lease ran out
	// (counted in LeaseExpired too) lost their holder after its effect:
	// retries get [ErrCommitted], and an operator may want to look the
	// effect up (idemledger inspect -in-flight lists them).
	Committed int64
	// Oldest and Newest are the earliest and latest CreatedAt among all
	// records; both are zero when the table is empty.
	Oldest, Newest time.Time
	// PurgeBacklog is how long the expired record that expired first has
	// been waiting for Purge (zero when none is expired). When it grows
	// past the interval between two purges, Purge is falling behind: the
	// table grows by the records it has not deleted, and each purge has
	// more to do. Run it more often, or longer.
	PurgeBacklog time.Duration
	// Steps counts the recorded steps of operations ([Ledger.RecordStep]),
	// those of operations that ended and Purge has not deleted included.
	Steps int64
}

// Stats counts the records, on the driver's pool. It reads indexes, not
// the records themselves: its cost grows with the records in flight and
// the expired ones (up to 100,000 of them on SQLite and PostgreSQL, see
// [Stats.ExpiredEstimated]), and with the table's size only in the count of
// all records (SQLite counts the entries of an index page by page;
// PostgreSQL estimates, see [Stats.Estimated]). It is meant for operators and monitoring, not for a
// request's path. Errors are wrapped with "ledger: stats:".
func (l *Ledger[TTx]) Stats(ctx context.Context) (Stats, error) {
	if err := l.checkCall(ctx); err != nil {
		return Stats{}, err
	}
	now, err := l.nowMillis(ctx, l.db)
	if err != nil {
		return Stats{}, wrapOp("stats", classify(err))
	}
	row, err := l.db.Stats(ctx, now)
	if err != nil {
		return Stats{}, wrapOp("stats", classify(err))
	}
	s := Stats{
		InFlight: row.InFlight, Completed: row.Completed, Released: row.Released, Estimated: row.CompletedEstimated,
		Expired: row.Expired, ExpiredEstimated: row.ExpiredEstimated, LeaseExpired: row.LeaseExpired, Committed: row.Committed,
	}
	if row.Oldest != 0 || row.Newest != 0 || row.InFlight > 0 || (!row.CompletedEstimated && row.Completed > 0) {
		s.Oldest, s.Newest = fromMillis(row.Oldest), fromMillis(row.Newest)
	}
	if s.Steps, err = l.db.CountSteps(ctx); err != nil {
		return Stats{}, wrapOp("stats", classify(err))
	}
	if row.OldestExpired != 0 && row.OldestExpired < now {
		s.PurgeBacklog = time.Duration(now-row.OldestExpired) * time.Millisecond
	}
	return s, nil
}
