package ledger

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// storedRow is a ledger row as both engines' Get queries return it; the
// sqlc row types of both convert to it.
type storedRow struct {
	Scope          string
	Key            string
	Fingerprint    []byte
	State          string
	LeaseToken     sql.NullString
	LeaseExpiresAt sql.NullInt64
	Fence          int64
	Status         sql.NullInt64
	Headers        []byte
	Body           []byte
	CreatedAt      int64
	CompletedAt    sql.NullInt64
	ExpiresAt      int64
}

// record checks and decodes a stored row.
func (row storedRow) record() (*Record, error) {
	r := &Record{
		Scope:     row.Scope,
		Key:       row.Key,
		Fence:     row.Fence,
		CreatedAt: fromMillis(row.CreatedAt),
		ExpiresAt: fromMillis(row.ExpiresAt),
	}
	if len(row.Fingerprint) != len(r.Fingerprint) {
		return nil, fmt.Errorf("stored fingerprint is %d bytes", len(row.Fingerprint))
	}
	copy(r.Fingerprint[:], row.Fingerprint)
	switch row.State {
	case "in_flight":
		r.State = StateInFlight
		r.LeaseExpiresAt = fromMillis(row.LeaseExpiresAt.Int64)
	case "completed":
		r.State = StateCompleted
		r.CompletedAt = fromMillis(row.CompletedAt.Int64)
		r.Outcome.Status = int(row.Status.Int64)
		if len(row.Body) > 0 {
			r.Outcome.Body = row.Body
		}
		if row.Headers != nil {
			if err := json.Unmarshal(row.Headers, &r.Outcome.Header); err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("stored state %q", row.State)
	}
	return r, nil
}

// headerJSON keeps http.Header as its JSON object: names sorted, the
// values of each name in their original order; nil for no header.
func headerJSON(out Outcome) ([]byte, error) {
	if out.Header == nil {
		return nil, nil
	}
	return json.Marshal(out.Header)
}
