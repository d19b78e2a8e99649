package river_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/schema"

	riverexample "github.com/idemledger/idemledger/examples/river"
)

const postgresEnv = "IDEMLEDGER_TEST_POSTGRES"

// payments is a fake payments API that counts its calls. fail makes the
// next calls answer 500; hold, when set, is received from before answering.
type payments struct {
	calls   atomic.Int64
	fail    atomic.Int64
	hold    chan struct{}
	entered chan struct{}
	srv     *httptest.Server
}

func newPayments(t *testing.T) *payments {
	p := &payments{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		if p.entered != nil {
			p.entered <- struct{}{}
		}
		if p.hold != nil {
			<-p.hold
		}
		if p.fail.Add(-1) >= 0 {
			http.Error(w, "card network down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"receipt":"rcpt-1"}`))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// env is one test's world: a fresh PostgreSQL schema holding River's
// tables and the ledger's, one pool, a River client and the worker.
type env struct {
	pool     *pgxpool.Pool
	ledger   *ledger.Ledger[pgx.Tx]
	client   *river.Client[pgx.Tx]
	worker   *riverexample.ChargeWorker
	payments *payments
}

func setup(t *testing.T) *env {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skipf("skipped: set %s (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run it against PostgreSQL", postgresEnv)
	}
	ctx := context.Background()
	dsn := ownSchema(t, base)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	d := pgxv5.New(pool)
	if err := schema.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })

	p := newPayments(t)
	w := &riverexample.ChargeWorker{Ledger: l, PaymentsURL: p.srv.URL}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
		TestOnly:          true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{pool: pool, ledger: l, client: client, worker: w, payments: p}
}

// ownSchema creates a schema of t's own, dropped when t ends, and returns
// base with it alone on the search_path.
func ownSchema(t *testing.T, base string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "river_" + hex.EncodeToString(b[:])
	admin := func(stmt string) error {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), stmt)
		return err
	}
	if err := admin("CREATE SCHEMA " + name); err != nil {
		t.Fatalf("%s=%s: %v", postgresEnv, base, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// insert inserts a charge job without working it and returns it as River
// hands it to the worker.
func (e *env) insert(t *testing.T, order string) *river.Job[riverexample.ChargeArgs] {
	t.Helper()
	args := riverexample.ChargeArgs{OrderID: order, AmountCents: 1999}
	res, err := e.client.Insert(context.Background(), args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &river.Job[riverexample.ChargeArgs]{JobRow: res.Job, Args: args}
}

// run starts River and waits until job id is completed.
func (e *env) run(t *testing.T, id int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	events, stop := e.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	defer stop()
	if err := e.client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.client.Stop(ctx)
	})
	for {
		select {
		case ev := <-events:
			if ev.Job.ID != id {
				continue
			}
			if ev.Kind != river.EventKindJobCompleted {
				t.Fatalf("job %d: %s, errors %v", id, ev.Kind, ev.Job.Errors)
			}
			return
		case <-ctx.Done():
			t.Fatalf("job %d not completed: %v", id, ctx.Err())
		}
	}
}

func (e *env) record(t *testing.T, job *river.Job[riverexample.ChargeArgs]) *ledger.Record {
	t.Helper()
	req := riverexample.Request(job)
	r, err := e.ledger.Get(context.Background(), req.Scope, req.Key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A job River inserts and works once makes one call, and its receipt is
// stored.
func TestOnce(t *testing.T) {
	e := setup(t)
	job := e.insert(t, "order-1")
	e.run(t, job.ID)
	if n := e.payments.calls.Load(); n != 1 {
		t.Fatalf("payments called %d times, want 1", n)
	}
	r := e.record(t, job)
	if r.State != ledger.StateCompleted || r.Outcome.Kind != riverexample.OutcomeKind || string(r.Outcome.Body) != `{"receipt":"rcpt-1"}` {
		t.Fatalf("record %v %q %s", r.State, r.Outcome.Kind, r.Outcome.Body)
	}
}

// River runs a job at least once: an attempt whose completion River never
// recorded (worked here outside River, as if the process died before
// River's JobCompleteTx) is followed by River's own attempt and by one
// more, and the payments API is called once.
func TestAtLeastOnce(t *testing.T) {
	e := setup(t)
	job := e.insert(t, "order-2")
	ctx := context.Background()
	if err := e.worker.Work(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := e.worker.Work(ctx, job); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	c, err := e.ledger.Claim(ctx, riverexample.Request(job))
	if err != nil || !c.Replayed() {
		t.Fatalf("claim after two attempts: %v, replayed %v", err, c != nil && c.Replayed())
	}
	e.run(t, job.ID) // River's attempt: still available in River's table
	if n := e.payments.calls.Load(); n != 1 {
		t.Fatalf("payments called %d times, want 1", n)
	}
}

// Two attempts of one job at once call once; the other is told the job is
// in flight and returns an error, so River retries it later (and then it
// replays).
func TestConcurrent(t *testing.T) {
	e := setup(t)
	e.payments.hold = make(chan struct{})
	e.payments.entered = make(chan struct{}, 2)
	job := e.insert(t, "order-3")
	ctx := context.Background()
	var wg sync.WaitGroup
	var first error
	wg.Add(1)
	go func() { defer wg.Done(); first = e.worker.Work(ctx, job) }()
	<-e.payments.entered // the first attempt holds the key and is calling
	err := e.worker.Work(ctx, job)
	if !errors.Is(err, ledger.ErrInFlight) {
		t.Fatalf("concurrent attempt: %v, want ErrInFlight", err)
	}
	close(e.payments.hold)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	if err := e.worker.Work(ctx, job); err != nil { // River's retry
		t.Fatal(err)
	}
	if n := e.payments.calls.Load(); n != 1 {
		t.Fatalf("payments called %d times, want 1", n)
	}
}

// A call that fails before the commit point releases the key: the retry
// calls again, and succeeds.
func TestFailureReleases(t *testing.T) {
	e := setup(t)
	e.payments.fail.Store(1)
	job := e.insert(t, "order-4")
	ctx := context.Background()
	if err := e.worker.Work(ctx, job); err == nil {
		t.Fatal("first attempt succeeded against a failing API")
	}
	req := riverexample.Request(job)
	if _, err := e.ledger.Get(ctx, req.Scope, req.Key); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("record after a failed call: %v, want ErrNotFound", err)
	}
	job.Attempt++ // River's retry carries the same ID and args
	if err := e.worker.Work(ctx, job); err != nil {
		t.Fatal(err)
	}
	if n := e.payments.calls.Load(); n != 2 {
		t.Fatalf("payments called %d times, want 2", n)
	}
	if r := e.record(t, job); r.State != ledger.StateCompleted {
		t.Fatalf("record %v after the retry", r.State)
	}
}
