package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"os"
	"testing"
)

// ExampleURL creates a fresh schema on the server named by [PostgresEnv]
// for a runnable Example and returns a connection string with that schema
// on its search_path, and a function that drops it. It panics when the
// server cannot be reached ([RunExamplesWithServer] keeps examples from
// running without one).
func ExampleURL() (url string, drop func()) {
	base := os.Getenv(PostgresEnv)
	var b [8]byte
	rand.Read(b[:])
	name := "idemledger_example_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		panic(err)
	}
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+name); err != nil {
		panic(err)
	}
	url, err = withSearchPath(base, name)
	if err != nil {
		panic(err)
	}
	return url, func() {
		admin.Exec("DROP SCHEMA " + name + " CASCADE")
		admin.Close()
	}
}

// RunExamplesWithServer is a TestMain body for packages whose Examples
// need PostgreSQL: without [PostgresEnv], and unless -run says otherwise,
// only the tests run (the Examples would fail for want of a server); .ci/run
// always sets it. It reads PostgresEnv before the tests start, which the
// go command's test cache does not see: give the package a test that
// calls [ExamplesServer], so that setting the variable runs the package
// again instead of replaying a cached "no tests to run".
func RunExamplesWithServer(m *testing.M) int {
	flag.Parse()
	if os.Getenv(PostgresEnv) == "" && flag.Lookup("test.run").Value.String() == "" {
		flag.Set("test.run", "^Test")
	}
	return m.Run()
}

// ExamplesServer is the body of a test for a package whose Examples run
// through RunExamplesWithServer. It reads [PostgresEnv] while the tests run
// (so the test cache keys on it), skips with the message [PostgresDSN] gives
// when it is unset, and otherwise fails unless the server answers, since
// the Examples would then fail less clearly.
func ExamplesServer(t *testing.T) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(skipMessage)
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("testdb: %s: %v", PostgresEnv, err)
	}
	defer db.Close()
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatalf("testdb: %s: the Examples' server does not answer: %v", PostgresEnv, err)
	}
}
