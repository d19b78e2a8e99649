package main

import (
	"context"
	"database/sql"
	"strings"

	// The pgx database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// store is an open database and the engine it runs, which the -db flag
// names explicitly: a postgres:// or postgresql:// URL is PostgreSQL,
// anything else an SQLite file path or file: URI.
type store struct {
	db     *sql.DB
	engine ledger.Engine
}

func (s *store) Close() error { return s.db.Close() }

// openDB opens the database a -db flag names.
func openDB(ctx context.Context, dsn string) (*store, error) {
	if dsn == "" {
		return nil, usagef("-db is required")
	}
	s := &store{engine: ledger.SQLite}
	var err error
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		s.engine = ledger.Postgres
		s.db, err = sql.Open("pgx", dsn)
	} else {
		s.db, err = sqlite.Open(dsn)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// migrate, down and version run the schema functions of the store's
// engine.
func (s *store) migrate(ctx context.Context) error {
	if s.engine == ledger.Postgres {
		return schema.MigratePostgres(ctx, s.db)
	}
	return schema.Migrate(ctx, s.db)
}

func (s *store) down(ctx context.Context) error {
	if s.engine == ledger.Postgres {
		return schema.DownPostgres(ctx, s.db)
	}
	return schema.Down(ctx, s.db)
}

func (s *store) version(ctx context.Context) (uint, bool, error) {
	if s.engine == ledger.Postgres {
		return schema.VersionPostgres(ctx, s.db)
	}
	return schema.Version(ctx, s.db)
}

// openLedger opens the database and a ledger for its engine with the
// default configuration.
func openLedger(ctx context.Context, dsn string) (*sql.DB, *ledger.Ledger, error) {
	s, err := openDB(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	l, err := ledger.New(ledger.Config{Engine: s.engine})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s.db, l, nil
}
