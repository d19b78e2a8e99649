// Package pace sizes the steps of work that holds a write lock by time, so
// that the requests queued behind each step wait about the same short
// while whatever one unit of work costs: ledger.Ledger.Purge's batches
// (rows) and the SQLite reclaim's steps (pages).
package pace

import "time"

// Next sizes the step after one of size units that took took: the units
// that fit in target at that pace, at most twice size (one fast step must
// not be followed by a huge one on a guess), and between 1 and most. A took
// of zero or less (a clock too coarse to see the step) doubles size.
func Next(size, most int, target, took time.Duration) int {
	next := 2 * size
	if took > 0 {
		if fit := int(float64(size) * float64(target) / float64(took)); fit < next {
			next = fit
		}
	}
	return max(1, min(next, most))
}
