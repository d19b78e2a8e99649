package ledger

import (
	"strconv"
	"time"

	"github.com/idemledger/idemledger/hash"
)

// State is the state of a record.
type State int

const (
	// StateInFlight: a request holds the key under a lease and has not
	// stored an outcome yet.
	StateInFlight State = 1
	// StateCompleted: the outcome is stored and replays until the record
	// expires.
	StateCompleted State = 2
)

// String returns "in_flight" or "completed", the values kept in the
// database's state column.
func (s State) String() string {
	switch s {
	case StateInFlight:
		return "in_flight"
	case StateCompleted:
		return "completed"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is the result stored by Complete and returned on replay.
type Outcome struct {
	// Kind names what the outcome is, so that its reader knows how to
	// read Status, Header and Body without guessing from them: [KindValue]
	// for Mutate's, "http" and "http.not_stored" for idemhttp's, "grpc"
	// for idemgrpc's and idemconnect's. The writer chooses it; at most
	// [MaxKindLength] bytes of printable ASCII. An empty Kind is stored as
	// none and read back as "": records completed before schema version 3
	// have none.
	Kind string
	// Status is a status code, such as an HTTP status; [KindValue] leaves
	// it 0.
	Status int
	// Header is the outcome's metadata, opaque to the ledger: named lists
	// of values, such as the replayable header lines of an HTTP answer
	// (an http.Header is assignable to it). For each name the order of the
	// values is kept, and each value byte for byte, valid UTF-8 or not
	// (HTTP allows bytes 0x80 to 0xFF in field values, RFC 9110 Section
	// 5.5). The caller chooses what is safe to replay (never Set-Cookie).
	// A nil Header is stored as none and read back as nil. Names must be
	// valid UTF-8; Complete refuses others with ErrInvalidRequest.
	Header map[string][]string
	// Body is the response body. Mutate stores the callback's value as JSON
	// here. A nil or empty Body is read back as nil.
	Body []byte
}

// KindValue is the Kind of the outcomes Mutate stores: the callback's value
// as JSON in Body, Status 0, no Header.
const KindValue = "value"

// MaxKindLength is the longest [Outcome.Kind], in bytes.
const MaxKindLength = 64

// Record is a row of the ledger as stored, returned by Get and, on replay,
// inside a Claim. Times are UTC with millisecond resolution.
type Record struct {
	Scope       string
	Key         string
	Fingerprint hash.Digest
	State       State
	// Fence grows by one every time a claim takes the row over.
	Fence int64
	// LeaseExpiresAt is when the in-flight lease runs out; zero when
	// completed.
	LeaseExpiresAt time.Time
	// Outcome is the stored result; zero while in flight.
	Outcome     Outcome
	CreatedAt   time.Time
	CompletedAt time.Time // zero while in flight
	// ExpiresAt is when the record stops counting: a completed record
	// replays until then, after it the next claim with the key starts
	// afresh and Purge may delete it. For an in-flight record it is the
	// claim time plus the TTL, and it takes effect only once the lease has
	// run out too.
	ExpiresAt time.Time
	// CommittedAt is when a holder marked the commit point ([Ledger.Commit]);
	// zero when none did. A completed record keeps it.
	CommittedAt time.Time
}

// Expired reports whether the record no longer counts at time now: its
// ExpiresAt has passed and, when in flight, its lease has run out. Claim
// takes an expired record over for any request; Purge deletes it.
func (r *Record) Expired(now time.Time) bool {
	return expired(r.State, r.ExpiresAt.UnixMilli(), r.LeaseExpiresAt.UnixMilli(), now.UnixMilli())
}

// expired mirrors the SQL predicate shared by the Claim and PurgeBatch
// queries; times are Unix milliseconds.
func expired(s State, expiresAt, leaseExpiresAt, now int64) bool {
	return expiresAt <= now && (s == StateCompleted || leaseExpiresAt <= now)
}
