package main

import (
	"context"
	"database/sql"
	"net/url"
	"regexp"
	"strings"

	"github.com/idemledger/idemledger/postgres"
)

// PostgreSQL, through the postgres driver (database/sql over pgx): a
// postgres:// or postgresql:// URL. The tables live in the first existing
// schema of the URL's search_path (PostgreSQL's current_schema()).
func init() {
	register(&engine{
		name:    "PostgreSQL",
		schemes: []string{"postgres", "postgresql"},
		purge:   "batches of 1,000 rows (PostgreSQL locks rows) with a 30 ms pause between them.",
		reclaim: "VACUUM (ANALYZE) of the table, which frees the space for new records but\n" +
			"returns to the file system only empty pages at the table's end (the size rarely\n" +
			"shrinks, it stops growing). -full: VACUUM FULL (exclusive lock).",
		refuse: func(dsn string) error {
			if isKeyValue(dsn) {
				return usagef("-db %q is a key=value PostgreSQL connection string; give a postgres:// URL", redactDSN(dsn))
			}
			if mistypedPostgres(dsn) {
				// Taken for an SQLite path, it would name a file after the
				// password (migrate up creates it).
				return usagef("-db %q looks like a mistyped PostgreSQL URL (want postgres://user:password@host/db); to name a file, start it with ./", redactDSN(dsn))
			}
			return nil
		},
		open: func(ctx context.Context, dsn string, _ need) (*sql.DB, storeDriver, error) {
			db, err := sql.Open("pgx", execMode(pgxURL(dsn)))
			if err == nil {
				err = db.PingContext(ctx)
			}
			if err != nil {
				if db != nil {
					db.Close()
				}
				return nil, nil, err
			}
			return db, postgres.New(db), nil
		},
	})
}

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

// pgxURL returns the PostgreSQL URL dsn with its scheme in lower case,
// the only spelling that pgx takes for a URL (it reads anything else as
// a key=value string).
func pgxURL(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	return strings.ToLower(scheme) + "://" + rest
}

// execMode returns the URL dsn with pgx's default_query_exec_mode set to
// exec when it names none: the command sends a handful of statements, so
// caching their plans gains nothing, while pgx's default mode (named
// prepared statements) fails behind a transaction pooler such as
// PgBouncer. A mode the URL names is kept.
func execMode(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Query().Has("default_query_exec_mode") {
		return dsn // pgx reports a URL's fault itself
	}
	// Appended, not re-encoded: the URL keeps its own order and spelling,
	// which error messages quote (passwords blotted out).
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "default_query_exec_mode=exec"
}

// keyValueDSN matches the start of a key=value PostgreSQL connection
// string ("host=db.example user=app password=..."), which pgx accepts.
var keyValueDSN = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslpassword|service|connect_timeout|application_name|options|target_session_attrs)\s*=`)

// isKeyValue reports whether dsn is a key=value PostgreSQL connection
// string. The command refuses those rather than take one for the name of
// an SQLite file, which migrate would create, password and all.
func isKeyValue(dsn string) bool { return keyValueDSN.MatchString(dsn) }
