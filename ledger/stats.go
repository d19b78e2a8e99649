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
	// Oldest and Newest are the earliest and latest CreatedAt among all
	// records; both are zero when the table is empty.
	Oldest, Newest time.Time
}

// Stats counts the records in db. It reads the whole table, so it is meant
// for operators and monitoring, not for a request's path. Errors are
// wrapped with "ledger: stats:".
func (l *Ledger) Stats(ctx context.Context, db DBTX) (Stats, error) {
	if err := l.checkCall(ctx, db); err != nil {
		return Stats{}, err
	}
	now, err := l.eng.now(ctx, db)
	if err != nil {
		return Stats{}, wrapOp("stats", err)
	}
	row, err := l.eng.stats(ctx, db, now)
	if err != nil {
		return Stats{}, wrapOp("stats", err)
	}
	s := Stats{InFlight: row.inFlight, Completed: row.completed, Expired: row.expired}
	if row.inFlight+row.completed > 0 {
		s.Oldest, s.Newest = fromMillis(row.oldest), fromMillis(row.newest)
	}
	return s, nil
}
