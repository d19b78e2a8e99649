package idemgrpc

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// Ledger is what the server interceptor needs of a ledger: the lease-mode
// operations, bound to their database, the lease duration and the longest
// key. Their contracts are those of the ledger package's methods of the
// same names (ledger.Ledger.Claim and the others): Claim answers a lease, a
// replay, or an error matching ledger.ErrInFlight, ledger.ErrKeyReused,
// ledger.ErrInvalidRequest or ledger.ErrRetryable; Complete, Release and
// Extend fail with ledger.ErrLeaseLost once the lease is lost. An
// implementation must be safe for concurrent use.
type Ledger interface {
	Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error)
	Complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) error
	Release(ctx context.Context, c *ledger.Claim) error
	Extend(ctx context.Context, c *ledger.Claim) error
	// Commit writes the commit point of c into its record
	// (ledger.Ledger.Commit).
	Commit(ctx context.Context, c *ledger.Claim) error
	// Lease is how long a claim holds its key unless extended.
	Lease() time.Duration
	// MaxKeyLength is the longest idempotency key Claim accepts, in bytes
	// (ledger.Options.MaxKeyLength, the one key-length setting). The
	// server interceptor reads it once, when it is made, and refuses a
	// longer key itself, before Scope and Claim; so it must not exceed
	// what Claim accepts. Zero or less is read as
	// ledger.DefaultMaxKeyLength (a *ledger.Ledger never reports it).
	MaxKeyLength() int
}
