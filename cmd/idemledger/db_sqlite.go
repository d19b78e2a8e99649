package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idemledger/idemledger/sqlite"
)

// SQLite, the default engine: a file path or a file: URI.
func init() {
	register(&engine{
		name:     "SQLite",
		schemes:  []string{"file"},
		fallback: true,
		form:     "a file path or a file: URI",
		purge:    "each batch is sized to hold the write lock about 2 ms.",
		reclaim: "returns free pages to the file system in short steps and truncates the WAL (the\n" +
			"file shrinks). -full: VACUUM (run it once on a file created before idemledger used\n" +
			"incremental auto-vacuum).",
		open: openSQLite,
	})
}

func openSQLite(ctx context.Context, dsn string, n need) (*sql.DB, storeDriver, error) {
	path, err := sqlitePath(dsn)
	if err != nil {
		return nil, nil, err
	}
	if path == ":memory:" {
		// SQLite's name for a database that lives in one connection and
		// ends with it: no other process, and no later command, sees it.
		return nil, nil, usagef("-db %s is an in-memory database, which ends with the command; give a file path", redactDSN(dsn))
	}
	if n != mayCreate {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: no such database file (create it with: %s)", redactDSN(path), migrateCommand(dsn))
		}
	}
	if n == mustHaveLedger {
		// Before sqlite.Open, which switches the file to WAL: a file
		// that is not the ledger's is refused as it was found.
		has, err := sqliteHasLedger(ctx, path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", redactDSN(path), err)
		}
		if !has {
			return nil, nil, noSchemaError(dsn)
		}
	}
	db, err := sqlite.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return db, sqlite.New(db), nil
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
	return sqlite.New(db).DB().TableExists(ctx, ledgerTable)
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
