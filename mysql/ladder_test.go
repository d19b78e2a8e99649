package mysql_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/mysqldb"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

// ladderTrips counts the round trips of the ladder's connections
// (countingConn).
var (
	registerLadder sync.Once
	ladderTrips    atomic.Int64
)

// ladderDB opens the database of d again through a dialer that counts
// round trips, with clients connections.
func ladderDB(b *testing.B, d *testdb.DB[*sql.Tx], clients int) *sql.DB {
	registerLadder.Do(func() {
		gomysql.RegisterDialContext("idemledger-ladder", func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, trips: &ladderTrips}, nil
		})
	})
	cfg, err := gomysql.ParseDSN(d.Source)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Net = "idemledger-ladder"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	db.SetConnMaxLifetime(time.Hour)
	b.Cleanup(func() { db.Close() })
	return db
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// status reads the server's global counters named.
func status(b *testing.B, db *sql.DB) map[string]int64 {
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_os_log_written','Innodb_os_log_fsyncs','Innodb_data_fsyncs','Innodb_row_lock_waits','Innodb_log_waits','Questions','Innodb_data_written','Innodb_buffer_pool_write_requests','Innodb_log_write_requests','Innodb_log_writes')")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			b.Fatal(err)
		}
		m[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return m
}

type ladderStep struct {
	name string
	op   func(ctx context.Context, k string) error
}

// tids returns the server threads of the connections to the databases
// named (all connections when names is nil).
func tids(b *testing.B, db *sql.DB, names map[string]bool) []int64 {
	rows, err := db.Query("SELECT DB, TID FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Daemon'")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var name sql.NullString
		var tid int64
		if err := rows.Scan(&name, &tid); err != nil {
			b.Fatal(err)
		}
		if names == nil || names[name.String] {
			out = append(out, tid)
		}
	}
	return out
}

func threadsCPU(ts []int64) (d time.Duration) {
	for _, t := range ts {
		d += threadCPU(t)
	}
	return d
}

// processCPU is the server process's CPU time from schedstat of every
// thread (finer than /proc/pid/stat).
func processCPU() (d time.Duration) {
	pid, err := os.ReadFile("/run/mysqld/mysqld.pid")
	if err != nil {
		return 0
	}
	ents, _ := os.ReadDir("/proc/" + strings.TrimSpace(string(pid)) + "/task")
	for _, e := range ents {
		t, _ := strconv.ParseInt(e.Name(), 10, 64)
		d += threadCPU(t)
	}
	return d
}

// hand is Mutate's statements written out, each part optional.
type hand struct {
	get       string // the claim's read; "" for none
	savepoint string // "" for none
	release   bool
	claim     string // the claim's INSERT; "" for none
	complete  bool
}

// BenchmarkMySQLLadder runs, in rounds, each variant at 16 and 1 clients
// in a random order, and prints per round: ops/s, the ratio to plain of
// the same round, the CPU per op of the server threads serving the
// variant's connections (conn), of the rest of the server (rest: its
// background threads and any other client's connections) and of this
// process (cli), redo bytes and round trips per op. Rounds from
// IDEMLEDGER_LADDER_ROUNDS (default 1), ops per variant from
// IDEMLEDGER_LADDER_OPS (16 clients, default 64; a tenth at one), variants
// from IDEMLEDGER_LADDER_ONLY (comma-separated; plain always runs; by
// default those of BENCHMARKS.md). The server's CPU is read from /proc
// (the server on this machine, as root); elsewhere it reads 0.
func BenchmarkMySQLLadder(b *testing.B) {
	rounds, _ := strconv.Atoi(os.Getenv("IDEMLEDGER_LADDER_ROUNDS"))
	if rounds == 0 {
		rounds = 1
	}
	nops, _ := strconv.Atoi(os.Getenv("IDEMLEDGER_LADDER_OPS"))
	if nops == 0 {
		nops = 64
	}
	only := os.Getenv("IDEMLEDGER_LADDER_ONLY")
	if only == "" {
		only = "floor,design,design-min,mutate,mutate-pk"
	}
	clientsList := []int{16, 1}
	if c := os.Getenv("IDEMLEDGER_LADDER_CLIENTS"); c != "" {
		clientsList = nil
		for _, s := range strings.Split(c, ",") {
			n, _ := strconv.Atoi(s)
			clientsList = append(clientsList, n)
		}
	}
	ctx := context.Background()
	fp := hash.Bytes([]byte("payload"))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	type result struct{ ops, conn, rest, cli, redo, trips float64 }
	for _, clients := range clientsList {
		var steps []ladderStep
		var stat *sql.DB
		dbnames := map[string]map[string]bool{}
		var current string
		// env makes a fresh migrated database, with the statements of
		// tweak run there first.
		env := func(tweak ...string) (*sql.DB, *ledger.Ledger[*sql.Tx]) {
			d := testdb.MySQLDB(b)
			cfg, _ := gomysql.ParseDSN(d.Source)
			if dbnames[current] == nil {
				dbnames[current] = map[string]bool{}
			}
			dbnames[current][cfg.DBName] = true
			db := ladderDB(b, d, clients)
			for _, s := range append([]string{"CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)"}, tweak...) {
				if _, err := db.Exec(s); err != nil {
					b.Fatal(s, err)
				}
			}
			l, err := ledger.New(mysql.New(db), ledger.Options{TTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { l.Close() })
			if stat == nil {
				stat = d.SQL
			}
			return db, l
		}
		inTx := func(db *sql.DB, f func(tx *sql.Tx) error) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := f(tx); err != nil {
				return err
			}
			return tx.Commit()
		}
		order := func(ctx context.Context, tx *sql.Tx, item string) (int64, error) {
			r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
			if err != nil {
				return 0, err
			}
			return r.LastInsertId()
		}
		prep := func(db *sql.DB, q string) *sql.Stmt {
			if q == "" {
				return nil
			}
			s, err := db.Prepare(q)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		mutateOn := func(db *sql.DB, l *ledger.Ledger[*sql.Tx]) func(context.Context, string) error {
			return func(ctx context.Context, k string) error {
				return inTx(db, func(tx *sql.Tx) error {
					_, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: k, Fingerprint: fp}, func(ctx context.Context) (int64, error) {
						return order(ctx, tx, k)
					})
					return err
				})
			}
		}
		// floor: plain and one prepared INSERT of a completed record.
		floorOn := func(db *sql.DB) func(context.Context, string) error {
			ins := prep(db, insCompleted)
			return func(ctx context.Context, k string) error {
				return inTx(db, func(tx *sql.Tx) error {
					if _, err := order(ctx, tx, k); err != nil {
						return err
					}
					now := time.Now().UnixMilli()
					_, err := tx.StmtContext(ctx, ins).ExecContext(ctx, []byte(k), fp[:], now, now, now+3600000)
					return err
				})
			}
		}
		byHand := func(db *sql.DB, h hand) func(context.Context, string) error {
			get, ins, upd := prep(db, h.get), prep(db, h.claim), prep(db, mysqldb.Complete)
			return func(ctx context.Context, k string) error {
				return inTx(db, func(tx *sql.Tx) error {
					now := time.Now().UnixMilli()
					if get != nil {
						var g [17]any
						for i := range g {
							g[i] = new(sql.RawBytes)
						}
						rows, err := tx.StmtContext(ctx, get).QueryContext(ctx, []byte(""), []byte(k))
						if err != nil {
							return err
						}
						if rows.Next() {
							if err := rows.Scan(g[:]...); err != nil {
								return err
							}
						}
						if err := rows.Close(); err != nil {
							return err
						}
					}
					if h.savepoint != "" {
						if _, err := tx.ExecContext(ctx, "SAVEPOINT "+h.savepoint); err != nil {
							return err
						}
					}
					if ins != nil {
						args := []any{[]byte(""), []byte(k), fp[:], []byte("tok"), now + 30000, now, now + 3600000}
						if h.claim == mysqldb.ClaimInsert {
							args = append(args, nil, nil)
						}
						if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, args...); err != nil {
							return err
						}
					}
					id, err := order(ctx, tx, k)
					if err != nil {
						return err
					}
					if h.complete {
						body := []byte(strconv.FormatInt(id, 10))
						if _, err := tx.StmtContext(ctx, upd).ExecContext(ctx, 0, nil, body, "value", nil, nil, 3600000, []byte(""), []byte(k), []byte("tok"), 1); err != nil {
							return err
						}
					}
					if h.release {
						if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+h.savepoint); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}
		dropAll := []string{"DROP INDEX idemledger_ledger_expires_at ON idempotency_ledger", "DROP INDEX idemledger_ledger_in_flight ON idempotency_ledger", "DROP INDEX idemledger_ledger_created_at ON idempotency_ledger"}
		full := hand{get: mysqldb.Get, savepoint: "s", release: true, claim: mysqldb.ClaimInsert, complete: true}
		with := func(f func(*hand)) hand { h := full; f(&h); return h }
		add := func(name string, mk func() func(context.Context, string) error) {
			if name != "plain" && only != "" && !strings.Contains(","+only+",", ","+name+",") {
				return
			}
			current = name
			steps = append(steps, ladderStep{name, mk()})
		}
		add("plain", func() func(context.Context, string) error {
			db, _ := env()
			return func(ctx context.Context, k string) error {
				return inTx(db, func(tx *sql.Tx) error { _, err := order(ctx, tx, k); return err })
			}
		})
		add("floor", func() func(context.Context, string) error { db, _ := env(); return floorOn(db) })
		add("floor-pk", func() func(context.Context, string) error { db, _ := env(dropAll...); return floorOn(db) })
		add("mutate", func() func(context.Context, string) error { return mutateOn(env()) })
		add("mutate-pk", func() func(context.Context, string) error { return mutateOn(env(dropAll...)) })
		add("mutate-noca", func() func(context.Context, string) error { return mutateOn(env(dropAll[2])) })
		add("h-read", func() func(context.Context, string) error { db, _ := env(); return byHand(db, hand{get: mysqldb.Get}) })
		add("h-read-sp", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, hand{get: mysqldb.Get, savepoint: "s", release: true})
		})
		add("h-claim", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.complete = false }))
		})
		add("h-full", func() func(context.Context, string) error { db, _ := env(); return byHand(db, full) })
		add("h-full-pk", func() func(context.Context, string) error { db, _ := env(dropAll...); return byHand(db, full) })
		add("h-full-noca", func() func(context.Context, string) error { db, _ := env(dropAll[2]); return byHand(db, full) })
		add("h-getmax", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.get = getMax }))
		})
		add("h-getunion", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.get = getUnion }))
		})
		add("h-values", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.claim = insValues }))
		})
		add("h-norelease", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.release = false }))
		})
		add("h-nosp", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.savepoint, h.release = "", false }))
		})
		add("h-best", func() func(context.Context, string) error {
			db, _ := env(dropAll[2])
			return byHand(db, with(func(h *hand) { h.get, h.claim = getMax, insValues }))
		})
		// What a claim-first design costs without the claim's read: the
		// savepoint, the in-flight row, fn, the outcome, the RELEASE
		// (design), or with the savepoint left open (design-min).
		add("design", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.get, h.claim = "", insValues }))
		})
		add("design-min", func() func(context.Context, string) error {
			db, _ := env()
			return byHand(db, with(func(h *hand) { h.get, h.claim, h.release = "", insValues, false }))
		})

		n := nops
		if clients == 1 {
			n = max(nops/10, 8)
		}
		all := map[string][]result{}
		var seq atomic.Int64
		// Warm up: every connection of every pool opened, every
		// statement prepared on it.
		for _, s := range steps {
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for range 3 {
						if err := s.op(ctx, fmt.Sprintf("w-%d", seq.Add(1))); err != nil {
							b.Error(s.name, err)
						}
					}
				})
			}
			wg.Wait()
		}
		for round := range rounds {
			load, _ := os.ReadFile("/proc/loadavg")
			fmt.Fprintf(out, "# clients=%d round=%d load %s", clients, round+1, load)
			perm := rand.Perm(len(steps))
			got := map[string]result{}
			for _, i := range perm {
				s := steps[i]
				before := status(b, stat)
				ours := tids(b, stat, dbnames[s.name])
				t0, p0, o0, c0, r0 := time.Now(), processCPU(), threadsCPU(ours), selfCPU(), ladderTrips.Load()
				var next atomic.Int64
				var wg sync.WaitGroup
				var fail atomic.Pointer[error]
				for range clients {
					wg.Go(func() {
						for next.Add(1) <= int64(n) {
							if err := s.op(ctx, fmt.Sprintf("k-%d", seq.Add(1))); err != nil {
								fail.Store(&err)
								return
							}
						}
					})
				}
				wg.Wait()
				if e := fail.Load(); e != nil {
					b.Fatal(s.name, *e)
				}
				el := time.Since(t0)
				p1, o1, c1 := processCPU(), threadsCPU(ours), selfCPU()
				per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
				r := result{
					ops:   float64(n) / el.Seconds(),
					conn:  per(o1 - o0),
					rest:  per((p1 - p0) - (o1 - o0)),
					cli:   per(c1 - c0),
					trips: float64(ladderTrips.Load()-r0) / float64(n),
				}
				after := status(b, stat)
				r.redo = float64(after["Innodb_os_log_written"]-before["Innodb_os_log_written"]) / float64(n)
				if os.Getenv("IDEMLEDGER_LADDER_DEBUG") != "" {
					fmt.Fprintf(out, "debug %s el %v process %v ours %v (%d threads) self %v\n", s.name, el, p1-p0, o1-o0, len(ours), c1-c0)
				}
				got[s.name] = r
				all[s.name] = append(all[s.name], r)
			}
			for _, s := range steps {
				r := got[s.name]
				fmt.Fprintf(out, "clients=%d round=%d %-12s %8.0f ops/s  x%.2f  conn %5.0f  rest %5.0f  cli %5.0f us/op  redo %5.0f B/op  trips %.2f\n",
					clients, round+1, s.name, r.ops, r.ops/got["plain"].ops, r.conn, r.rest, r.cli, r.redo, r.trips)
			}
			out.Flush()
		}
		fmt.Fprintf(out, "# clients=%d summary over %d rounds: ratio to plain, median (lowest-highest); conn, rest, cli us/op and redo B/op medians\n", clients, rounds)
		for _, s := range steps {
			var ratios, conn, rest, cli, redo []float64
			for i, r := range all[s.name] {
				ratios = append(ratios, r.ops/all["plain"][i].ops)
				conn = append(conn, r.conn)
				rest = append(rest, r.rest)
				cli = append(cli, r.cli)
				redo = append(redo, r.redo)
			}
			m := median(ratios)
			fmt.Fprintf(out, "clients=%d %-12s x%.2f (%.2f-%.2f)  conn %.0f  rest %.0f  cli %.0f  redo %.0f\n", clients, s.name, m, ratios[0], ratios[len(ratios)-1], median(conn), median(rest), median(cli), median(redo))
		}
		out.Flush()
	}
}

// median of v, which it sorts.
func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// threadCPU is the CPU time the server thread tid has run, from schedstat.
func threadCPU(tid int64) time.Duration {
	pid, err := os.ReadFile("/run/mysqld/mysqld.pid")
	if err != nil {
		return 0
	}
	s, err := os.ReadFile(fmt.Sprintf("/proc/%s/task/%d/schedstat", strings.TrimSpace(string(pid)), tid))
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseInt(strings.Fields(string(s))[0], 10, 64)
	return time.Duration(ns)
}

// BenchmarkMySQLStatements measures the CPU the server's thread spends per
// statement, on one connection, each statement run IDEMLEDGER_LADDER_OPS
// times (default 100) in a transaction, IDEMLEDGER_LADDER_ROUNDS rounds
// (default 1): Get and two forms of it without a temporary table, the
// claim's INSERT ... SELECT and INSERT ... VALUES, with and without the
// secondary indexes, the outcome's UPDATE, SAVEPOINT, RELEASE, COMMIT.
func BenchmarkMySQLStatements(b *testing.B) {
	d := testdb.MySQLDB(b)
	ctx := context.Background()
	db := d.SQL
	nops, _ := strconv.Atoi(os.Getenv("IDEMLEDGER_LADDER_OPS"))
	if nops == 0 {
		nops = 100
	}
	rounds, _ := strconv.Atoi(os.Getenv("IDEMLEDGER_LADDER_ROUNDS"))
	if rounds == 0 {
		rounds = 1
	}
	for _, s := range []string{
		"CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)",
		"CREATE TABLE pk_ledger LIKE idempotency_ledger",
		"DROP INDEX idemledger_ledger_expires_at ON pk_ledger", "DROP INDEX idemledger_ledger_in_flight ON pk_ledger", "DROP INDEX idemledger_ledger_created_at ON pk_ledger",
	} {
		if _, err := db.Exec(s); err != nil {
			b.Fatal(s, err)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var tid int64
	if err := conn.QueryRowContext(ctx, "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&tid); err != nil {
		b.Fatal(err)
	}
	fp := hash.Bytes([]byte("payload"))
	now := time.Now().UnixMilli()
	var seq atomic.Int64
	type stmt struct {
		name string
		q    string
		args func(i int64) []any
		// keyed statements run on the keys a claim inserted in the
		// same round
	}
	claimArgs := func(i int64) []any {
		return []any{[]byte(""), []byte(fmt.Sprintf("k-%d", i)), fp[:], []byte("tok"), now + 30000, now, now + 3600000, nil, nil}
	}
	stmts := []stmt{
		{"get-miss", mysqldb.Get, func(i int64) []any { return []any{[]byte(""), []byte(fmt.Sprintf("none-%d", i))} }},
		{"get-union-miss", getUnion, func(i int64) []any { return []any{[]byte(""), []byte(fmt.Sprintf("none-%d", i))} }},
		{"get-max-miss", getMax, func(i int64) []any { return []any{[]byte(""), []byte(fmt.Sprintf("none-%d", i))} }},
		{"claim-insert", mysqldb.ClaimInsert, claimArgs},
		{"claim-insert-pk", strings.Replace(mysqldb.ClaimInsert, "INSERT INTO idempotency_ledger", "INSERT INTO pk_ledger", 1), claimArgs},
		{"insert-values", insValues, func(i int64) []any { a := claimArgs(i); return a[:7] }},
		{"insert-completed", insCompleted, func(i int64) []any { return []any{[]byte(fmt.Sprintf("c-%d", i)), fp[:], now, now, now + 3600000} }},
		{"order", "INSERT INTO orders (item) VALUES (?)", func(i int64) []any { return []any{"x"} }},
		{"select-1", "SELECT 1", func(int64) []any { return nil }},
		{"savepoint", "SAVEPOINT s", nil},
		{"sp+release", "SAVEPOINT s", nil},
	}
	// complete runs on the keys claim-insert wrote
	completeArgs := func(i int64) []any {
		return []any{0, nil, []byte("1234"), "value", nil, nil, 3600000, []byte(""), []byte(fmt.Sprintf("k-%d", i)), []byte("tok"), 1}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	all := map[string][]float64{}
	for round := range rounds {
		for _, st := range append(stmts, stmt{"complete", mysqldb.Complete, completeArgs}, stmt{"complete-pk", strings.Replace(mysqldb.Complete, "UPDATE idempotency_ledger", "UPDATE pk_ledger", 1), completeArgs}, stmt{"commit", "", nil}) {
			var ps *sql.Stmt
			if st.q != "" && st.args != nil {
				if ps, err = conn.PrepareContext(ctx, st.q); err != nil {
					b.Fatal(st.name, err)
				}
			}
			base := seq.Load()
			if st.name == "complete" || st.name == "complete-pk" {
				base -= int64(nops) // the claim-insert keys
				if st.name == "complete-pk" {
					base = pkBase
				}
			}
			if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
				b.Fatal(err)
			}
			c0, t0 := threadCPU(tid), time.Now()
			for i := range int64(nops) {
				var err error
				switch {
				case st.name == "commit":
					if _, err = conn.ExecContext(ctx, "COMMIT"); err == nil {
						_, err = conn.ExecContext(ctx, "BEGIN")
					}
				case ps == nil:
					_, err = conn.ExecContext(ctx, st.q)
					if err == nil && st.name == "sp+release" {
						_, err = conn.ExecContext(ctx, "RELEASE SAVEPOINT s")
					}
				default:
					rows, qerr := ps.QueryContext(ctx, st.args(base+i)...)
					if err = qerr; err == nil {
						for rows.Next() {
						}
						err = rows.Close()
					}
				}
				if err != nil {
					b.Fatal(st.name, err)
				}
			}
			cpu, el := threadCPU(tid)-c0, time.Since(t0)
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				b.Fatal(err)
			}
			if st.name == "claim-insert" || st.name == "claim-insert-pk" || st.name == "insert-values" || st.name == "insert-completed" {
				if st.name == "claim-insert-pk" {
					pkBase = base
				}
				seq.Add(int64(nops))
			}
			if ps != nil {
				ps.Close()
			}
			us := float64(cpu.Microseconds()) / float64(nops)
			all[st.name] = append(all[st.name], us)
			fmt.Fprintf(out, "round=%d %-16s srv %6.1f us/stmt  wall %6.1f us/stmt\n", round+1, st.name, us, float64(el.Microseconds())/float64(nops))
		}
		out.Flush()
	}
	for _, st := range append(stmts, stmt{name: "complete"}, stmt{name: "complete-pk"}, stmt{name: "commit"}) {
		fmt.Fprintf(out, "%-16s srv %6.1f us/stmt (median of %d)\n", st.name, median(all[st.name]), rounds)
	}
}

var pkBase int64

const getUnion = "SELECT CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED), l.scope, l.`key`, l.fingerprint, l.state, l.lease_token, l.lease_expires_at, l.fence, l.status, l.headers, l.body, l.created_at, l.completed_at, l.expires_at, l.committed_at, l.kind, l.failures FROM idempotency_ledger AS l WHERE l.scope = ? AND l.`key` = ? UNION ALL SELECT CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"

const getMax = "SELECT CAST(UNIX_TIMESTAMP() * 1000 + MICROSECOND(NOW(6)) DIV 1000 AS SIGNED), MAX(l.scope), MAX(l.`key`), MAX(l.fingerprint), MAX(l.state), MAX(l.lease_token), MAX(l.lease_expires_at), MAX(l.fence), MAX(l.status), MAX(l.headers), MAX(l.body), MAX(l.created_at), MAX(l.completed_at), MAX(l.expires_at), MAX(l.committed_at), MAX(l.kind), MAX(l.failures) FROM idempotency_ledger AS l WHERE l.scope = ? AND l.`key` = ?"

const insValues = "INSERT INTO idempotency_ledger (scope, `key`, fingerprint, state, lease_token, lease_expires_at, fence, created_at, expires_at) VALUES (?, ?, ?, 'in_flight', ?, ?, 1, ?, ?)"

const insCompleted = "INSERT INTO idempotency_ledger (scope, `key`, fingerprint, state, fence, status, body, kind, created_at, completed_at, expires_at) VALUES ('', ?, ?, 'completed', 1, 0, '{\"id\":1}', 'value', ?, ?, ?)"
