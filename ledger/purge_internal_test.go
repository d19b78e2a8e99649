package ledger

import (
	"testing"
	"time"
)

// TestPurgePlan: the defaults Purge takes from its options, per kind of
// engine. Zero options on an engine that locks rows pace the purge
// (DefaultPurgeRowLockPause), and any option set by the caller wins.
func TestPurgePlan(t *testing.T) {
	type plan struct {
		size, most    int
		target, pause time.Duration
	}
	for _, tt := range []struct {
		name       string
		opts       PurgeOptions
		beginLocks bool
		want       plan
	}{
		{"sqlite, zero", PurgeOptions{}, true, plan{firstPurgeBatch, DefaultPurgeBatchSize, DefaultPurgeBatchTime, 0}},
		{"sqlite, pause", PurgeOptions{Pause: time.Second}, true, plan{firstPurgeBatch, DefaultPurgeBatchSize, DefaultPurgeBatchTime, time.Second}},
		{"sqlite, fixed", PurgeOptions{BatchSize: 50}, true, plan{50, 50, 0, 0}},
		{"row locks, zero", PurgeOptions{}, false, plan{DefaultPurgeRowLockBatchSize, DefaultPurgeRowLockBatchSize, 0, DefaultPurgeRowLockPause}},
		{"row locks, own pause", PurgeOptions{Pause: time.Millisecond}, false, plan{DefaultPurgeRowLockBatchSize, DefaultPurgeRowLockBatchSize, 0, time.Millisecond}},
		{"row locks, fixed", PurgeOptions{BatchSize: 1000}, false, plan{1000, 1000, 0, 0}},
		{"row locks, timed", PurgeOptions{BatchTime: time.Millisecond}, false, plan{firstPurgeBatch, DefaultPurgeBatchSize, time.Millisecond, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got plan
			got.size, got.most, got.target, got.pause = purgePlan(tt.opts, tt.beginLocks)
			if got != tt.want {
				t.Errorf("purgePlan(%+v, %v) = %+v, want %+v", tt.opts, tt.beginLocks, got, tt.want)
			}
		})
	}
}
