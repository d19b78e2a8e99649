package main

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"regexp"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/mysql"
)

// MySQL or MariaDB, through the mysql driver: a mysql:// URL.
func init() {
	register(&engine{
		name:    "MySQL/MariaDB",
		schemes: []string{"mysql"},
		purge:   "batches of 1,000 rows (InnoDB locks rows) with a 30 ms pause between them.",
		reclaim: "only measures the table (InnoDB reuses the pages of deleted rows by itself).\n" +
			"-full: OPTIMIZE TABLE (a copy of the table; writes wait at its start and end).",
		refuse: func(dsn string) error {
			if goMySQLDSN.MatchString(dsn) {
				// Taken for an SQLite path, it would name a file that
				// migrate would create.
				return usagef("-db %q is a go-sql-driver DSN; give a mysql://user:password@host:3306/database URL", redactDSN(dsn))
			}
			return nil
		},
		open: func(ctx context.Context, dsn string, _ need) (*sql.DB, storeDriver, error) {
			my, err := mysqlDSN(dsn)
			if err != nil {
				return nil, nil, err
			}
			db, err := sql.Open("mysql", my)
			if err == nil {
				err = db.PingContext(ctx)
			}
			if err != nil {
				if db != nil {
					db.Close()
				}
				return nil, nil, err
			}
			return db, mysql.New(db), nil
		},
	})
}

// goMySQLDSN matches go-sql-driver/mysql's DSN form, user[:password]@tcp(host:port)/database
// (or unix(path)), which the command refuses rather than take for an SQLite path.
var goMySQLDSN = regexp.MustCompile(`^[^/]*@(tcp|tcp6|unix)\(`)

// mysqlDSN turns a mysql://user:password@host:port/database?param=value
// URL into go-sql-driver/mysql's DSN (user:password@tcp(host:port)/database
// ?param=value). The port defaults to 3306; the database is required, since
// the ledger's table lives in it.
func mysqlDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", usagef("-db %q: %v", redactDSN(dsn), err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", usagef("-db %q names no database (want mysql://user:password@host:3306/database)", redactDSN(dsn))
	}
	cfg := gomysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, db
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if len(u.Query()) > 0 {
		cfg.Params = map[string]string{}
		for k, v := range u.Query() {
			cfg.Params[k] = v[len(v)-1]
		}
	}
	return cfg.FormatDSN(), nil
}
