package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/golang-migrate/migrate/v4/database"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"

	"github.com/idemledger/idemledger/internal/borrow"
	"github.com/idemledger/idemledger/schema"
)

// Migration returns golang-migrate's mysql driver over the pool, for
// package schema. The migrations of schema/mysql run one statement at a
// time, so the DSN needs no multiStatements parameter.
func (d *Driver) Migration() schema.Migration {
	return schema.Migration{Engine: "mysql", Name: "mysql", With: d.migrateWith}
}

// migrateWith hands golang-migrate a private *sql.DB whose one connection
// is borrowed from the pool, as the PostgreSQL drivers do: golang-migrate
// pins a connection for its lock (GET_LOCK, a session lock held from start
// to end of a run) and would close the *sql.DB it was given. A version
// read holds the same lock, so that it never reads a run in progress as a
// migration that failed half-way. After a failure the session may still
// hold the lock or an open transaction, so the pool drops the connection,
// which releases both.
func (d *Driver) migrateWith(ctx context.Context, table string, read bool, f func(database.Driver) error) error {
	return borrow.OnPinned(ctx, d.db, func(c driver.Conn) (bool, error) {
		private := sql.OpenDB(borrow.NewConnector(c, d.db.Driver()))
		private.SetMaxOpenConns(1)
		drv, err := migratemysql.WithInstance(private, &migratemysql.Config{MigrationsTable: table})
		if err != nil {
			private.Close()
			return true, fmt.Errorf("driver: %w", interpret(err))
		}
		run := f
		if read {
			run = func(d database.Driver) error {
				if err := d.Lock(); err != nil {
					return fmt.Errorf("lock: %w", err)
				}
				return errors.Join(f(d), d.Unlock())
			}
		}
		err = errors.Join(run(statements{drv}), drv.Close()) // closes private only
		return err != nil, err
	})
}

// statements runs a migration file one statement at a time: the files of
// schema/mysql end each statement with a semicolon at the end of a line.
// go-sql-driver/mysql sends several statements in one call only with the
// DSN parameter multiStatements, which this package does not ask of its
// callers. MySQL commits every DDL statement on its own anyway, so a file
// was never atomic.
type statements struct{ database.Driver }

func (s statements) Run(migration io.Reader) error {
	text, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	for _, stmt := range split(text) {
		if err := s.Driver.Run(bytes.NewReader(stmt)); err != nil {
			return err
		}
	}
	return nil
}

// split cuts text after each line that ends with a semicolon, dropping
// pieces that hold only comments and blank lines.
func split(text []byte) [][]byte {
	var out [][]byte
	var cur []byte
	code := false
	for line := range bytes.Lines(text) {
		cur = append(cur, line...)
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 && !bytes.HasPrefix(trimmed, []byte("--")) {
			code = true
		}
		if bytes.HasSuffix(trimmed, []byte(";")) && !bytes.HasPrefix(trimmed, []byte("--")) {
			if code {
				out = append(out, cur)
			}
			cur, code = nil, false
		}
	}
	if code {
		out = append(out, cur)
	}
	return out
}
