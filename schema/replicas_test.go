package schema_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"os/exec"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/golang-migrate/migrate/v4"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

// killedMigratorEnv, when set, makes TestPostgresReplicasMigrateOneKilled
// the migrating replica that its parent kills: the variable holds the
// connection string, killedMarkerEnv the marker of the slow migration.
const (
	killedMigratorEnv = "IDEMLEDGER_TEST_KILLED_MIGRATOR"
	killedMarkerEnv   = "IDEMLEDGER_TEST_KILLED_MARKER"
)

// slowMigrations are three migrations, the second of which sleeps for
// sleep (a PostgreSQL interval) in a statement that carries marker, so
// that a test can find it in pg_stat_activity.
func slowMigrations(marker, sleep string) fstest.MapFS {
	return fstest.MapFS{
		"m/1_first.up.sql":   {Data: []byte("CREATE TABLE replica_first (x int);")},
		"m/2_slow.up.sql":    {Data: []byte("SELECT pg_sleep_for('" + sleep + "') /* " + marker + " */; CREATE TABLE replica_slow (x int);")},
		"m/3_last.up.sql":    {Data: []byte("CREATE TABLE replica_last (x int);")},
		"m/1_first.down.sql": {Data: []byte("DROP TABLE replica_first;")},
	}
}

// TestPostgresReplicasMigrateOneKilled: replicas start at once, each with
// a pool of its own, and migrate; the first of them is a process killed
// (SIGKILL) in the middle of a migration, holding the migration lock. The
// others must not wait for a lock that nobody will release: the dead
// replica's transaction ends with its connection, and with it the lock
// and whatever it had applied. Run through PgBouncer in transaction
// pooling (.ci/pgbouncer), this is golang-migrate's stranded session lock
// (its issues 703 and 992): with golang-migrate's own driver these
// replicas waited forever, as TestPostgresVersionDuringMigrate did for the
// 10 minutes of go test's timeout.
func TestPostgresReplicasMigrateOneKilled(t *testing.T) {
	if dsn := os.Getenv(killedMigratorEnv); dsn != "" {
		killedMigrator(t, dsn)
		return
	}
	d := testdb.PostgresDB(t)
	ctx := context.Background()
	// From no version: the slow migrations are versions 1 to 3.
	if err := schema.Down(ctx, d.Driver); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	rand.Read(b[:])
	marker := "idemledger-killed-" + hex.EncodeToString(b[:])

	child := exec.Command(os.Args[0], "-test.run=^TestPostgresReplicasMigrateOneKilled$", "-test.count=1")
	child.Env = append(os.Environ(), killedMigratorEnv+"="+d.Source, killedMarkerEnv+"="+marker)
	out := &lockedBuffer{}
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	// Wait until the child runs the slow migration, lock held.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := d.SQL.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", marker).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the migrating replica ended before it was killed (%v):\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatalf("the migrating replica never reached its slow migration:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-exited

	// The other replicas, each a pool of its own, at once. Their slow
	// migration is short; a stranded lock would keep them waiting until
	// the context's end.
	fsys := slowMigrations(marker+"-replica", "200 milliseconds")
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := sql.Open("pgx", d.Source)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = schema.Run(rctx, postgres.New(db), fsys, "migrate", (*migrate.Migrate).Up)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	// The killed replica's statement sleeps 3 s; its lock goes when the
	// server sees the connection gone, at the latest when it ends.
	if elapsed > 20*time.Second {
		t.Errorf("the replicas took %v to migrate", elapsed)
	}
	t.Logf("replicas migrated in %v after the kill", elapsed)
	var v int
	var dirty bool
	if err := d.SQL.QueryRow("SELECT version, dirty FROM "+schema.MigrationsTable).Scan(&v, &dirty); err != nil || v != 3 || dirty {
		t.Fatalf("version = %d, dirty %v, %v; want 3, clean", v, dirty, err)
	}
	for _, table := range []string{"replica_first", "replica_slow", "replica_last"} {
		if _, err := d.SQL.Exec("SELECT FROM " + table); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

// killedMigrator is the replica that is killed: it migrates with a slow
// second migration and never gets to return.
func killedMigrator(t *testing.T, dsn string) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fsys := slowMigrations(os.Getenv(killedMarkerEnv), "3 seconds")
	err = schema.Run(context.Background(), postgres.New(db), fsys, "migrate", (*migrate.Migrate).Up)
	t.Fatalf("the slow migration returned (%v) before the parent killed this process", err)
}

// lockedBuffer collects a child process's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
