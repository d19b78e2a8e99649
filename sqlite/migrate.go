package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4/database"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"

	"github.com/idemledger/idemledger/internal/borrow"
	"github.com/idemledger/idemledger/schema"
)

// Migration returns golang-migrate's sqlite driver over the database, for
// package schema.
func (d *Driver) Migration() schema.Migration {
	return schema.Migration{Engine: "sqlite", Name: "sqlite", With: d.migrateWith}
}

// migrateWith runs f over golang-migrate's sqlite driver. A version read
// runs over the pool directly: golang-migrate's sqlite driver pins no
// connection, its instance is never closed (its Close would close the
// pool), and a migrating run in progress is invisible to it (see below).
//
// A migrating run holds SQLite's write lock from start to end, so that
// migrators in other processes (or on other connections) wait for one
// another instead of reading the version while another is half-way.
// golang-migrate's sqlite driver has only an in-process lock per instance,
// unlike its PostgreSQL driver, which holds an advisory lock for the whole
// run.
//
// It pins one connection of the pool and begins an immediate transaction on
// it, which takes the write lock, waiting up to the connection's
// busy_timeout for it. golang-migrate then runs over a private *sql.DB
// whose one connection is that pinned one, so that all its statements run
// inside the lock: on any other connection they would wait for the lock
// this one holds, a deadlock inside the process. Its transactions (one per
// migration, one per version change) become savepoints of the outer
// transaction, with the same effect: a failed migration is undone, and the
// dirty version golang-migrate recorded before it is kept.
//
// The outer transaction is committed at the end, whether golang-migrate
// succeeded or not, so that what it recorded persists exactly as if it had
// committed each transaction itself; but nothing is visible to other
// connections until then, and a process that dies during the run leaves
// the database as it found it.
func (d *Driver) migrateWith(ctx context.Context, table string, read bool, f func(database.Driver) error) error {
	db := d.db
	if read {
		drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: table})
		if err != nil {
			return fmt.Errorf("driver: %w", err)
		}
		return f(drv)
	}
	return borrow.OnPinned(ctx, db, func(c driver.Conn) (bool, error) {
		exec, ok := c.(driver.ExecerContext)
		if !ok {
			return false, fmt.Errorf("lock: driver %T cannot execute statements on a connection", c)
		}
		if _, err := exec.ExecContext(ctx, "BEGIN IMMEDIATE", nil); err != nil {
			// No transaction began: the connection is as it was.
			return false, fmt.Errorf("lock: begin immediate: %w", err)
		}
		private := sql.OpenDB(savepointConnector{borrow.NewConnector(c, db.Driver())})
		private.SetMaxOpenConns(1)
		drv, err := migratesqlite.WithInstance(private, &migratesqlite.Config{MigrationsTable: table})
		if err != nil {
			err = fmt.Errorf("driver: %w", err)
		} else {
			err = f(drv)
		}
		// Closes private only; the borrowed connection stays open.
		err = errors.Join(err, private.Close())
		// Commit even when cancelled: what golang-migrate recorded
		// stays, as when it commits each transaction itself.
		if _, cerr := exec.ExecContext(context.Background(), "COMMIT", nil); cerr != nil {
			// The transaction may still be open: let the pool drop
			// the connection, which rolls it back.
			return true, errors.Join(err, fmt.Errorf("unlock: commit: %w", cerr))
		}
		return false, err
	})
}

// savepointName names the savepoint that stands for golang-migrate's
// transactions; it never nests, having a single connection.
const savepointName = "idemledger_migrate"

// savepointConnector is a borrow.Connector, except that the transactions begun on
// its connection are savepoints inside the transaction already open on
// the borrowed connection.
type savepointConnector struct{ borrow.Connector }

func (s savepointConnector) Connect(context.Context) (driver.Conn, error) {
	return savepointConn{borrow.NewConn(s.Lent())}, nil
}

type savepointConn struct{ borrow.Conn }

func (s savepointConn) Begin() (driver.Tx, error) {
	return s.BeginTx(context.Background(), driver.TxOptions{})
}

func (s savepointConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.ReadOnly || opts.Isolation != driver.IsolationLevel(sql.LevelDefault) {
		return nil, errors.New("sqlite: migrate: savepoint: transaction options not supported")
	}
	if err := s.exec(ctx, "SAVEPOINT "+savepointName); err != nil {
		return nil, err
	}
	return savepointTx{s}, nil
}

func (s savepointConn) exec(ctx context.Context, query string) error {
	_, err := s.ExecContext(ctx, query, nil)
	if errors.Is(err, driver.ErrSkip) {
		return borrow.ErrUnsupported
	}
	return err
}

// savepointTx is one golang-migrate transaction. database/sql calls its
// methods with the connection held, so they run on it.
type savepointTx struct{ c savepointConn }

func (t savepointTx) Commit() error {
	return t.c.exec(context.Background(), "RELEASE "+savepointName)
}

func (t savepointTx) Rollback() error {
	if err := t.c.exec(context.Background(), "ROLLBACK TO "+savepointName); err != nil {
		return err
	}
	return t.c.exec(context.Background(), "RELEASE "+savepointName)
}
