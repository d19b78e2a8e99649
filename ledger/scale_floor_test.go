package ledger

// Knobs of scalePurge for PostgreSQL's purge: the options of
// the Purge under measurement, and in its place the floors it is compared
// with, the same load beside a loop that does less than Purge does.

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// scalePurgeEnv sets the PurgeOptions of scalePurge's Purge, as
	// comma-separated batch=<rows>, time=<duration>, pause=<duration>
	// (zero options, the default, when unset).
	scalePurgeEnv = "IDEMLEDGER_SCALE_PURGE"
	// scaleFloorEnv replaces the Purge of TestScalePostgresPurge with a
	// floor (PostgreSQL only):
	//
	//	delete            a loop of plain DELETEs of 1,000 expired rows,
	//	                  each in its own transaction, each starting where
	//	                  the one before stopped: no row locks, no lease
	//	                  test, nothing but the deletes and their commits
	//	commit=B,N,S      N transactions of B bytes of WAL each (a
	//	                  transactional logical message) and nothing else,
	//	                  spread evenly over S seconds: what the load pays
	//	                  for the purge's WAL and commits alone
	//
	// and the SQLite purge with one (SQLite only):
	//
	//	disk=R            the writes and syncs of a purge of R rows/s made
	//	                  to scratch files beside the ledger's, without
	//	                  SQLite (scale_diskfloor_test.go)
	scaleFloorEnv = "IDEMLEDGER_SCALE_FLOOR"
)

// scalePurgeOptions reads scalePurgeEnv.
func scalePurgeOptions(t *testing.T) PurgeOptions {
	t.Helper()
	var o PurgeOptions
	v := os.Getenv(scalePurgeEnv)
	if v == "" {
		return o
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "batch":
			o.BatchSize, err = strconv.Atoi(val)
		case "time":
			o.BatchTime, err = time.ParseDuration(val)
		case "pause":
			o.Pause, err = time.ParseDuration(val)
		default:
			t.Fatalf("%s=%q: unknown %q", scalePurgeEnv, v, k)
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", scalePurgeEnv, v, err)
		}
	}
	return o
}

// walLSN is PostgreSQL's current WAL position in bytes.
func walLSN(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// scaleFloor runs the floor scaleFloorEnv names in place of the purge, if
// any, calling batch after each transaction like Purge's batchDone and
// progress like its Progress; ok is false when no floor is asked for.
func scaleFloor(t *testing.T, s *scaleLedger, progress func(int64)) (n int64, ok bool) {
	t.Helper()
	v := os.Getenv(scaleFloorEnv)
	if v == "" || strings.HasPrefix(v, "disk=") {
		return 0, false
	}
	if s.engine != "postgres" {
		t.Fatalf("%s: PostgreSQL only", scaleFloorEnv)
	}
	ctx := context.Background()
	one := func(q string, args ...any) (rows, last int64) {
		t.Helper()
		start := time.Now()
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, q, args...).Scan(&rows, &last); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if batchDone != nil {
			batchDone(rows, time.Since(start))
		}
		return rows, last
	}
	switch {
	case v == "delete":
		var now int64
		if err := s.db.QueryRow(`SELECT floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		var after int64
		for {
			rows, last := one(`WITH d AS (
				DELETE FROM idempotency_ledger WHERE ctid = ANY(ARRAY(
					SELECT ctid FROM idempotency_ledger
					WHERE expires_at <= $1 AND expires_at >= $2 AND state = 'completed'
					ORDER BY expires_at LIMIT 1000))
				RETURNING expires_at)
				SELECT count(*), COALESCE(max(expires_at), 0) FROM d`, now, after)
			n += rows
			progress(n)
			if rows < 1000 {
				return n, true
			}
			after = last
		}
	case strings.HasPrefix(v, "commit="):
		f := strings.Split(strings.TrimPrefix(v, "commit="), ",")
		if len(f) != 3 {
			t.Fatalf("%s=%q: want commit=bytes,count,seconds", scaleFloorEnv, v)
		}
		bytes, err1 := strconv.Atoi(f[0])
		count, err2 := strconv.Atoi(f[1])
		secs, err3 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || err3 != nil || count < 1 {
			t.Fatalf("%s=%q: want commit=bytes,count,seconds", scaleFloorEnv, v)
		}
		every := time.Duration(secs * float64(time.Second) / float64(count))
		t0 := time.Now()
		for i := range count {
			time.Sleep(time.Until(t0.Add(time.Duration(i) * every)))
			one(`SELECT 1::bigint, pg_logical_emit_message(true, 'idemledger-floor', repeat('x', $1::int)) - '0/0'::pg_lsn`, bytes)
			n++
			progress(n)
		}
		return n, true
	}
	t.Fatalf("%s=%q: want delete or commit=bytes,count,seconds", scaleFloorEnv, v)
	return 0, false
}
