package ledger

import (
	"context"
	"time"
)

// Stats describes the ledger's table at one moment, for monitoring and for
// the idemledger stats command.
type Stats struct {
	// InFlight and Completed count records by state, expired ones included.
	InFlight, Completed int64
	// Expired counts records that Claim already ignores and Purge would
	// delete now (see Record.Expired).
	Expired int64
	// LeaseExpired counts the records in flight whose lease has run out:
	// their holder is presumed gone (a crash, a kill), and a retry with the
	// same fingerprint takes them over. Those past their ExpiresAt too are
	// in Expired as well.
	LeaseExpired int64
	// Committed counts the records in flight that passed their commit point
	// (Ledger.Commit) without an outcome yet. Those whose lease ran out
	// (counted in LeaseExpired too) lost their holder after its effect:
	// retries get ErrCommitted, and an operator may want to look the
	// effect up (idemledger inspect -in-flight lists them).
	Committed int64
	// Oldest and Newest are the earliest and latest CreatedAt among all
	// records; both are zero when the table is empty.
	Oldest, Newest time.Time
}

// Stats counts the records, on the driver's pool. It reads the whole table, so it is meant
// for operators and monitoring, not for a request's path. Errors are
// wrapped with "ledger: stats:".
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
	s := Stats{InFlight: row.InFlight, Completed: row.Completed, Expired: row.Expired, LeaseExpired: row.LeaseExpired, Committed: row.Committed}
	if row.InFlight+row.Completed > 0 {
		s.Oldest, s.Newest = fromMillis(row.Oldest), fromMillis(row.Newest)
	}
	return s, nil
}
