package idemwatermill_test

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// childEnv, when set, makes the test binary a consumer process (see
// child) instead of running the tests.
const childEnv = "IDEMWATERMILL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		child()
		return
	}
	os.Exit(m.Run())
}

// childConfig is what a consumer process is told, in its environment.
type childConfig struct {
	Mode                   string // "hang": stop for good after the first message is handled, before the router publishes and acks
	Form                   string // "TxHandler" (the effect in the transaction) or "Middleware" (lease mode, the effect through the pool)
	Broker, Driver, Source string
	Group, In, Out         string
}

func (c childConfig) env() []string {
	return append(os.Environ(), childEnv+"="+strings.Join([]string{c.Mode, c.Form, c.Broker, c.Driver, c.Source, c.Group, c.In, c.Out}, "\x1f"))
}

// child is a consumer process: a router from In to Out whose TxHandler
// writes the effect and publishes one message. It prints "ready" once the
// router runs and "handled <uuid of the published message>" for each
// message whose handler committed.
func child() {
	f := strings.Split(os.Getenv(childEnv), "\x1f")
	cfg := childConfig{Mode: f[0], Form: f[1], Broker: f[2], Driver: f[3], Source: f[4], Group: f[5], In: f[6], Out: f[7]}
	// The Middleware form writes through the database/sql view beside
	// the driver (DB.SQL).
	must(testdb.Connect(cfg.Driver, cfg.Source, testdb.Conns{},
		func(d *testdb.DB[*sql.Tx]) { runChild(cfg, d) },
		func(d *testdb.DB[pgx.Tx]) { runChild(cfg, d) }))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
}

// childT is the testing.TB of a child: it fails by exiting.
type childT struct{ testing.TB }

func (childT) Helper()                        {}
func (childT) Fatal(args ...any)              { must(fmt.Errorf("%s", fmt.Sprint(args...))) }
func (childT) Fatalf(format string, a ...any) { must(fmt.Errorf(format, a...)) }
func (childT) Cleanup(func())                 {}
func (childT) Errorf(format string, a ...any) { must(fmt.Errorf(format, a...)) }

// runChild runs the consumer process on d.
func runChild[TTx any](cfg childConfig, d *testdb.DB[TTx]) {
	l, err := ledger.New(d.Driver, ledger.Options{Lease: 5 * time.Second})
	must(err)
	c, err := consume.New(l, consume.Options{Scope: cfg.Group, NackDelay: 100 * time.Millisecond})
	must(err)
	var out sync.Mutex
	say := func(s string) { out.Lock(); defer out.Unlock(); fmt.Println(s) }
	const insert = `INSERT INTO effects (id, note) VALUES ($1, $2)`
	h := idemwatermill.TxHandler(c, func(msg *message.Message, tx TTx) ([]*message.Message, error) {
		if err := d.Exec(msg.Context(), tx, insert, msg.UUID, string(msg.Payload)); err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Millisecond) // let the other process take some messages
		return []*message.Message{done(msg)}, nil
	})
	var mws []message.HandlerMiddleware
	if cfg.Form == "Middleware" {
		h = func(msg *message.Message) ([]*message.Message, error) {
			// Outside any transaction, through database/sql.
			q := testdb.Rebind(d.Engine, `INSERT INTO effects (id, note) VALUES (?, ?)`)
			if _, err := d.SQL.ExecContext(msg.Context(), q, msg.UUID, string(msg.Payload)); err != nil {
				return nil, err
			}
			idemwatermill.Commit(msg)
			return []*message.Message{done(msg)}, nil
		}
		mws = append(mws, idemwatermill.Middleware(c))
	}
	// report runs outside the handler (and Middleware): after the commit
	// (the outcome stored), before the router publishes and acks.
	report := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			msgs, err := h(msg)
			if err == nil && len(msgs) == 1 {
				say("handled " + msgs[0].UUID)
				if cfg.Mode == "hang" {
					select {} // killed here
				}
			}
			return msgs, err
		}
	}
	t := childT{}
	runRouter(t, brokerByName(cfg.Broker), cfg.Group, cfg.In, cfg.Out, h, append([]message.HandlerMiddleware{report}, mws...)...)
	say("ready")
	select {} // until killed
}

// startChild starts a consumer process and returns its lines of output.
func startChild(t *testing.T, cfg childConfig) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = cfg.env()
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	return cmd, lines
}

// expect returns the next line of a child that starts with prefix.
func expect(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the consumer process ended before printing %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
		case <-timeout:
			t.Fatalf("the consumer process did not print %q in time", prefix)
		}
	}
}

// processDB returns d's driver name and source for a consumer process,
// with the effects table made.
func processDB[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	t.Helper()
	if _, err := d.SQL.Exec(effectsTable); err != nil {
		t.Fatal(err)
	}
}

// TestKill9 kills a consumer process with SIGKILL after its handler
// committed (TxHandler) or its outcome was stored (Middleware) and before
// the router published its message and acked: the broker redelivers to
// another consumer, which answers from the record, publishes the message
// the first run produced (same UUID, never published before) and acks;
// the effect happened once.
func TestKill9(t *testing.T) {
	for bname, b := range brokers(t) {
		for _, form := range []string{"TxHandler", "Middleware"} {
			t.Run(bname+"/"+form, func(t *testing.T) {
				testdb.Each(t,
					func(t *testing.T, d *testdb.DB[*sql.Tx]) { testKill9(t, bname, form, b, d) },
					func(t *testing.T, d *testdb.DB[pgx.Tx]) { testKill9(t, bname, form, b, d) })
			})
		}
	}
}

func testKill9[TTx any](t *testing.T, bname, form string, b broker, d *testdb.DB[TTx]) {
	processDB(t, d)
	group, in, out := name("g"), name("in"), name("out")
	b.setup(t, prompt, group, in, out)
	cfg := childConfig{Mode: "hang", Form: form, Broker: bname, Driver: d.Name, Source: d.Source, Group: group, In: in, Out: out}
	cmd, lines := startChild(t, cfg)
	expect(t, lines, "ready")
	sent := message.NewMessage(watermill.NewUUID(), []byte("p"))
	if err := b.publisher(t).Publish(in, sent); err != nil {
		t.Fatal(err)
	}
	produced := expect(t, lines, "handled ")
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	if n := len(b.read(t, out)); n != 0 {
		t.Fatalf("%d messages published before the kill, want 0", n)
	}

	c := newConsumerOn(t, d, group)
	var ran atomic.Int32
	if form == "TxHandler" {
		runRouter(t, b, group, in, out, idemwatermill.TxHandler(c, func(msg *message.Message, tx TTx) ([]*message.Message, error) {
			ran.Add(1)
			return nil, fmt.Errorf("the handler ran again")
		}))
	} else {
		runRouter(t, b, group, in, out, func(msg *message.Message) ([]*message.Message, error) {
			ran.Add(1)
			return nil, fmt.Errorf("the handler ran again")
		}, idemwatermill.Middleware(c))
	}
	eventually(t, "the redelivery's publication", func() bool { return len(b.read(t, out)) >= 1 })
	outs := b.read(t, out)
	if len(outs) != 1 || outs[0].UUID != produced || outs[0].Payload != "done:p" {
		t.Fatalf("published %+v, want the first run's message %s", outs, produced)
	}
	if n := countEffects(t, d.SQL); n != 1 || ran.Load() != 0 {
		t.Fatalf("%d effects and %d runs after the kill, want 1 and 0", n, ran.Load())
	}
}

// newConsumerOn is newConsumer on a database whose effects table exists.
func newConsumerOn[TTx any](t testing.TB, d *testdb.DB[TTx], group string) *consume.Consumer[TTx] {
	t.Helper()
	l, err := ledger.New(d.Driver, ledger.Options{Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := consume.New(l, consume.Options{Scope: group, NackDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTwoProcesses runs two consumer processes on one queue (one durable
// JetStream consumer, one RabbitMQ queue) and publishes each of 10
// messages twice: every effect happens once, and each of the 20
// deliveries publishes the first run's message.
func TestTwoProcesses(t *testing.T) {
	for bname, b := range brokers(t) {
		t.Run(bname, func(t *testing.T) {
			testdb.Each(t,
				func(t *testing.T, d *testdb.DB[*sql.Tx]) { testTwoProcesses(t, bname, b, d) },
				func(t *testing.T, d *testdb.DB[pgx.Tx]) { testTwoProcesses(t, bname, b, d) })
		})
	}
}

func testTwoProcesses[TTx any](t *testing.T, bname string, b broker, d *testdb.DB[TTx]) {
	processDB(t, d)
	group, in, out := name("g"), name("in"), name("out")
	b.setup(t, quiet, group, in, out)
	cfg := childConfig{Mode: "run", Form: "TxHandler", Broker: bname, Driver: d.Name, Source: d.Source, Group: group, In: in, Out: out}
	var all []<-chan string
	for range 2 {
		_, lines := startChild(t, cfg)
		expect(t, lines, "ready")
		all = append(all, lines)
	}
	var msgs []*message.Message
	for i := range 10 {
		m := message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf("p%d", i)))
		msgs = append(msgs, m, message.NewMessage(m.UUID, m.Payload))
	}
	if err := b.publisher(t).Publish(in, msgs...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "20 publications", func() bool { return len(b.read(t, out)) >= 20 })
	time.Sleep(200 * time.Millisecond)
	outs := b.read(t, out)
	if len(outs) != 20 || len(uuids(outs)) != 10 {
		t.Fatalf("%d messages published with %d UUIDs, want 20 with 10", len(outs), len(uuids(outs)))
	}
	if n := countEffects(t, d.SQL); n != 10 {
		t.Fatalf("%d effects, want 10", n)
	}
	handled := make([]int, 2)
	for i, lines := range all {
		for drained := false; !drained; {
			select {
			case l := <-lines:
				if strings.HasPrefix(l, "handled ") {
					handled[i]++
				}
			default:
				drained = true
			}
		}
	}
	t.Logf("deliveries handled (run or replayed) by each process: %v", handled)
}
