package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// openDB opens the database a -db flag names: an SQLite file path or a
// file: URI.
func openDB(ctx context.Context, dsn string) (*sql.DB, error) {
	switch {
	case dsn == "":
		return nil, usagef("-db is required")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return nil, fmt.Errorf("PostgreSQL DSNs are not supported yet; give an SQLite file path")
	}
	db, err := sqlite.Open(dsn)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openLedger opens the database and a ledger with the default configuration.
func openLedger(ctx context.Context, dsn string) (*sql.DB, *ledger.Ledger, error) {
	db, err := openDB(ctx, dsn)
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
