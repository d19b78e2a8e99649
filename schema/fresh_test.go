package schema_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/internal/rounds"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

const (
	freshRoundsEnv = "IDEMLEDGER_TEST_FRESH_ROUNDS" // overrides freshRounds
	freshProcesses = 8
	freshRounds    = 20
)

// TestFreshFileAcrossProcesses starts 8 processes (this test binary run
// again, see TestFreshFileWorker) that open and migrate the same SQLite
// file, which does not exist yet, at the same instant, as replicas of a
// service started together do; and again on a new file, round after
// round. Every Open and Migrate must succeed, and leave the file clean at
// the latest version. Before Migrate held the write lock for its whole
// run, every run failed: 5 to 24 of its 160 worker rounds (21 to 41 under
// -race) with "Dirty database version 1", a migrator having read the
// version while another had it marked dirty. IDEMLEDGER_TEST_FRESH_ROUNDS
// sets another number of rounds. The workers are driven round by round
// (package rounds), so that they all reach the new file within
// microseconds of each other.
func TestFreshFileAcrossProcesses(t *testing.T) {
	if rounds.InWorker() {
		t.Skip("inside a worker process")
	}
	testdb.Long(t)
	dir := t.TempDir()
	workers := rounds.Start(t, freshProcesses, "TestFreshFileWorker", dir)
	ctx := context.Background()
	workers.Run(t, freshRoundsEnv, freshRounds, func(r int, msg string) string {
		return strings.ReplaceAll(msg, freshPath(dir, r), "<new file>")
	}, func(r int) {
		if v, dirty, err := versionOf(ctx, freshPath(dir, r)); err != nil || v != schema.Latest || dirty {
			t.Errorf("round %d: Version = %d, %v, %v; want %d, false, nil", r, v, dirty, err, schema.Latest)
		}
	})
}

func freshPath(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("r%d.db", round))
}

// versionOf opens path and reads its migration version.
func versionOf(ctx context.Context, path string) (version uint, dirty bool, err error) {
	db, err := sqlite.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer db.Close()
	return schema.Version(ctx, sqlite.New(db))
}

// TestFreshFileWorker is the body of a worker process of
// TestFreshFileAcrossProcesses; it does nothing in a normal run. For each
// round it opens and migrates that round's file.
func TestFreshFileWorker(t *testing.T) {
	ctx := context.Background()
	rounds.Serve(t, func(dir string, r int) error { return openAndMigrate(ctx, freshPath(dir, r)) })
}

// openAndMigrate is what a service does at start-up.
func openAndMigrate(ctx context.Context, path string) error {
	db, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return schema.Migrate(ctx, sqlite.New(db))
}
