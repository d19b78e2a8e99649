package testdb

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"
)

// Engine names a database engine under test. Tests map it onto their own
// package's engine selector (ledger.Config.Engine, for example); testdb
// does not import the ledger, whose in-package tests import testdb.
type Engine string

// The engines under test.
const (
	EngineSQLite   Engine = "sqlite"
	EnginePostgres Engine = "postgres"
)

// Engines lists every engine, SQLite first.
func Engines() []Engine { return []Engine{EngineSQLite, EnginePostgres} }

// Open returns a fresh, migrated database of engine e: SQLite(t) or
// Postgres(t) (which skips the test when PostgresEnv is unset).
func Open(t testing.TB, e Engine) *sql.DB {
	t.Helper()
	if e == EnginePostgres {
		return Postgres(t)
	}
	return SQLite(t)
}

// Each runs f as one subtest per engine, named after it ("sqlite",
// "postgres"), each with a fresh database of its own.
func Each(t *testing.T, f func(t *testing.T, e Engine, db *sql.DB)) {
	t.Helper()
	for _, e := range Engines() {
		t.Run(string(e), func(t *testing.T) {
			f(t, e, Open(t, e))
		})
	}
}

// Rebind rewrites the ? placeholders of query for engine e: $1, $2, ... on
// PostgreSQL, unchanged on SQLite. It does not look inside string
// literals: keep question marks out of them.
func Rebind(e Engine, query string) string {
	if e != EnginePostgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
