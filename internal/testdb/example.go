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

// ExampleURL creates a fresh schema on the server named by PostgresEnv
// for a runnable Example and returns a connection string with that schema
// on its search_path, and a function that drops it. It panics when the
// server cannot be reached (RunExamplesWithServer keeps examples from
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
// need PostgreSQL: without PostgresEnv, and unless -run says otherwise,
// only the tests run (the Examples would fail for want of a server); .ci/run
// always sets it.
func RunExamplesWithServer(m *testing.M) int {
	flag.Parse()
	if os.Getenv(PostgresEnv) == "" && flag.Lookup("test.run").Value.String() == "" {
		flag.Set("test.run", "^Test")
	}
	return m.Run()
}
