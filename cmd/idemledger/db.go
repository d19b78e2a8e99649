package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

// store is an open database and the driver over it, which the engine
// that the -db value selects opened (see engine).
type store struct {
	db  *sql.DB
	drv storeDriver
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

// engine is how the command reaches the databases of one engine: the -db
// values that select it and the function that opens them. Each engine
// registers itself (register) from a file of its own (db_<engine>.go),
// the only place where the command's database code knows it by name.
type engine struct {
	// name names the engine in messages ("PostgreSQL").
	name string
	// schemes are the URL schemes, in lower case, that select the engine
	// (matched in any case, as RFC 3986, section 3.1, wants).
	schemes []string
	// fallback marks the default engine, which takes every value that is
	// no URL and that no engine refuses (SQLite: a file path).
	fallback bool
	// form says what a -db value of the default engine looks like, for
	// the flag's help and the messages ("a file path or a file: URI"); an
	// engine of URLs is named by its first scheme.
	form string
	// refuse, when set, returns a usage error for a -db value that is
	// meant for the engine but written in a form the command does not
	// take (a mistyped URL, another connection-string syntax), which the
	// default engine would otherwise take for a file name. It returns
	// nil for any other value.
	refuse func(dsn string) error
	// purge and reclaim say what the purge and reclaim commands do on
	// the engine, for their help: how purge sizes its batches, what
	// reclaim frees with and without -full. Lines of at most 96
	// characters, the ones after the first indented by two spaces.
	purge, reclaim string
	// open opens the database dsn names, and the driver over it; n says
	// what must exist already (the engine checks what only it can: a
	// file; openDB checks the ledger's table).
	open func(ctx context.Context, dsn string, n need) (*sql.DB, storeDriver, error)
}

// engines are the registered engines, ordered by name, the default last.
var engines []*engine

// register adds e to the engines the command opens. Each engine's file
// calls it from its init function.
func register(e *engine) {
	engines = append(engines, e)
	slices.SortStableFunc(engines, func(a, b *engine) int {
		if a.fallback != b.fallback {
			if a.fallback {
				return 1
			}
			return -1
		}
		return strings.Compare(a.name, b.name)
	})
}

// dsnForms lists what the registered engines' -db values look like: "a
// mysql:// or postgres:// URL, a file path or a file: URI" (each URL
// engine's first scheme, then the default engine's form).
func dsnForms() string {
	var urls []string
	form := ""
	for _, e := range engines {
		if e.fallback {
			form = e.form
		} else if len(e.schemes) > 0 {
			urls = append(urls, e.schemes[0]+"://")
		}
	}
	var list string
	switch len(urls) {
	case 0:
	case 1:
		list = "a " + urls[0] + " URL"
	default:
		list = "a " + strings.Join(urls[:len(urls)-1], ", ") + " or " + urls[len(urls)-1] + " URL"
	}
	if form != "" && list != "" {
		return list + ", " + form
	}
	return list + form
}

// selectEngine returns the engine that dsn selects: the one whose scheme
// it has, or the default one. A value that an engine refuses, or a URL
// of a scheme no engine has, is a usage error.
func selectEngine(dsn string) (*engine, error) {
	for _, e := range engines {
		if e.refuse == nil {
			continue
		}
		if err := e.refuse(dsn); err != nil {
			return nil, err
		}
	}
	if e := schemeEngine(dsn); e != nil {
		return e, nil
	}
	if scheme, ok := otherScheme(dsn); ok {
		// Taken for a file path, "mssql://u:pw@h/db" would name a
		// directory that does not exist, and the message would not say
		// why.
		return nil, usagef("-db %q: the scheme %q is not supported: give %s", redactDSN(dsn), scheme, dsnForms())
	}
	for _, e := range engines {
		if e.fallback {
			return e, nil
		}
	}
	return nil, usagef("-db %q: no engine takes it: give %s", redactDSN(dsn), dsnForms())
}

// schemeEngine returns the engine whose URL scheme dsn has, nil for none.
func schemeEngine(dsn string) *engine {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok {
		return nil
	}
	for _, e := range engines {
		for _, s := range e.schemes {
			if strings.EqualFold(scheme, s) {
				return e
			}
		}
	}
	return nil
}

// meantFor returns the engine that dsn is meant for, a usable value or
// not: the one whose scheme it has or that refuses it; nil for a value of
// the default engine, or of none.
func meantFor(dsn string) *engine {
	for _, e := range engines {
		if e.refuse != nil && e.refuse(dsn) != nil {
			return e
		}
	}
	if e := schemeEngine(dsn); e != nil && !e.fallback {
		return e
	}
	return nil
}

// engineHelp lists, for a command's help, what text says of each
// engine, one engine per paragraph, under the engine's name.
func engineHelp(text func(*engine) string) string {
	var b strings.Builder
	for _, g := range engines {
		if t := text(g); t != "" {
			fmt.Fprintf(&b, "  %s: %s\n", g.name, strings.ReplaceAll(t, "\n", "\n    "))
		}
	}
	return b.String()
}

// otherScheme reports a -db value that is a URL ("scheme://...") and its
// scheme. A scheme is a letter then letters, digits, '+', '-' or '.' (RFC
// 3986, section 3.1).
func otherScheme(dsn string) (string, bool) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || scheme == "" {
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

// openDB opens the database a -db flag names, through the engine it
// selects. A mistyped file path is an error rather than a new empty file
// unless n is mayCreate, and the check for the ledger's table only reads,
// so it leaves another application's database as it was.
func openDB(ctx context.Context, dsn string, n need) (*store, error) {
	if dsn == "" {
		dsn = os.Getenv(dbEnv)
	}
	if dsn == "" {
		return nil, usagef("-db is required (or set %s)", dbEnv)
	}
	e, err := selectEngine(dsn)
	if err != nil {
		return nil, err
	}
	db, drv, err := e.open(ctx, dsn, n)
	if err != nil {
		return nil, err
	}
	s := &store{db: db, drv: drv}
	if n == mustHaveLedger {
		if err := s.checkLedger(ctx, dsn); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

// checkLedger refuses a database without the ledger's table or migrated
// by a newer release.
func (s *store) checkLedger(ctx context.Context, dsn string) error {
	ok, err := s.drv.DB().TableExists(ctx, ledgerTable)
	switch {
	case errors.Is(err, schema.ErrNoCurrentSchema):
		// migrate cannot help when no schema of the search_path
		// exists: say so rather than suggest a command that fails.
		return fmt.Errorf("%s has no schema of its search_path: create one (CREATE SCHEMA), then apply idemledger's with: %s", redactDSN(dsn), migrateCommand(dsn))
	case err != nil:
		return err
	case !ok:
		return noSchemaError(dsn)
	}
	return s.checkNotNewer(ctx, dsn)
}

// ledgerTable is the table that holds the records (see package schema).
const ledgerTable = "idempotency_ledger"

// checkNotNewer refuses a database that a newer release of idemledger
// migrated past schema.Latest: its records may mean what this binary does
// not know, and purge could delete what that release keeps. A database
// whose schema came from another tool (no migrations table, or an empty
// one) passes. It only reads.
func (s *store) checkNotNewer(ctx context.Context, dsn string) error {
	if ok, err := s.drv.DB().TableExists(ctx, schema.MigrationsTable); !ok || err != nil {
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
	return fs.String("db", "", "database `DSN`: "+dsnForms()+" (default $"+dbEnv+")")
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
// nothing of the ledger's to drop there (and where there is no schema to
// hold it, down says so itself).
func (s *store) checkEmpty(ctx context.Context) error {
	ok, err := s.drv.DB().TableExists(ctx, ledgerTable)
	if errors.Is(err, schema.ErrNoCurrentSchema) {
		return nil
	}
	if !ok || err != nil {
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
