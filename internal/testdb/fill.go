package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Fill describes records to write in bulk, in the shapes the ledger itself
// writes: completed records with random UUID keys spread over 16 scopes, a
// 32-byte fingerprint, status 200, a Content-Type header and a body of Body
// bytes, created one millisecond apart in key order (so expiry follows
// insertion, as in service). The first Expired of them expired before Now,
// the rest expire an hour after it.
type Fill struct {
	Records, Expired int
	// Now is the reference time in Unix milliseconds.
	Now int64
	// Body is each record's body length in bytes.
	Body int
}

// fillChunk is how many rows one INSERT … SELECT (PostgreSQL) or one
// transaction (SQLite) writes: large enough that a million rows take
// seconds, small enough to keep each transaction's memory and WAL modest.
const fillChunk = 100_000

// FillSQLite writes f's records into the ledger's table of db (SQLite) in
// transactions of fillChunk rows, each row bound to one multi-row INSERT,
// far faster than through the ledger. The rows are made in Go: SQLite's own
// randomblob costs more than the insert itself in pure Go, so every record shares one random body and keys come from
// Go's generator. Any failure ends the test.
func FillSQLite(t testing.TB, db *sql.DB, f Fill) {
	t.Helper()
	// The primary key's entries go in at random places (UUID keys): with
	// SQLite's default page cache (2 MB) a row would read and write pages
	// of an index hundreds of megabytes large. One connection with a cache
	// as large as the index writes them in seconds.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("testdb: fill: %v", err)
	}
	defer conn.Close()
	var cache int64
	if err := conn.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil {
		t.Fatalf("testdb: fill: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA cache_size = -1048576"); err != nil { // 1 GiB
		t.Fatalf("testdb: fill: %v", err)
	}
	defer func() {
		// The connection goes back to the pool as it was.
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", cache)); err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
	}()

	// Statements of perStmt records, prepared once per transaction: binding
	// is by position, since modernc looks each parameter's name up in a
	// list as long as the statement's parameters.
	const perStmt = 500
	body := make([]byte, f.Body)
	for i := range body {
		body[i] = "0123456789abcdef"[rand.IntN(16)]
	}
	headers := []byte(`{"Content-Type":["application/json"]}`)
	args := make([]any, 0, 7*perStmt)
	for from := 0; from < f.Records; from += fillChunk {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
		full, err := tx.PrepareContext(ctx, fillInsert(perStmt))
		if err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
		to := min(from+fillChunk, f.Records)
		for i := from; i < to; i += perStmt {
			n := min(perStmt, to-i)
			args = args[:0]
			for r := range n {
				row := f.row(i + r)
				args = append(args, row.scope, row.key, row.fingerprint, headers, body, row.created, row.expires)
			}
			stmt := full
			if n < perStmt {
				if stmt, err = tx.PrepareContext(ctx, fillInsert(n)); err != nil {
					t.Fatalf("testdb: fill: %v", err)
				}
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				t.Fatalf("testdb: fill: %v", err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
	}
}

// fillInsert is an INSERT of rows records, seven parameters a record
// (scope, key, fingerprint, headers, body, created_at, expires_at).
func fillInsert(rows int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO idempotency_ledger (scope, key, fingerprint, headers, body, created_at, expires_at,
		state, fence, status, completed_at) VALUES `)
	for r := range rows {
		if r > 0 {
			q.WriteString(",")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, 'completed', 1, 200, 0)")
	}
	return q.String()
}

// fillRow is one record of a Fill.
type fillRow struct {
	scope, key       string
	fingerprint      []byte
	created, expires int64
}

// row returns record i of f: a random version-4 UUID key in one of 16
// scopes, created one millisecond after record i-1, expired before f.Now
// for the first f.Expired records and an hour after it for the others.
func (f Fill) row(i int) fillRow {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	fp := sha256.Sum256(b[:])
	created := f.Now - 7_200_000 + int64(i)
	expires := f.Now + 3_600_000
	if i < f.Expired {
		expires = f.Now - int64(f.Expired) + int64(i) - 1
	}
	return fillRow{
		scope:       "tenant-" + strconv.Itoa(i%16),
		key:         h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
		fingerprint: fp[:],
		created:     created, expires: expires,
	}
}

// FillPostgres is [FillSQLite] for PostgreSQL (a pool of the "pgx" driver on
// the ledger's schema).
func FillPostgres(t testing.TB, db *sql.DB, f Fill) {
	t.Helper()
	const q = `
		INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, headers, body,
			created_at, completed_at, expires_at)
		SELECT 'tenant-' || (i % 16), gen_random_uuid()::text,
			decode(md5(random()::text) || md5(random()::text), 'hex'), 'completed', 1, 200,
			convert_to('{"Content-Type":["application/json"]}', 'UTF8'),
			convert_to(substr(repeat(md5(random()::text), ($3::int + 31) / 32), 1, $3::int), 'UTF8'),
			c, c + 5, CASE WHEN i < $4 THEN $5 - $4 + i - 1 ELSE $5 + 3600000 END
		FROM (SELECT i, $5::bigint - 7200000 + i AS c FROM generate_series($1::bigint, $2::bigint) AS i) AS n`
	fill(t, db, f, q)
}

func fill(t testing.TB, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, f Fill, q string) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < f.Records; from += fillChunk {
		to := min(from+fillChunk, f.Records) - 1
		if _, err := db.ExecContext(ctx, q, from, to, f.Body, f.Expired, f.Now); err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
	}
}
