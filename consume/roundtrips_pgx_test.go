package consume_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/internal/eventlog"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
)

// TestHandleTxRoundTrips: on pgxv5 in pgx's default query mode, HandleTx
// sends BEGIN with the claim and COMMIT with the stored outcome
// (ledger.MutateOutcomeCommit), so that a first delivery whose handler
// inserts one row takes the three round trips of a plain transaction
// (BEGIN, INSERT, COMMIT), and a redelivery none: the record this process
// completed is in the ledger's cache, which answers before any transaction.
func TestHandleTxRoundTrips(t *testing.T) {
	if testdb.Pooling() == "transaction" {
		t.Skip("pgx's default mode prepares statements, which transaction pooling does not keep (see pgxv5's pooler tests)")
	}
	_, dsn := testdb.PostgresDSN(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	cfg.MaxConns = 1
	testdb.CountWrites(&cfg.ConnConfig.Config, &writes)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, msg text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var lev eventlog.Recorder
	l, err := ledger.New(pgxv5.New(pool), ledger.Options{Observer: &lev})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: "orders-sub"})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	handle := func(id string) (consume.Decision, int64) {
		start := writes.Load()
		d := c.HandleTx(ctx, consume.Message{ID: id, Payload: []byte(`{"order":1}`)}, func(ctx context.Context, tx pgx.Tx, msg consume.Message) (consume.Output, error) {
			runs++
			_, err := tx.Exec(ctx, "INSERT INTO effects (msg) VALUES ($1)", msg.ID)
			return consume.Output{}, err
		})
		return d, writes.Load() - start
	}
	// Warm up: statements prepared on the one connection.
	for range 2 {
		if d, _ := handle("warm"); d.Action != consume.Ack {
			t.Fatalf("warm-up: %+v", d)
		}
	}
	runs = 0
	if d, n := handle("m1"); d.Action != consume.Ack || d.Replayed || runs != 1 || n != 3 {
		t.Errorf("first delivery: %+v, ran %d times, %d round trips; want Ack, ran once, 3", d, runs, n)
	}
	for _, which := range []string{"redelivery", "second redelivery"} {
		lev.Reset()
		if d, n := handle("m1"); d.Action != consume.Ack || !d.Replayed || runs != 1 || n != 0 {
			t.Errorf("%s: %+v, ran %d times in all, %d round trips; want a replayed Ack, ran once, 0", which, d, runs, n)
		}
		if ev := lev.All(); len(ev) != 1 || ev[0].Kind != ledger.EventCacheHit || ev[0].Op != "recall" {
			t.Errorf("%s: the ledger's events %+v, want one cache hit by recall", which, ev)
		}
	}
}
