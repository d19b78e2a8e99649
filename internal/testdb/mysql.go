package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"regexp"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/mysql"
	"github.com/idemledger/idemledger/schema"
)

// MySQLEnv names the environment variable that points the tests at a MySQL
// or MariaDB server, as a go-sql-driver/mysql DSN, for example
// root@tcp(127.0.0.1:3306)/test. The user needs the right to create
// databases. Without it the MySQL tests are skipped; .ci/run always sets it.
const MySQLEnv = "IDEMLEDGER_TEST_MYSQL"

// maxMySQLConns bounds each test's pool, as for PostgreSQL (the server
// allows 151 connections by default).
const maxMySQLConns = 12

// MySQLDB returns a fresh database of its own on the server named by
// MySQLEnv, through the mysql driver, migrated with schema.Migrate. The
// database is dropped and the pool closed when the test ends. It skips
// the test, naming MySQLEnv, when the variable is unset.
func MySQLDB(t testing.TB) *DB[*sql.Tx] {
	t.Helper()
	base := os.Getenv(MySQLEnv)
	if base == "" {
		t.Skip("MySQL tests skipped: set " + MySQLEnv + " (for example root@tcp(127.0.0.1:3306)/test) to run them")
	}
	cfg, err := gomysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("testdb: %s: %v", MySQLEnv, err)
	}
	var b [8]byte
	rand.Read(b[:])
	name := "idemledger_test_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("mysql", base)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer admin.Close()
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testdb: %s=%s: %v", MySQLEnv, base, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("mysql", base)
		if err != nil {
			t.Errorf("testdb: %v", err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("testdb: drop database: %v", err)
		}
	})
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	db.SetMaxOpenConns(maxMySQLConns)
	t.Cleanup(func() { db.Close() }) // runs before the database is dropped
	if err := schema.Migrate(ctx, mysql.New(db)); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return mysqlDB(db, dsn)
}

// dollar matches the $1, $2, ... placeholders of the tests' own
// statements, which go-sql-driver/mysql reads as ?.
var dollar = regexp.MustCompile(`\$[0-9]+`)

// mysqlStatement is a test's statement for MySQL: ? placeholders, and
// identifiers quoted with backquotes (see Rebind).
func mysqlStatement(q string) string { return Rebind("mysql", dollar.ReplaceAllString(q, "?")) }

func mysqlDB(db *sql.DB, dsn string) *DB[*sql.Tx] {
	d := sqlDB(MySQL, "mysql", mysql.New(db), db, dsn)
	exec, query := d.exec, d.query
	d.exec = func(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
		return exec(ctx, tx, mysqlStatement(q), args...)
	}
	d.query = func(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
		return query(ctx, tx, mysqlStatement(q), args...)
	}
	return d
}
