package lifecycle

import "github.com/idemledger/idemledger/internal/redact"

// Redact returns err with the key and the scope of req blotted out of its
// text, for a transport that reports [Refusal].Err or an event's Err: the
// ledger never quotes either, but a database driver's message may, and
// observers feed logs and metrics, where neither belongs. Only whole words
// are blotted out (a key "a" leaves "table" alone). errors.Is still sees
// err's chain; errors.As does not reach it, since a driver's typed error
// may hold the key in a field its text does not show. A nil err is nil.
func Redact(err error, key, scope string) error {
	if err == nil {
		return nil
	}
	return redact.Error(err, key, scope)
}
