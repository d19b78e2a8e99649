package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	// The pgx database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// store is an open database and the engine it runs, which the -db flag
// names explicitly: a postgres:// or postgresql:// URL is PostgreSQL, a
// mysql:// URL MySQL or MariaDB, anything else an SQLite file path or file:
// URI.
type store struct {
	db  *sql.DB
	drv storeDriver // sqlite.New(db) or postgres.New(db)
	// pg and my are set for a PostgreSQL and a MySQL database, whose
	// catalogs the command reads with its own queries.
	pg, my bool
}

// storeDriver is a driver the commands both run the ledger on and migrate.
type storeDriver interface {
	driver.Driver[*sql.Tx]
	schema.Driver
}

func (s *store) Close() error { return s.db.Close() }

// need says what openDB requires of the database.
type need int

const (
	mayCreate      need = iota // a missing SQLite file is created (migrate up)
	mustExist                  // a missing SQLite file is an error (migrate down, version)
	mustHaveLedger             // ... and the database must hold the ledger's table
)

// isPostgres reports whether dsn is a postgres:// or postgresql:// URL,
// in any case: URL schemes are case-insensitive (RFC 3986, section 3.1).
func isPostgres(dsn string) bool {
	scheme, _, ok := strings.Cut(dsn, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// mistypedPostgres reports a -db value that starts like a PostgreSQL URL,
// holds user info (an '@'), and is not one: "postgres:/u:pw@h/db",
// "postgres//u:pw@h/db", "postgress://u:pw@h/db".
func mistypedPostgres(dsn string) bool {
	return len(dsn) >= len("postgres") && strings.EqualFold(dsn[:len("postgres")], "postgres") &&
		!isPostgres(dsn) && strings.Contains(dsn, "@")
}

// otherScheme reports a -db value that is a URL ("scheme://...") of a
// scheme other than postgres, postgresql and file, and its scheme. A scheme is
// a letter then letters, digits, '+', '-' or '.' (RFC 3986, section 3.1).
func otherScheme(dsn string) (string, bool) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || isPostgres(dsn) || isMySQL(dsn) || scheme == "" || strings.EqualFold(scheme, "file") {
		return "", false
	}
	for i, c := range scheme {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return scheme, true
}

// isMySQL reports whether dsn is a mysql:// URL, in any case.
func isMySQL(dsn string) bool {
	scheme, _, ok := strings.Cut(dsn, "://")
	return ok && strings.EqualFold(scheme, "mysql")
}

// mysqlDSN turns a mysql://user:password@host:port/database?param=value
// URL into go-sql-driver/mysql's DSN (user:password@tcp(host:port)/database
// ?param=value). The port defaults to 3306; the database is required, since
// the ledger's table lives in it.
func mysqlDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", usagef("-db %q: %v", redactDSN(dsn), err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", usagef("-db %q names no database (want mysql://user:password@host:3306/database)", redactDSN(dsn))
	}
	cfg := gomysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, db
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if len(u.Query()) > 0 {
		cfg.Params = map[string]string{}
		for k, v := range u.Query() {
			cfg.Params[k] = v[len(v)-1]
		}
	}
	return cfg.FormatDSN(), nil
}

// pgxURL returns the PostgreSQL URL dsn with its scheme in lower case,
// the only spelling that pgx takes for a URL (it reads anything else as
// a key=value string).
func pgxURL(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	return strings.ToLower(scheme) + "://" + rest
}

// keyValueDSN matches the start of a key=value PostgreSQL connection
// string ("host=db.example user=app password=..."), which pgx accepts.
var keyValueDSN = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslpassword|service|connect_timeout|application_name|options|target_session_attrs)\s*=`)

// goMySQLDSN matches go-sql-driver/mysql's DSN form, user[:password]@tcp(host:port)/database
// (or unix(path)), which the command refuses rather than take for an SQLite path.
var goMySQLDSN = regexp.MustCompile(`^[^/]*@(tcp|tcp6|unix)\(`)

// isKeyValue reports whether dsn is a key=value PostgreSQL connection
// string. The command refuses those rather than take one for the name of
// an SQLite file, which migrate would create, password and all.
func isKeyValue(dsn string) bool { return keyValueDSN.MatchString(dsn) }

// sqlitePath turns the value of a -db flag into an SQLite file path. It
// takes a path or a file: URI without query parameters (the ledger sets
// its own pragmas, see package sqlite).
func sqlitePath(dsn string) (string, error) {
	if !strings.HasPrefix(dsn, "file:") {
		return dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", usagef("-db %q: %v", redactDSN(dsn), err)
	}
	if strings.Contains(dsn, "#") {
		return "", usagef("-db %q: a file: URI ends at '#'; write a '#' of the file's name as %%23", redactDSN(dsn))
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", usagef("-db %q: query parameters are not supported; the ledger sets its own pragmas", redactDSN(dsn))
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", usagef("-db %q: a file: URI names a local file (file:/path or file:relative/path)", redactDSN(dsn))
	}
	p := u.Opaque // file:relative/path
	if p == "" {
		p = u.Path // file:/abs/path, file:///abs/path
	}
	if p == "" {
		return "", usagef("-db %q names no file", redactDSN(dsn))
	}
	return url.PathUnescape(p)
}

// openDB opens the database a -db flag names. A mistyped SQLite path is an
// error rather than a new empty file unless n is mayCreate, and the check
// for the ledger's table only reads, so it leaves another application's
// database as it was.
func openDB(ctx context.Context, dsn string, n need) (*store, error) {
	if dsn == "" {
		dsn = os.Getenv(dbEnv)
	}
	if dsn == "" {
		return nil, usagef("-db is required (or set %s)", dbEnv)
	}
	if isKeyValue(dsn) {
		return nil, usagef("-db %q is a key=value PostgreSQL connection string; give a postgres:// URL", redactDSN(dsn))
	}
	if goMySQLDSN.MatchString(dsn) {
		// Taken for an SQLite path, it would name a file that migrate
		// would create.
		return nil, usagef("-db %q is a go-sql-driver DSN; give a mysql://user:password@host:3306/database URL", redactDSN(dsn))
	}
	if mistypedPostgres(dsn) {
		// Taken for an SQLite path, it would name a file after the
		// password (migrate up creates it).
		return nil, usagef("-db %q looks like a mistyped PostgreSQL URL (want postgres://user:password@host/db); to name a file, start it with ./", redactDSN(dsn))
	}
	if scheme, ok := otherScheme(dsn); ok {
		// Taken for an SQLite path, "mysql://u:pw@h/db" would name a
		// directory that does not exist, and the message would not say
		// why.
		return nil, usagef("-db %q: the scheme %q is not supported: give a postgres:// or mysql:// URL, a file path or a file: URI", redactDSN(dsn), scheme)
	}
	s := &store{}
	var err error
	if isMySQL(dsn) {
		var my string
		if my, err = mysqlDSN(dsn); err != nil {
			return nil, err
		}
		if s.db, err = sql.Open("mysql", my); err == nil {
			s.drv, s.my = mysql.New(s.db), true
			err = s.db.PingContext(ctx)
		}
	} else if isPostgres(dsn) {
		if s.db, err = sql.Open("pgx", pgxURL(dsn)); err == nil {
			s.drv, s.pg = postgres.New(s.db), true
			err = s.db.PingContext(ctx)
		}
	} else {
		var path string
		if path, err = sqlitePath(dsn); err != nil {
			return nil, err
		}
		if path == ":memory:" {
			// SQLite's name for a database that lives in one connection and
			// ends with it: no other process, and no later command, sees it.
			return nil, usagef("-db %s is an in-memory database, which ends with the command; give a file path", redactDSN(dsn))
		}
		if n != mayCreate {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: no such database file (create it with: %s)", redactDSN(path), migrateCommand(dsn))
			}
		}
		if n == mustHaveLedger {
			// Before sqlite.Open, which switches the file to WAL: a file
			// that is not the ledger's is refused as it was found.
			has, err := sqliteHasLedger(ctx, path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", redactDSN(path), err)
			}
			if !has {
				return nil, noSchemaError(dsn)
			}
		}
		if s.db, err = sqlite.Open(path); err == nil {
			s.drv = sqlite.New(s.db)
		}
	}
	if err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, err
	}
	if n == mustHaveLedger {
		if err := s.checkLedger(ctx, dsn); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

// checkLedger refuses a database without the ledger's table (SQLite's was
// looked for before the file was opened) or migrated by a newer release.
func (s *store) checkLedger(ctx context.Context, dsn string) error {
	if s.my {
		if ok, err := s.hasTable(ctx, "idempotency_ledger"); err != nil || !ok {
			if err == nil {
				err = noSchemaError(dsn)
			}
			return err
		}
	}
	if s.pg {
		// Any schema on the search_path will do: queries find it there.
		var tables int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'idempotency_ledger' AND schemaname = ANY (current_schemas(false))`).Scan(&tables)
		if err != nil {
			return err
		}
		if tables == 0 {
			// migrate cannot help when no schema of the search_path
			// exists: say so rather than suggest a command that fails.
			var current sql.NullString
			if err := s.db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
				return err
			}
			if !current.Valid {
				return fmt.Errorf("%s has no schema of its search_path: create one (CREATE SCHEMA), then apply idemledger's with: %s", redactDSN(dsn), migrateCommand(dsn))
			}
			return noSchemaError(dsn)
		}
	}
	return s.checkNotNewer(ctx, dsn)
}

// checkNotNewer refuses a database that a newer release of idemledger
// migrated past schema.Latest: its records may mean what this binary does
// not know, and purge could delete what that release keeps. A database
// whose schema came from another tool (no migrations table, or an empty
// one) passes. It only reads.
func (s *store) checkNotNewer(ctx context.Context, dsn string) error {
	if ok, err := s.hasTable(ctx, schema.MigrationsTable); !ok || err != nil {
		return err
	}
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT version FROM `+schema.MigrationsTable+` LIMIT 1`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case v > int64(schema.Latest):
		return fmt.Errorf("%s is at schema version %d, newer than this idemledger knows (%d): use the idemledger release that migrated it", redactDSN(dsn), v, schema.Latest)
	}
	return nil
}

func noSchemaError(dsn string) error {
	return fmt.Errorf("%s has no idemledger schema (apply it with: %s)", redactDSN(dsn), migrateCommand(dsn))
}

// dbEnv names the environment variable that gives the database when -db
// is not: a URL there stays out of argv, ps and crontabs.
const dbEnv = "IDEMLEDGER_DB"

// dbFlag defines the -db flag. Its default is empty, never the value of
// dbEnv, so that -h cannot print a password; openDB falls back to dbEnv.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", "database `DSN`: an SQLite file path or file: URI, a postgres:// or a mysql:// URL (default $"+dbEnv+")")
}

// migrateCommand is a command that migrates the database dsn names, one
// that can be pasted into a POSIX shell as it is: without -db when dsn is
// the one in dbEnv, and never with a password, which would show as
// xxxxx; such a database is named through dbEnv instead.
func migrateCommand(dsn string) string {
	switch {
	case dsn == os.Getenv(dbEnv):
		return "idemledger migrate"
	case redactDSN(dsn) != dsn:
		return "idemledger migrate, with " + dbEnv + " set to the database URL (its password is not shown here)"
	}
	return "idemledger migrate -db " + shellQuote(dsn)
}

// sqliteHasLedger reports whether the SQLite file at path holds the
// ledger's table. It only reads: the connection is opened read-only
// (mode=ro in a file: URI, which the driver hands to SQLite whole) with
// no pragma but busy_timeout, which is the connection's own. SQLite
// still reads a write-ahead log on such a connection, so a ledger whose
// table is in the -wal file, not yet checkpointed, is recognized; it may
// create the -shm index for that (https://sqlite.org/wal.html#readonly).
// An empty file reads as a database without tables.
func sqliteHasLedger(ctx context.Context, path string) (bool, error) {
	db, err := sql.Open(sqlite.DriverName, readOnlyURI(path, sqlite.DefaultBusyTimeout))
	if err != nil {
		return false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var tables int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'idempotency_ledger'`).Scan(&tables)
	return tables > 0, err
}

// readOnlyURI is the file: URI that opens path read-only
// (https://sqlite.org/uri.html). '%', '?' and '#' are escaped, and an
// absolute path gets an empty authority ("file:///abs"), so that a path
// starting with "//" is not read as one.
func readOnlyURI(path string, busy time.Duration) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p
	}
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", p, busy.Milliseconds())
}

// migrate, down and version run the schema functions on the store's
// driver.
func (s *store) migrate(ctx context.Context) error { return schema.Migrate(ctx, s.drv) }

func (s *store) down(ctx context.Context) error { return schema.Down(ctx, s.drv) }

func (s *store) version(ctx context.Context) (uint, bool, error) {
	return schema.Version(ctx, s.drv)
}

// openLedger opens an existing, migrated database and a ledger for its
// engine with the default configuration.
func openLedger(ctx context.Context, dsn string) (*sql.DB, *ledger.Ledger[*sql.Tx], error) {
	s, err := openDB(ctx, dsn, mustHaveLedger)
	if err != nil {
		return nil, nil, err
	}
	l, err := ledger.New(s.drv, ledger.Options{})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s.db, l, nil
}

// checkEmpty returns an error when the ledger's table holds records, saying
// how many and how many of them are in flight, so that migrate down does
// not drop them unasked. A database without the table passes: down has
// nothing of the ledger's to drop there.
func (s *store) checkEmpty(ctx context.Context) error {
	if ok, err := s.hasTable(ctx, "idempotency_ledger"); !ok || err != nil {
		return err
	}
	l, err := ledger.New(s.drv, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	st, err := l.Stats(ctx)
	if err != nil {
		return err
	}
	if total := st.InFlight + st.Completed; total > 0 {
		return fmt.Errorf("the ledger holds %d records (%d in flight); migrate down would drop them: add -force to do so", total, st.InFlight)
	}
	return nil
}

// hasTable reports whether the table name exists: in an SQLite file, or in
// PostgreSQL's current schema, where the migrations put their tables.
func (s *store) hasTable(ctx context.Context, name string) (bool, error) {
	query := `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`
	if s.my {
		query = `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`
	}
	if s.pg {
		query = `SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = $1 AND schemaname = current_schema()`
	}
	var tables int
	err := s.db.QueryRowContext(ctx, query, name).Scan(&tables)
	return tables > 0, err
}
