package testdb

import (
	"context"
	"database/sql"
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

// fillChunk is how many rows one INSERT … SELECT writes: large enough that
// a million rows take seconds, small enough to keep each transaction's
// memory modest.
const fillChunk = 100_000

// FillSQLite writes f's records into the ledger's table of db (SQLite) with
// a few large INSERT … SELECT statements, far faster than through the
// ledger. Any failure ends the test.
func FillSQLite(t testing.TB, db *sql.DB, f Fill) {
	t.Helper()
	const q = `
		WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
		INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, headers, body,
			created_at, completed_at, expires_at)
		SELECT 'tenant-' || (i % 16),
			lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
				hex(randomblob(2)) || '-' || hex(randomblob(6))),
			randomblob(32), 'completed', 1, 200, CAST('{"Content-Type":["application/json"]}' AS BLOB),
			CAST(substr(hex(randomblob(?3)), 1, ?3) AS BLOB),
			c, c + 5, CASE WHEN i < ?4 THEN ?5 - ?4 + i - 1 ELSE ?5 + 3600000 END
		FROM (SELECT i, ?5 - 7200000 + i AS c FROM n)`
	fill(t, db, f, q, f.Body)
}

// FillPostgres is FillSQLite for PostgreSQL (a pool of the "pgx" driver on
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
	fill(t, db, f, q, f.Body)
}

func fill(t testing.TB, db *sql.DB, f Fill, q string, body int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < f.Records; from += fillChunk {
		to := min(from+fillChunk, f.Records) - 1
		if _, err := db.ExecContext(ctx, q, from, to, body, f.Expired, f.Now); err != nil {
			t.Fatalf("testdb: fill: %v", err)
		}
	}
}
