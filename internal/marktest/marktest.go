// Package marktest checks a driver's reading of its engine's errors, for
// the drivers' own unit tests (which package drivertest, importing every
// driver, cannot serve).
package marktest

import (
	"errors"
	"testing"

	"github.com/idemledger/idemledger/driver"
)

// CheckMarks checks a driver's reading of one error: got (the driver's
// error for orig) keeps orig's text and stays orig for [errors.Is], and
// matches exactly the sentinels in want among driver's four.
func CheckMarks(t *testing.T, name string, orig, got error, want ...error) {
	t.Helper()
	if got.Error() != orig.Error() || !errors.Is(got, orig) {
		t.Errorf("%s: %v lost its text or its cause", name, got)
	}
	for _, s := range []error{driver.ErrBusy, driver.ErrRetryable, driver.ErrNotMigrated, driver.ErrOutcomeUnknown} {
		w := false
		for _, x := range want {
			w = w || x == s
		}
		if errors.Is(got, s) != w {
			t.Errorf("%s: errors.Is(%v, %v) = %t, want %t", name, got, s, !w, w)
		}
	}
}
