package ledger

import "strconv"

// Engine names the database engine a Ledger works on. The ledger does not
// guess it from the driver: the caller says which, in Config.Engine.
type Engine int

const (
	// SQLite (the zero value): a database opened with package sqlite and
	// migrated with schema.Migrate. Times come from Config.Now, default
	// time.Now: all users of a SQLite file share one machine's clock.
	SQLite Engine = iota
	// Postgres: a PostgreSQL database opened with the pgx stdlib driver
	// (github.com/jackc/pgx/v5/stdlib) and migrated with
	// schema.MigratePostgres, shared by any number of replicas. Leases and
	// expiry are judged by the server's clock (statement_timestamp()),
	// never the replicas', unless Config.Now is set.
	Postgres
)

// String returns "sqlite" or "postgres".
func (e Engine) String() string {
	switch e {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "Engine(" + strconv.Itoa(int(e)) + ")"
}
