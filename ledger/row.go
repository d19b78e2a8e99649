package ledger

import (
	"fmt"

	"github.com/idemledger/idemledger/driver"
)

// record checks and decodes a row as the driver read it.
func record(row *driver.Row) (*Record, error) {
	r := &Record{
		Scope:     row.Scope,
		Key:       row.Key,
		Fence:     row.Fence,
		CreatedAt: fromMillis(row.CreatedAt),
		ExpiresAt: fromMillis(row.ExpiresAt),
	}
	if row.CommittedAt != 0 {
		r.CommittedAt = fromMillis(row.CommittedAt)
	}
	if len(row.Fingerprint) != len(r.Fingerprint) {
		return nil, fmt.Errorf("stored fingerprint is %d bytes", len(row.Fingerprint))
	}
	copy(r.Fingerprint[:], row.Fingerprint)
	switch row.State {
	case "in_flight":
		r.State = StateInFlight
		r.LeaseExpiresAt = fromMillis(row.LeaseExpiresAt)
	case "completed":
		r.State = StateCompleted
		r.CompletedAt = fromMillis(row.CompletedAt)
		r.Outcome.Kind = row.Kind
		r.Outcome.Status = int(row.Status)
		if len(row.Body) > 0 {
			r.Outcome.Body = row.Body
		}
		if row.Headers != nil {
			h, err := decodeHeader(row.Headers)
			if err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
			r.Outcome.Header = h
		}
	default:
		return nil, fmt.Errorf("stored state %q", row.State)
	}
	return r, nil
}
