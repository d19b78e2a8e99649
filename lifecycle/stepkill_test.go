package lifecycle_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// The kill matrix runs this test binary again as a worker process that
// serves one request with a three-step handler (a database step, an
// outside step whose provider deduplicates by the forwarded key, an
// outside step whose provider does not) and SIGKILLs itself at one point:
// before a step, between a step's effect and its record, or after its
// record. The parent then retries the request to the end, as a client
// would, and counts each effect. The providers are tables of the
// database under test.
const (
	killWorkerEnv = "IDEMLEDGER_STEPKILL_WORKER" // the driver's name: run as a worker
	killSourceEnv = "IDEMLEDGER_STEPKILL_SOURCE" // the database (testdb.DB.Source)
	killPointEnv  = "IDEMLEDGER_STEPKILL_POINT"  // where to die: "before 2", "between 2", "after 2"
	killKeyEnv    = "IDEMLEDGER_STEPKILL_KEY"    // the request's key
	killModeEnv   = "IDEMLEDGER_STEPKILL_MODE"   // "lease" (Decide and a Run) or "consume" (consume.Handle)

	// killLease is short so that the retry takes the dead worker's record
	// over within a moment.
	killLease = 300 * time.Millisecond
)

// killTables are the effects: rides (the database step's writes), charges
// at the provider that deduplicates (one row per charge it made, with the
// key it was given), mails at the one that does not.
var killTables = []string{
	"CREATE TABLE km_rides (k VARCHAR(255) NOT NULL)",
	"CREATE TABLE km_charges (fk VARCHAR(255) NOT NULL, k VARCHAR(255) NOT NULL)",
	"CREATE TABLE km_mails (k VARCHAR(255) NOT NULL)",
}

// TestStepsKillMatrix: on every driver, in lease mode (Decide and a Run,
// as idemhttp, idemgrpc and idemconnect serve) and through a consumer
// (consume.Handle), a worker serving a three-step request is killed with
// SIGKILL at each of nine points, then the request is retried (the message
// redelivered) to the end. Every retry ends with the handler's final
// answer (never NotStored, never the dead-letter path); the database step
// and the deduplicating provider's effect happen exactly once; the other
// provider's effect happens once, or twice only when the worker died
// between that effect and its record.
// The consumer's half runs with IDEMLEDGER_LONG set (it doubles the test's
// time: a process per point); -short skips the whole matrix.
func TestStepsKillMatrix(t *testing.T) {
	if name := os.Getenv(killWorkerEnv); name != "" {
		killWorker(t, name)
		t.Fatal("the worker was to die, and returned")
	}
	if testing.Short() {
		t.Skip("spawns a process per kill point and driver")
	}
	testdb.Each(t, testStepsKillMatrix[*sql.Tx], testStepsKillMatrix[pgx.Tx])
}

func testStepsKillMatrix[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	for _, q := range killTables {
		if _, err := d.SQL.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	l := newLedger(t, d, ledger.Options{TTL: time.Hour, Lease: killLease})
	modes := []string{"lease"}
	if os.Getenv("IDEMLEDGER_LONG") != "" {
		modes = append(modes, "consume")
	}
	for _, mode := range modes {
		for _, phase := range []string{"before", "between", "after"} {
			for step := 1; step <= 3; step++ {
				point := fmt.Sprintf("%s %d", phase, step)
				key := fmt.Sprintf("kill-%s-%s-%d", mode, phase, step)
				t.Run(mode+" "+point, func(t *testing.T) {
					killPoint(t, d, l, mode, point, key)
				})
			}
		}
	}
}

// killPoint runs one worker of mode until it dies at point, retries key
// to the end, and checks the answer and the effects.
func killPoint[TTx any](t *testing.T, d *testdb.DB[TTx], l *ledger.Ledger[TTx], mode, point, key string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStepsKillMatrix$", "-test.count=1")
	cmd.Env = append(os.Environ(), killWorkerEnv+"="+d.Name, killSourceEnv+"="+d.Source,
		killPointEnv+"="+point, killKeyEnv+"="+key, killModeEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("worker: %v, want it killed by SIGKILL; output:\n%s", err, out)
	}
	var body string
	if mode == "consume" {
		body = redeliverToEnd(t, d, l, key)
	} else {
		body = retryToEnd(t, d, l, key)
	}
	want := fmt.Sprintf("ride 1, charge %s, mail sent", lifecycle.StepKey("tenant-1", key, "charge")[:8])
	if body != want {
		t.Errorf("final answer %q; want %q", body, want)
	}
	wantMails := 1
	if point == "between 3" {
		wantMails = 2 // the one repeat Step cannot rule out
	}
	counts := [3]int{count(t, d, "km_rides", key), count(t, d, "km_charges", key), count(t, d, "km_mails", key)}
	if counts != [3]int{1, 1, wantMails} {
		t.Errorf("rides, charges, mails = %v; want [1 1 %d]", counts, wantMails)
	}
	var steps int
	if err := d.SQL.QueryRow(testdb.Rebind(d.Engine, `SELECT count(*) FROM idempotency_steps WHERE "key" = ?`), key).Scan(&steps); err != nil || steps != 0 {
		t.Errorf("%d steps left after the answer was stored (%v); want 0", steps, err)
	}
}

// killConsumer is the consumer of the matrix's consume mode.
func killConsumer[TTx any](t testing.TB, l *ledger.Ledger[TTx]) *consume.Consumer[TTx] {
	c, err := consume.New(l, consume.Options{Scope: "tenant-1", Name: "rides", NackDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// killMessage is the message of key.
func killMessage(key string) consume.Message {
	return consume.Message{ID: key, Payload: []byte("ride to the station")}
}

// consumeHandler serves a message with the three steps, under the run
// consume.Handle gives its context.
func consumeHandler[TTx any](d *testdb.DB[TTx], l *ledger.Ledger[TTx], kill string) consume.Handler {
	return func(ctx context.Context, msg consume.Message) (consume.Output, error) {
		r, ok := lifecycle.FromContext(ctx)
		if !ok {
			return consume.Output{}, errors.New("no run in the handler's context")
		}
		body, err := threeSteps(ctx, d, l, r, kill)
		return consume.Output{Result: body}, err
	}
}

// redeliverToEnd delivers the message of key again until it is acked,
// and returns the acked output's result. The dead-letter path fails the
// test.
func redeliverToEnd[TTx any](t *testing.T, d *testdb.DB[TTx], l *ledger.Ledger[TTx], key string) string {
	c := killConsumer(t, l)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		dec := c.Handle(context.Background(), killMessage(key), consumeHandler(d, l, ""))
		switch dec.Action {
		case consume.Ack:
			return string(dec.Output.Result)
		case consume.DeadLetter:
			t.Fatalf("redelivery went to the dead-letter path: %+v", dec)
		}
		time.Sleep(max(dec.Delay, 10*time.Millisecond))
	}
	t.Fatal("not acked after 30 s of redeliveries")
	return ""
}

// retryToEnd sends the request again until it is answered with a stored
// outcome, running the handler whenever it is Claimed, and returns the
// stored body. A NotStored refusal fails the test.
func retryToEnd[TTx any](t *testing.T, d *testdb.DB[TTx], l *ledger.Ledger[TTx], key string) string {
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		dec := lifecycle.Decide(ctx, l, request(key, "ride to the station"), lifecycle.Config{Wait: 2 * killLease})
		switch dec.Verdict {
		case lifecycle.Replayed:
			return string(dec.Outcome.Body)
		case lifecycle.Claimed:
			serve(ctx, d, l, dec.Run, "")
			continue
		}
		if dec.Refusal.Why == lifecycle.NotStored {
			t.Fatalf("retry answered NotStored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no final answer after 30 s of retries")
	return ""
}

// serve runs the three-step handler under r in lease mode and ends the
// run; kill names the point at which the process dies ("" for none).
func serve[TTx any](ctx context.Context, d *testdb.DB[TTx], l *ledger.Ledger[TTx], r *lifecycle.Run, kill string) {
	body, err := threeSteps(r.Context(ctx), d, l, r, kill)
	r.Stop()
	if err != nil {
		r.Release("failed", lifecycle.NoStatus)
		return
	}
	r.Complete(ledger.Outcome{Kind: "test", Status: 200, Body: body}, "", 200, nil)
}

// threeSteps is the handler: a ride booked in the database, a charge at
// the provider that deduplicates, a mail at the one that does not. It
// returns the answer.
func threeSteps[TTx any](hctx context.Context, d *testdb.DB[TTx], l *ledger.Ledger[TTx], r *lifecycle.Run, kill string) ([]byte, error) {
	key := r.Key()
	at := func(phase string, step int) {
		if kill == fmt.Sprintf("%s %d", phase, step) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}

	// 1: a database step, in a transaction of the handler's.
	at("before", 1)
	tx, err := d.Driver.Begin(hctx)
	if err != nil {
		return nil, err
	}
	defer d.Driver.Rollback(context.WithoutCancel(hctx), tx)
	ride, err := lifecycle.StepTx(hctx, r, l, tx, "ride", func(ctx context.Context, tx TTx) ([]byte, error) {
		err := d.Exec(ctx, tx, "INSERT INTO km_rides (k) VALUES ($1)", key)
		at("between", 1)
		return []byte("ride 1"), err
	})
	if err != nil {
		return nil, err
	}
	if err := d.Driver.Commit(hctx, tx); err != nil {
		return nil, err
	}
	at("after", 1)
	// The ride is booked: from here on, a retry must not start afresh.
	r.Commit(hctx)

	// 2: a provider that deduplicates by the key it is given.
	at("before", 2)
	charge, err := r.Step(hctx, "charge", func(ctx context.Context, fk string) ([]byte, error) {
		if count(nil, d, "km_charges", key) == 0 {
			if _, err := d.SQL.ExecContext(ctx, testdb.Rebind(d.Engine, "INSERT INTO km_charges (fk, k) VALUES (?, ?)"), fk, key); err != nil {
				return nil, err
			}
		}
		at("between", 2)
		return []byte("charge " + fk[:8]), nil
	})
	if err != nil {
		return nil, err
	}
	at("after", 2)

	// 3: a provider that does not.
	at("before", 3)
	mail, err := r.Step(hctx, "mail", func(ctx context.Context, _ string) ([]byte, error) {
		if _, err := d.SQL.ExecContext(ctx, testdb.Rebind(d.Engine, "INSERT INTO km_mails (k) VALUES (?)"), key); err != nil {
			return nil, err
		}
		at("between", 3)
		return []byte("mail sent"), nil
	})
	if err != nil {
		return nil, err
	}
	at("after", 3)
	return fmt.Appendf(nil, "%s, %s, %s", ride, charge, mail), nil
}

// count returns the rows of table for key; t nil panics on error.
func count[TTx any](t *testing.T, d *testdb.DB[TTx], table, key string) int {
	var n int
	err := d.SQL.QueryRow(testdb.Rebind(d.Engine, "SELECT count(*) FROM "+table+" WHERE k = ?"), key).Scan(&n)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return n
}

// killWorker is the worker process: it opens the database named by the
// environment through the driver name, claims the request and serves it
// until its kill point.
func killWorker(t *testing.T, name string) {
	source, point, key := os.Getenv(killSourceEnv), os.Getenv(killPointEnv), os.Getenv(killKeyEnv)
	err := testdb.Connect(name, source, testdb.Conns{},
		func(d *testdb.DB[*sql.Tx]) { killWork(t, d, point, key) },
		func(d *testdb.DB[pgx.Tx]) { killWork(t, d, point, key) })
	if err != nil {
		t.Fatal(err)
	}
}

func killWork[TTx any](t *testing.T, d *testdb.DB[TTx], point, key string) {
	ctx := context.Background()
	l := newLedger(t, d, ledger.Options{TTL: time.Hour, Lease: killLease})
	if os.Getenv(killModeEnv) == "consume" {
		dec := killConsumer(t, l).Handle(ctx, killMessage(key), consumeHandler(d, l, point))
		t.Fatalf("worker: %+v; want it dead", dec)
	}
	dec := lifecycle.Decide(ctx, l, request(key, "ride to the station"), lifecycle.Config{})
	if dec.Verdict != lifecycle.Claimed {
		t.Fatalf("worker: %+v; want Claimed", summary(dec))
	}
	serve(ctx, d, l, dec.Run, point)
}
