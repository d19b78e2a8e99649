package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoInterrupted: a demo interrupted (Ctrl-C, SIGTERM) shows the
// steps that ran but judges none that the interruption cut short: no
// "NO" for a request that failed because the demo was stopping.
func TestDemoInterrupted(t *testing.T) {
	d, err := newDemo(context.Background(), filepath.Join(t.TempDir(), "demo.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	failed, err := d.run(ctx, 2)
	if !errors.Is(err, errInterrupted) || failed != 0 {
		t.Fatalf("run = %d, %v; want 0, %v", failed, err, errInterrupted)
	}
	var out bytes.Buffer
	d.print(&out)
	if len(d.rows) == 0 {
		t.Fatalf("no rows:\n%s", out.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		if !strings.HasSuffix(line, " interrupted") {
			t.Errorf("a row of an interrupted step is judged: %q", line)
		}
	}
}
