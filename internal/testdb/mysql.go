package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/mysql"
	"github.com/idemledger/idemledger/schema"
)

// MySQL names the mysql driver under test.
const MySQL = "mysql"

// mysqlEngine is MySQL or MariaDB: a database of its own per test, on the
// server MySQLEnv names.
var mysqlEngine = &Engine{
	Name:   "mysql",
	Serial: "id BIGINT AUTO_INCREMENT PRIMARY KEY",
	rebind: backquotes,
	RefuseKey: []string{
		`CREATE TRIGGER refuse_key BEFORE INSERT ON idempotency_ledger FOR EACH ROW
		 BEGIN
		   IF NEW.` + "`key`" + ` = 'refused' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused key'; END IF;
		 END`,
	},
	LockLedger: "SELECT COUNT(*) FROM (SELECT 1 FROM idempotency_ledger FOR UPDATE) AS l",
	LockWait: &LockWait{"SELECT CONNECTION_ID()",
		`SELECT COUNT(*) > 0 FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'`},
	SavepointOutsideTx: "on MySQL a SAVEPOINT in autocommit mode is accepted and does nothing",
	WritesNothing:      mysqlWritesNothing,
	Series: func(n int) string {
		// MySQL and MariaDB stop a recursive CTE at 1,000 rounds by
		// default: five tables of ten digits make up to 100,000 rows.
		digits := "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
			"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
		return fmt.Sprintf("SELECT 1 + a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d AS n FROM %[1]s AS a, %[1]s AS b, %[1]s AS c, %[1]s AS e, %[1]s AS f "+
			"WHERE a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d < %[2]d", digits, n)
	},
	URL: func(t testing.TB, source string) string {
		cfg, err := gomysql.ParseDSN(source)
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName}
		if cfg.Passwd != "" {
			u.User = url.UserPassword(cfg.User, cfg.Passwd)
		} else {
			u.User = url.User(cfg.User)
		}
		return u.String()
	},
}

func init() {
	registerSQL(&sqlEntry{
		name:   MySQL,
		engine: mysqlEngine,
		open:   MySQLDB,
		wrap:   mysqlDB,
		connect: func(source string, o Conns) (*sql.DB, error) {
			db, err := sql.Open("mysql", source)
			if err == nil && o.Max > 0 {
				db.SetMaxOpenConns(o.Max)
			}
			return db, err
		},
		// Through a faultnet proxy. It reads PostgreSQL's framing only:
		// a MySQL reply is complete once the server fell silent.
		faulty: func(t testing.TB, source string, maxConns int, f *faults) any {
			cfg, err := gomysql.ParseDSN(source)
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			if f.Proxy, err = faultnet.Listen(cfg.Addr); err != nil {
				t.Fatalf("testdb: %v", err)
			}
			t.Cleanup(func() { f.Proxy.Close() })
			f.Proxy.SetSettle(50 * time.Millisecond)
			cfg.Addr = f.Proxy.Addr()
			db, err := sql.Open("mysql", cfg.FormatDSN())
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			db.SetMaxOpenConns(maxConns)
			t.Cleanup(func() { db.Close() })
			f.Commit = "COMMIT" // go-sql-driver/mysql's
			return mysql.New(db)
		},
	})
}

// mysqlWritesNothing: the answers come while another transaction holds
// the standing rows locked for update: an answer that locked or wrote
// either would wait for it, and the answering transactions give up after
// a second (innodb_lock_wait_timeout), failing the test.
func mysqlWritesNothing(t *testing.T, q Quiet) {
	ctx := context.Background()
	lock, err := q.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var locked int
	if err := lock.QueryRow("SELECT COUNT(*) FROM (SELECT 1 FROM idempotency_ledger WHERE `key` IN ('done', 'held') FOR UPDATE) AS l").Scan(&locked); err != nil || locked != 2 {
		t.Fatalf("locking the standing rows: %d, %v", locked, err)
	}
	for _, m := range q.Mutate(t, "SET SESSION innodb_lock_wait_timeout = 1", "") {
		if m.Busy || m.Ran {
			t.Errorf("Mutate(%s) = ran %t, %v: it waited for the row lock or ran; want an answer from a plain read", m.Request, m.Ran, m.Err)
		}
	}
	// The control: a statement that does want the lock gives up.
	tx, err := q.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "UPDATE idempotency_ledger SET fence = fence WHERE `key` = 'done'")
	tx.Rollback()
	if err == nil {
		t.Fatal("an UPDATE of a locked row went through: the lock is not held")
	}
	q.Answer(t)
}

// MySQLEnv names the environment variable that points the tests at a MySQL
// or MariaDB server, as a go-sql-driver/mysql DSN, for example
// root@tcp(127.0.0.1:3306)/test. The user needs the right to create
// databases. Without it the MySQL tests are skipped; .ci/run always sets it.
const MySQLEnv = "IDEMLEDGER_TEST_MYSQL"

// maxMySQLConns bounds each test's pool, as for PostgreSQL (the server
// allows 151 connections by default).
const maxMySQLConns = 12

// MySQLDB returns a fresh database of its own on the server named by
// [MySQLEnv], through the mysql driver, migrated with [schema.Migrate]. The
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
func mysqlStatement(q string) string { return backquotes(dollar.ReplaceAllString(q, "?")) }

// backquotes turns the standard double quotes of identifiers into MySQL's
// backquotes, so that a test writes the ledger's "key" column (a reserved
// word there) once for every engine.
func backquotes(q string) string { return strings.ReplaceAll(q, `"`, "`") }

func mysqlDB(db *sql.DB, dsn string) *DB[*sql.Tx] {
	d := sqlDB(MySQL, mysqlEngine, mysql.New(db), db, dsn)
	exec, query := d.exec, d.query
	d.exec = func(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
		return exec(ctx, tx, mysqlStatement(q), args...)
	}
	d.query = func(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
		return query(ctx, tx, mysqlStatement(q), args...)
	}
	return d
}
