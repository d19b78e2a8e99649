package lifecycle

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// reports collects what a beat tells its caller.
type reports struct {
	mu      sync.Mutex
	extends int
	failed  []error
	lost    []error
	lostAt  time.Time
}

func (r *reports) onFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, err)
}

func (r *reports) onLost(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = append(r.lost, err)
	r.lostAt = time.Now()
}

func (r *reports) snapshot() (extends int, failed, lost []error, lostAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.extends, append([]error(nil), r.failed...), append([]error(nil), r.lost...), r.lostAt
}

const lease = 300 * time.Millisecond

// errIf returns err when cond holds, and nil otherwise.
func errIf(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}

func TestHeartbeat(t *testing.T) {
	taken := fmt.Errorf("extend: %w", ledger.ErrLeaseLost)
	busy := errors.New("store busy")
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	tests := []struct {
		name string
		// extend answers the n-th extension (1-based).
		extend func(n int) error
		// run is how long the beat runs before Stop.
		run time.Duration
		// wantLost is what lost hears, in order.
		wantLost []error
		// lostBy bounds when it hears it, from Start; 0 for no bound.
		lostBy time.Duration
	}{
		{
			name:   "extended",
			extend: func(int) error { return nil },
			run:    4 * lease,
		},
		{
			name:   "short outage",
			extend: func(n int) error { return errIf(n <= 2, busy) },
			run:    4 * lease,
		},
		{
			name:     "taken over",
			extend:   func(n int) error { return errIf(n >= 2, taken) },
			run:      4 * lease,
			wantLost: []error{taken},
		},
		{
			name:     "failing for a whole lease",
			extend:   func(int) error { return busy },
			run:      2 * lease,
			wantLost: []error{ErrLeaseExpired},
			lostBy:   lease + lease/2,
		},
		{
			// An extension stuck on a lock for longer than the lease:
			// the end is reported while it still waits.
			name:     "blocked for a whole lease",
			extend:   func(n int) error { <-block; return nil },
			run:      2 * lease,
			wantLost: []error{ErrLeaseExpired},
			lostBy:   lease + lease/2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &reports{}
			extend := func() error {
				r.mu.Lock()
				r.extends++
				n := r.extends
				r.mu.Unlock()
				return tt.extend(n)
			}
			start := time.Now()
			b := startBeat(lease, 0, extend, r.onFailed, r.onLost)
			time.Sleep(tt.run)
			stopped := make(chan struct{})
			go func() { b.Stop(); close(stopped) }()
			if tt.name != "blocked for a whole lease" {
				<-stopped
			}
			extends, _, lost, lostAt := r.snapshot()
			if extends == 0 {
				t.Fatal("never extended")
			}
			if len(lost) != len(tt.wantLost) {
				t.Fatalf("lost heard %v, want %v", lost, tt.wantLost)
			}
			for i := range lost {
				if lost[i] != tt.wantLost[i] {
					t.Fatalf("lost heard %v, want %v", lost, tt.wantLost)
				}
			}
			if tt.lostBy > 0 && lostAt.Sub(start) > tt.lostBy {
				t.Errorf("lost heard %v after the start, want by %v", lostAt.Sub(start), tt.lostBy)
			}
		})
	}
}

// ErrLeaseExpired is a lost lease to errors.Is: the handler must treat it so.
func TestErrLeaseExpiredIsLeaseLost(t *testing.T) {
	if !errors.Is(ErrLeaseExpired, ledger.ErrLeaseLost) {
		t.Fatal("ErrLeaseExpired does not match ledger.ErrLeaseLost")
	}
}

// Nothing reaches lost after Stop returned, however the timers fall.
func TestHeartbeatNothingAfterStop(t *testing.T) {
	for i := 0; i < 50; i++ {
		r := &reports{}
		b := startBeat(10*time.Millisecond, 0, func() error { return errors.New("down") }, r.onFailed, r.onLost)
		time.Sleep(time.Duration(i%12) * time.Millisecond)
		b.Stop()
		_, _, before, _ := r.snapshot()
		time.Sleep(20 * time.Millisecond)
		if _, _, after, _ := r.snapshot(); len(after) != len(before) {
			t.Fatalf("round %d: lost heard %v after Stop", i, after[len(before):])
		}
	}
}
