package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"time"
	"unicode/utf8"

	"github.com/idemledger/idemledger/ledger"
)

// The -json output of stats and inspect. Field names are snake_case and
// stable: scripts and monitoring read them. Times are RFC 3339 strings
// with milliseconds in UTC, or null where the text output shows "-".

type statsJSON struct {
	// InFlight and Completed count records by state, the expired ones
	// too; Expired counts those, of either state, that purge would delete.
	InFlight  int64 `json:"in_flight"`
	Completed int64 `json:"completed"`
	// Released counts the records Release ended (ledger.Stats.Released):
	// they keep the key's fence until purged.
	Released int64 `json:"released"`
	Expired  int64 `json:"expired"`
	// LeaseExpired counts the records in flight whose lease ran out.
	LeaseExpired int64 `json:"lease_expired"`
	// Committed counts the records in flight that passed their commit
	// point without an outcome.
	Committed int64 `json:"committed"`
	// CompletedEstimated and ExpiredEstimated report that completed and
	// expired are the engine's estimates, not counts (ledger.Stats).
	CompletedEstimated bool `json:"completed_estimated"`
	ExpiredEstimated   bool `json:"expired_estimated"`
	// PurgeBacklog is how long, in milliseconds, the record that expired
	// first has waited for a purge; 0 when none is expired. Growing past
	// the interval between purges, it says purge is falling behind.
	PurgeBacklog int64   `json:"purge_backlog_ms"`
	Oldest       *string `json:"oldest_created"`
	Newest       *string `json:"newest_created"`
	// Steps counts the recorded steps of operations (ledger.Stats.Steps).
	Steps int64 `json:"steps"`
}

type recordJSON struct {
	Scope          string  `json:"scope"`
	Key            string  `json:"key"`
	State          string  `json:"state"`
	Fingerprint    string  `json:"fingerprint"`
	Fence          int64   `json:"fence"`
	CreatedAt      *string `json:"created_at"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
	CompletedAt    *string `json:"completed_at"`
	ExpiresAt      *string `json:"expires_at"`
	CommittedAt    *string `json:"committed_at"`
	// Kind is the outcome's kind; omitted for none.
	Kind       string           `json:"kind,omitempty"`
	Status     *int             `json:"status"`
	Header     map[string][]any `json:"header,omitempty"`
	Body       *string          `json:"body,omitempty"`
	BodyBase64 *string          `json:"body_base64,omitempty"`
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

func newRecordJSON(r *ledger.Record) recordJSON {
	j := recordJSON{
		Scope: r.Scope, Key: r.Key, State: r.State.String(),
		Fingerprint: r.Fingerprint.String(), Fence: r.Fence,
		CreatedAt: jsonTime(r.CreatedAt), LeaseExpiresAt: jsonTime(r.LeaseExpiresAt),
		CompletedAt: jsonTime(r.CompletedAt), ExpiresAt: jsonTime(r.ExpiresAt),
		CommittedAt: jsonTime(r.CommittedAt),
	}
	if r.State == ledger.StateInFlight {
		return j
	}
	status := r.Outcome.Status
	j.Kind, j.Status = r.Outcome.Kind, &status
	if len(r.Outcome.Header) > 0 {
		j.Header = make(map[string][]any, len(r.Outcome.Header))
		for name, vs := range r.Outcome.Header {
			for _, v := range vs {
				j.Header[name] = append(j.Header[name], headerValueJSON(v))
			}
		}
	}
	if utf8.Valid(r.Outcome.Body) {
		// encoding/json would turn bytes that are not UTF-8 into U+FFFD,
		// so such a body is not shown as a string.
		b := string(r.Outcome.Body)
		j.Body = &b
	} else {
		b := base64.StdEncoding.EncodeToString(r.Outcome.Body)
		j.BodyBase64 = &b
	}
	return j
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// headerValueJSON is a header value as a JSON string, or, when it is not
// UTF-8 (obs-text, RFC 9110 Section 5.5), as {"base64": "..."}: as a
// string, encoding/json would replace its bytes with U+FFFD.
func headerValueJSON(v string) any {
	if utf8.ValidString(v) {
		return v
	}
	return map[string]string{"base64": base64.StdEncoding.EncodeToString([]byte(v))}
}

// recordsJSON is a list of records as a JSON array ([] when empty, never
// null).
func recordsJSON(rs []*ledger.Record) []recordJSON {
	out := make([]recordJSON, 0, len(rs))
	for _, r := range rs {
		out = append(out, newRecordJSON(r))
	}
	return out
}
