package pace

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name         string
		size, most   int
		target, took time.Duration
		want         int
	}{
		{"on target keeps the size", 100, 1000, 5 * ms, 5 * ms, 100},
		{"twice as slow halves it", 100, 1000, 5 * ms, 10 * ms, 50},
		{"much faster at most doubles it", 100, 1000, 5 * ms, ms / 10, 200},
		{"capped by most", 800, 1000, 5 * ms, ms, 1000},
		{"never below one", 10, 1000, 5 * ms, 10 * time.Second, 1},
		{"an unseen step doubles", 64, 1000, 5 * ms, 0, 128},
		{"a fraction rounds down", 3, 1000, 5 * ms, 4 * ms, 3},
		{"from one, slow, stays one", 1, 1000, 5 * ms, 50 * ms, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Next(c.size, c.most, c.target, c.took); got != c.want {
				t.Errorf("Next(%d, %d, %v, %v) = %d, want %d", c.size, c.most, c.target, c.took, got, c.want)
			}
		})
	}
}
