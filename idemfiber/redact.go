package idemfiber

import (
	"errors"
	"strings"
)

// redacted is an error whose text has the key and the scope blotted out.
// errors.Is still sees the original's chain (ledger.ErrLeaseLost,
// context.DeadlineExceeded), but errors.As does not reach it: a driver's
// typed error may hold the key in a field its text does not show.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }

// Is reports whether the original error matches target.
func (e *redacted) Is(target error) bool { return errors.Is(e.err, target) }

// redact returns err with every occurrence of each non-empty secret in
// its text replaced by "[redacted]". The ledger never quotes the key or
// the scope, but a database driver's message may; idemhttp's finer
// redaction (whole words only) is not exported.
func redact(err error, secrets ...string) error {
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return &redacted{msg: msg, err: err}
}
