package idemgrpc

import "github.com/idemledger/idemledger/lifecycle"

// Ledger is what the server interceptor needs of a ledger: the lifecycle's
// lease-mode operations ([lifecycle.Ledger], with the contracts of the
// ledger.Ledger methods of the same names) and the longest key. A
// *ledger.Ledger of any driver implements it. An implementation must be
// safe for concurrent use.
type Ledger interface {
	lifecycle.Ledger
	// MaxKeyLength is the longest idempotency key Claim accepts, in bytes
	// (ledger.Options.MaxKeyLength, the one key-length setting). The
	// server interceptor reads it once, when it is made, and refuses a
	// longer key itself, before Scope and Claim; so it must not exceed
	// what Claim accepts. Zero or less is read as
	// ledger.DefaultMaxKeyLength (a *ledger.Ledger never reports it).
	MaxKeyLength() int
}
