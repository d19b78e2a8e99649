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

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// sqlitePath turns the value of a -db flag into an SQLite file path. It
// takes a path or a file: URI without query parameters (the ledger sets
// its own pragmas, see package sqlite).
func sqlitePath(dsn string) (string, error) {
	switch {
	case dsn == "":
		return "", usagef("-db is required")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "", fmt.Errorf("PostgreSQL DSNs are not supported yet; give an SQLite file path")
	case !strings.HasPrefix(dsn, "file:"):
		return dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", usagef("-db %q: %v", dsn, err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", usagef("-db %q: query parameters are not supported; the ledger sets its own pragmas", dsn)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", usagef("-db %q: a file: URI names a local file (file:/path or file:relative/path)", dsn)
	}
	p := u.Opaque // file:relative/path
	if p == "" {
		p = u.Path // file:/abs/path, file:///abs/path
	}
	if p == "" {
		return "", usagef("-db %q names no file", dsn)
	}
	return url.PathUnescape(p)
}

// need says what openDB requires of the database file.
type need int

const (
	mayCreate      need = iota // a missing file is created (migrate up)
	mustExist                  // a missing file is an error (migrate down, version)
	mustHaveLedger             // ... and it must hold the ledger's table
)

// openDB opens the database a -db flag names. A mistyped path is an error
// rather than a new empty file unless n is mayCreate, and the check for the
// ledger's table only reads, so it leaves another application's file as it
// was.
func openDB(ctx context.Context, dsn string, n need) (*sql.DB, error) {
	path, err := sqlitePath(dsn)
	if err != nil {
		return nil, err
	}
	if n != mayCreate {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such database file (create it with 'idemledger migrate -db %s')", path, dsn)
		}
	}
	db, err := sqlite.Open(path)
	if err != nil {
		return nil, err
	}
	if n == mustHaveLedger {
		var tables int
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'idempotency_ledger'`).Scan(&tables)
		if err == nil && tables == 0 {
			err = fmt.Errorf("%s has no idemledger schema (apply it with 'idemledger migrate -db %s')", path, dsn)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openLedger opens an existing, migrated database and a ledger with the
// default configuration.
func openLedger(ctx context.Context, dsn string) (*sql.DB, *ledger.Ledger, error) {
	db, err := openDB(ctx, dsn, mustHaveLedger)
	if err != nil {
		return nil, nil, err
	}
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, l, nil
}
