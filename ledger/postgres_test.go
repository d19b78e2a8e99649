package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/postgres"
)

// TestMutateDuplicateIsolation runs a duplicate Mutate while the first is
// inside fn, under each isolation level, on PostgreSQL. Under READ
// COMMITTED the duplicate waits and replays; under REPEATABLE READ and
// SERIALIZABLE the first's row was committed after the duplicate's
// snapshot, so it fails with ErrRetryable (a serialization failure), and
// running its transaction again replays.
func TestMutateDuplicateIsolation(t *testing.T) {
	tests := []struct {
		level     sql.IsolationLevel
		retryable bool
	}{
		{sql.LevelReadCommitted, false},
		{sql.LevelRepeatableRead, true},
		{sql.LevelSerializable, true},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			b := setupOn(t, testdb.PostgresDB(t))
			opts := &sql.TxOptions{Isolation: tt.level}
			finishFirst := b.holdFirst(func() (*sql.Tx, error) { return b.db.BeginTx(b.ctx, opts) })
			// The duplicate's transaction starts (and, at the stricter
			// levels, takes its snapshot) while the first is in fn.
			tx, err := b.db.BeginTx(b.ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.l.Driver().Rollback(b.ctx, tx)
			if _, err := tx.Exec("SELECT count(*) FROM orders"); err != nil {
				t.Fatal(err)
			}
			dup := make(chan error, 1)
			var res ledger.Result[order]
			go func() {
				var err error
				res, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "second", nil))
				dup <- err
			}()
			time.Sleep(50 * time.Millisecond) // let the duplicate reach the row
			if err := finishFirst(); err != nil {
				t.Fatal(err)
			}
			err = <-dup
			want := ledger.Result[order]{Value: order{ID: 1, Item: "first"}, Replayed: true, Fence: 1}
			if !tt.retryable {
				if err != nil || res != want {
					t.Fatalf("duplicate = %+v, %v; want %+v", res, err, want)
				}
			} else {
				var pg *pgconn.PgError
				if !errors.Is(err, ledger.ErrRetryable) || errors.Is(err, ledger.ErrBusy) || !errors.As(err, &pg) || pg.Code != "40001" {
					t.Fatalf("duplicate = %+v, %v; want ErrRetryable with SQLSTATE 40001", res, err)
				}
				b.l.Driver().Rollback(b.ctx, tx)
				// The retry of the whole transaction replays.
				b.inTxOpts(t, opts, func(tx *sql.Tx) {
					res, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "second", nil))
				})
				if err != nil || res != want {
					t.Fatalf("retry = %+v, %v; want %+v", res, err, want)
				}
			}
			if n := b.count(t, "orders"); n != 1 {
				t.Errorf("%d orders, want 1", n)
			}
		})
	}
}

// inTxOpts is inTx with transaction options.
func (b *bundle[TTx]) inTxOpts(t *testing.T, opts *sql.TxOptions, f func(tx *sql.Tx)) {
	sb := any(b).(*bundle[*sql.Tx])
	t.Helper()
	tx, err := sb.db.BeginTx(b.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.l.Driver().Rollback(b.ctx, tx)
	f(tx)
	if err := sb.l.Driver().Commit(b.ctx, tx); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresServerClock: with Options.Now unset, the PostgreSQL engine
// takes every time from the server, so a replica whose own clock is off
// (by 30 s, or by a year) cannot end a lease early or keep an expired
// record alive; the process's clock is never read. The stored times fall
// between two readings of the server's clock around the claim, and the
// lease decisions follow the server's clock: a key with a 1 min lease is in
// flight, one with a 1 ms lease is taken over once the server's clock has
// moved past it.
func TestPostgresServerClock(t *testing.T) {
	db := setupOn(t, testdb.PostgresDB(t)).db
	ctx := context.Background()
	serverNow := func() time.Time {
		t.Helper()
		var ms int64
		if err := db.QueryRow("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint").Scan(&ms); err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(ms)
	}
	long, err := ledger.New(postgres.New(db), ledger.Options{TTL: time.Hour, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	before := serverNow()
	c, err := long.Claim(ctx, req("long", "p"))
	if err != nil {
		t.Fatal(err)
	}
	after := serverNow()
	r, err := long.Get(ctx, "tenant-1", "long")
	if err != nil {
		t.Fatal(err)
	}
	if r.CreatedAt.Before(before) || r.CreatedAt.After(after) {
		t.Errorf("CreatedAt %v outside the server's clock [%v, %v]", r.CreatedAt, before, after)
	}
	if !r.LeaseExpiresAt.Equal(r.CreatedAt.Add(time.Minute)) || !c.LeaseExpiresAt.Equal(r.LeaseExpiresAt) ||
		!r.ExpiresAt.Equal(r.CreatedAt.Add(time.Hour)) {
		t.Errorf("lease until %v (claim says %v), expires %v; want created %v + 1 min, + 1 h", r.LeaseExpiresAt, c.LeaseExpiresAt, r.ExpiresAt, r.CreatedAt)
	}
	_, err = long.Claim(ctx, req("long", "p"))
	var inflight *ledger.InFlightError
	if !errors.As(err, &inflight) || inflight.RetryAfter <= 0 || inflight.RetryAfter > time.Minute {
		t.Errorf("duplicate = %v, want in flight for at most 1 min", err)
	}
	// Extend and Complete take the server's clock too.
	until, err := long.Extend(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if until.Before(r.LeaseExpiresAt) || !c.LeaseExpiresAt.Equal(r.LeaseExpiresAt) {
		t.Errorf("Extend returned %v (the claim now says %v); want no earlier than %v, the claim unchanged", until, c.LeaseExpiresAt, r.LeaseExpiresAt)
	}
	if err := long.Complete(ctx, c, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	done, err := long.Get(ctx, "tenant-1", "long")
	if err != nil {
		t.Fatal(err)
	}
	if done.CompletedAt.Before(after) || done.CompletedAt.After(serverNow()) || !done.ExpiresAt.Equal(done.CompletedAt.Add(time.Hour)) {
		t.Errorf("completed %v, expires %v", done.CompletedAt, done.ExpiresAt)
	}

	short, err := ledger.New(postgres.New(db), ledger.Options{TTL: time.Hour, Lease: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	first, err := short.Claim(ctx, req("short", "p"))
	if err != nil {
		t.Fatal(err)
	}
	for serverNow().Before(first.LeaseExpiresAt.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	second, err := short.Claim(ctx, req("short", "p"))
	if err != nil || second.Fence != 2 || second.Replayed() {
		t.Fatalf("claim after the lease ran out by the server's clock = %+v, %v; want a takeover with fence 2", second, err)
	}
}

// TestPurgeConcurrently runs 4 purgers at once on the same rows, as
// replicas would: together they delete each expired row exactly once, and
// none fails (on PostgreSQL no purger waits for another's batch: SKIP
// LOCKED).
func TestPurgeConcurrently(t *testing.T) {
	eachDriverInTurn(t, testPurgeConcurrently[*sql.Tx], testPurgeConcurrently[pgx.Tx])
}

func testPurgeConcurrently[TTx any](t *testing.T, b0 *bundle[TTx]) {
	b := setupOn(t, freshLike(t, b0.d))
	keep := purgeFixture(t, b, 60) // 60 completed + 30 in flight expired
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
	)
	for range 4 {
		wg.Go(func() {
			n, err := b.l.Purge(b.ctx, ledger.PurgeOptions{BatchSize: 5})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 90 {
		t.Errorf("purgers deleted %d rows in all, want 90", total)
	}
	if got := b.keys(t); !slices.Equal(got, keep) {
		t.Errorf("left %q\nwant %q", got, keep)
	}
}

// TestPostgresReplayWritesNothing: on PostgreSQL the claim writes only
// when the row it read does not stand (queries/postgres, Claim), and a
// replay's statement holds no INSERT at all (the write is a function the
// plan skips), so a replay is answered inside a READ ONLY transaction,
// where any statement holding an INSERT is refused. A first execution
// there is refused, as it must write.
func TestPostgresReplayWritesNothing(t *testing.T) {
	b := setupOn(t, testdb.PostgresDB(t))
	b.inTx(t, func(tx *sql.Tx) {
		if _, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", nil)); err != nil {
			t.Fatal(err)
		}
	})
	readOnly := &sql.TxOptions{ReadOnly: true}
	runs := 0
	var res ledger.Result[order]
	var err error
	b.inTxOpts(t, readOnly, func(tx *sql.Tx) {
		res, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
	})
	if want := (ledger.Result[order]{Value: order{ID: 1, Item: "book"}, Replayed: true, Fence: 1}); err != nil || res != want || runs != 0 {
		t.Fatalf("replay in a read-only transaction = %+v, %v (fn ran %d times); want %+v", res, err, runs, want)
	}
	if c, err := b.l.Claim(b.ctx, req("k", "p")); err != nil || !c.Replayed() {
		t.Fatalf("Claim = %+v, %v; want a replay", c, err)
	}

	tx, err := b.db.BeginTx(b.ctx, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = ledger.Mutate(b.ctx, b.l, tx, req("new", "p"), placeOrder(b, tx, "book", &runs))
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "25006" || runs != 0 { // read_only_sql_transaction
		t.Fatalf("first execution in a read-only transaction = %v (fn ran %d times); want SQLSTATE 25006", err, runs)
	}
}
