package pgerr

import (
	"errors"

	"github.com/idemledger/idemledger/driver"
)

// MaxOutcome is the largest outcome, in bytes ([driver.OutcomeSize]: body,
// headers and kind, plus the other arguments of the statement that stores
// it), that the PostgreSQL drivers send. The server refuses a value over
// 1 GB (a varlena's limit) and a protocol message that large, and sending
// one first costs a gigabyte on the wire and in both processes' memory:
// the drivers refuse it before sending ([CheckOutcome]). The limit leaves a
// margin for the rest of the statement's message. It is a variable so that
// tests can lower it instead of sending a gigabyte.
var MaxOutcome int64 = 1<<30 - 64<<10

// programLimitExceeded is SQLSTATE 54000 (class 54, Program Limit
// Exceeded): a value or a row over one of the server's limits.
const programLimitExceeded = "54000"

// outcomeSize is the size CheckOutcome counts for p.
func outcomeSize(p driver.CompleteParams) int64 {
	return driver.OutcomeSize(p) + int64(len(p.Scope)+len(p.Key)+len(p.Token))
}

// CheckOutcome returns a *[driver.TooLargeError] when p's outcome is over
// [MaxOutcome], before anything is sent; nil otherwise.
func CheckOutcome(p driver.CompleteParams) error {
	if n := outcomeSize(p); n > MaxOutcome {
		return &driver.TooLargeError{Size: n, Limit: MaxOutcome}
	}
	return nil
}

// TooLarge returns err, the error of the statement that stored p's
// outcome, as a *[driver.TooLargeError] when the server refused it for a
// limit of its own (54000); err unchanged otherwise.
func TooLarge(p driver.CompleteParams, err error) error {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) && pg.SQLState() == programLimitExceeded {
		return &driver.TooLargeError{Size: outcomeSize(p), Err: err}
	}
	return err
}
