package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemledger/idemledger/internal/rounds"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/sqlite"
)

const (
	freshRoundsEnv = "IDEMLEDGER_TEST_FRESH_ROUNDS" // overrides freshRounds
	freshProcesses = 8
	freshPools     = 4 // Opens per process and round, at once
	freshRounds    = 25
)

// TestFreshFileAcrossProcesses starts 8 processes (this test binary run
// again, see TestFreshFileWorker) that each open the same SQLite file,
// which does not exist yet, four times at the same instant and write to
// it, as services started together do; and again on a new file, round
// after round. Every Open must succeed. Before Open tried again on
// SQLITE_BUSY (see retryLocked), every run failed: 2 to 19 of its 200
// worker rounds, with or without -race. IDEMLEDGER_TEST_FRESH_ROUNDS sets
// another number of rounds. The workers are driven round by round
// (package rounds), so that they all reach the new file within
// microseconds of each other.
func TestFreshFileAcrossProcesses(t *testing.T) {
	if rounds.InWorker() {
		t.Skip("inside a worker process")
	}
	testdb.Long(t)
	dir := t.TempDir()
	workers := rounds.Start(t, freshProcesses, "TestFreshFileWorker", dir)
	workers.Run(t, freshRoundsEnv, freshRounds, func(r int, msg string) string {
		return strings.ReplaceAll(msg, freshPath(dir, r), "<new file>")
	}, nil)
}

func freshPath(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("r%d.db", round))
}

// TestFreshFileWorker is the body of a worker process of
// TestFreshFileAcrossProcesses; it does nothing in a normal run. For each
// round it opens that round's file freshPools times at once and writes to
// it.
func TestFreshFileWorker(t *testing.T) {
	ctx := context.Background()
	rounds.Serve(t, func(dir string, r int) error {
		var (
			wg   sync.WaitGroup
			errs [freshPools]error
		)
		for i := range freshPools {
			wg.Go(func() { errs[i] = openAndWrite(ctx, freshPath(dir, r)) })
		}
		wg.Wait()
		return errors.Join(errs[:]...)
	})
}

// openAndWrite is what a service does at start-up.
func openAndWrite(ctx context.Context, path string) error {
	db, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t (a)"); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
