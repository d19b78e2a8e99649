package ledger

import (
	"context"
	"unicode"
	"unicode/utf8"

	"github.com/idemledger/idemledger/hash"
)

// Request names the operation to run at most once.
type Request struct {
	// Scope is who owns the key (a user, a tenant, an API key): records
	// never cross scopes, so two clients that pick the same key do not
	// collide. It may be empty (one shared scope). At most [MaxScopeLength]
	// bytes of valid UTF-8 without control characters.
	Scope string

	// Key is the client's idempotency key, as received: 1 to
	// [Options.MaxKeyLength] bytes (255 by default) of printable ASCII,
	// 0x20 to 0x7E.
	Key string

	// Fingerprint identifies the payload (see package hash). A retry with
	// the same key must carry the same fingerprint, or Claim answers
	// ErrKeyReused. The zero Digest is refused.
	Fingerprint hash.Digest

	// Recover lets the claim take over a record in flight whose holder
	// passed its commit point ([Ledger.Commit]) and vanished before storing
	// an outcome, once its lease has run out. The operation then runs
	// again knowing it ([Claim.CommittedAt]), so that it can look its effect
	// up instead of repeating it: Stripe's recovery point. Without it such
	// a claim returns a *CommittedError.
	Recover bool
}

// checkCall refuses what no operation can run with: a nil ledger or a nil
// context.
func (l *Ledger[TTx]) checkCall(ctx context.Context) error {
	switch {
	case l == nil:
		return invalidRequest("nil ledger")
	case ctx == nil:
		return invalidRequest("nil context")
	}
	return nil
}

// check refuses bad input before any database work. The messages never
// quote the key or the scope, which must not reach logs.
func (l *Ledger[TTx]) check(req Request) error {
	if err := l.checkKey(req.Scope, req.Key); err != nil {
		return err
	}
	if req.Fingerprint.IsZero() {
		return invalidRequest("zero fingerprint")
	}
	return nil
}

func (l *Ledger[TTx]) checkKey(scope, key string) error {
	switch {
	case key == "":
		return invalidRequest("empty key")
	case len(key) > l.maxKey:
		return invalidRequest("key is %d bytes, over the maximum of %d", len(key), l.maxKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return invalidRequest("key byte %d is not printable ASCII", i)
		}
	}
	return CheckScope(scope)
}

// CheckScope reports whether scope is acceptable as a Request's Scope: at
// most [MaxScopeLength] bytes of valid UTF-8 without control characters.
// The error wraps [ErrInvalidRequest] and never quotes the scope. Callers
// that compute scopes (idemhttp's Options.Scope) use it to tell a bad
// scope, their own fault, from a bad key, the client's.
func CheckScope(scope string) error {
	if len(scope) > MaxScopeLength {
		return invalidRequest("scope is %d bytes, over the maximum of %d", len(scope), MaxScopeLength)
	}
	if !utf8.ValidString(scope) {
		return invalidRequest("scope is not valid UTF-8")
	}
	for i, r := range scope {
		if unicode.IsControl(r) {
			return invalidRequest("scope byte %d is a control character", i)
		}
	}
	return nil
}
