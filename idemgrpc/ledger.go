package idemgrpc

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// Ledger is what the server interceptor needs of a ledger: the lease-mode
// operations, bound to their database, and the lease duration. Their
// contracts are those of the ledger package's methods of the same names
// (ledger.Ledger.Claim and the others): Claim answers a lease, a replay, or
// an error matching ledger.ErrInFlight, ledger.ErrKeyReused,
// ledger.ErrInvalidRequest or ledger.ErrRetryable; Complete, Release and
// Extend fail with ledger.ErrLeaseLost once the lease is lost. An
// implementation must be safe for concurrent use.
type Ledger interface {
	Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error)
	Complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) error
	Release(ctx context.Context, c *ledger.Claim) error
	Extend(ctx context.Context, c *ledger.Claim) error
	// Lease is how long a claim holds its key unless extended.
	Lease() time.Duration
}
