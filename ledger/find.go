package ledger

import (
	"context"

	"github.com/idemledger/idemledger/driver"
)

// Find returns up to limit records with key, whatever their scope, ordered
// by scope: an operator's search for a key a client reported. It reads the
// whole table (the primary key begins with the scope), so it is not for a
// request's path. Expired records that Purge has not deleted are included
// (see [Record.Expired]); records that Release ended are not (they hold no
// operation, only the key's fence). A bad key or a limit below 1 returns an error
// wrapping [ErrInvalidRequest] before the database is used.
func (l *Ledger[TTx]) Find(ctx context.Context, key string, limit int) ([]*Record, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.checkKey("", key); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, invalidRequest("find limit %d is below 1", limit)
	}
	got, err := l.db.FindKey(ctx, key, limit)
	return records("find", got, err)
}

// InFlight returns up to limit records in flight, oldest claim first, for
// operators: a record that stays in flight long after its lease ran out is
// a request whose holder died and that no retry has taken over. Records
// whose lease has run out are included (see [Record.LeaseExpiresAt]). It
// reads the whole table. A limit below 1 returns an error wrapping
// ErrInvalidRequest.
func (l *Ledger[TTx]) InFlight(ctx context.Context, limit int) ([]*Record, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, invalidRequest("in-flight limit %d is below 1", limit)
	}
	got, err := l.db.ListInFlight(ctx, limit)
	return records("in flight", got, err)
}

func records(op string, got []driver.Row, err error) ([]*Record, error) {
	if err != nil {
		return nil, wrapOp(op, classify(err))
	}
	out := make([]*Record, 0, len(got))
	for i := range got {
		r, err := record(&got[i])
		if err != nil {
			return nil, wrapOp(op, err)
		}
		out = append(out, r)
	}
	return out, nil
}
