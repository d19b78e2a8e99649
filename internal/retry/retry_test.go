package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	// initial 100 ms doubled per attempt, capped at 1 s.
	for i, ceiling := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms} {
		attempt := i + 1
		for range 200 {
			if d := Backoff(100*ms, time.Second, attempt); d < ceiling/2 || d > ceiling {
				t.Fatalf("Backoff(100ms, 1s, %d) = %v, want within [%v, %v]", attempt, d, ceiling/2, ceiling)
			}
		}
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(cancelled, 0) = %v, want context.Canceled", err)
	}
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Minute {
		t.Errorf("Sleep(cancelled, 1h) = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}
