package schema_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// holdLock takes the write lock of the file at path on a pool of its own,
// as another process's Migrate would, and returns the function that
// releases it.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	other, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	tx, err := other.Begin() // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(release)
	return release
}

// TestMigrateWaitsForLock: Migrate waits while another connection holds
// the write lock, then runs.
func TestMigrateWaitsForLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const hold = 300 * time.Millisecond
	time.AfterFunc(hold, holdLock(t, path))
	start := time.Now()
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if elapsed := time.Since(start); elapsed < hold {
		t.Errorf("Migrate returned after %v, while the lock was still held (%v)", elapsed, hold)
	}
	if v, dirty, err := schema.Version(context.Background(), sqlite.New(db)); v != schema.Latest || dirty || err != nil {
		t.Errorf("Version = %d, %v, %v; want %d, false, nil", v, dirty, err, schema.Latest)
	}
}

// TestMigrateLockedPastBusyTimeout: Migrate waits for the lock no longer
// than the busy timeout, and changes nothing then.
func TestMigrateLockedPastBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	const timeout = 200 * time.Millisecond
	db, err := sqlite.Options{BusyTimeout: timeout}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	release := holdLock(t, path)
	start := time.Now()
	err = schema.Migrate(context.Background(), sqlite.New(db))
	elapsed := time.Since(start)
	const want = "schema: migrate: lock: begin immediate: database is locked"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Migrate = %v, want %s…", err, want)
	}
	if elapsed < timeout || elapsed > timeout+5*time.Second {
		t.Errorf("Migrate gave up after %v, want about %v", elapsed, timeout)
	}
	release()
	if got := objects(t, db); len(got) != 0 {
		t.Errorf("objects after a Migrate that could not lock = %q, want none", got)
	}
}

// TestMigrateConcurrentInProcess: goroutines of one process migrate one
// new file at once, some through one shared pool, some through pools of
// their own.
func TestMigrateConcurrentInProcess(t *testing.T) {
	ctx := context.Background()
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "app.db")
		shared, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer shared.Close()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				db := shared
				if i%2 == 1 {
					own, err := sqlite.Open(path)
					if err != nil {
						t.Error(err)
						return
					}
					defer own.Close()
					db = own
				}
				if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
					t.Errorf("round %d, goroutine %d: %v", round, i, err)
				}
			})
		}
		wg.Wait()
		if v, dirty, err := schema.Version(ctx, sqlite.New(shared)); v != schema.Latest || dirty || err != nil {
			t.Errorf("round %d: Version = %d, %v, %v; want %d, false, nil", round, v, dirty, err, schema.Latest)
		}
	}
}
