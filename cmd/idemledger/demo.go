package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "demo", "[-db FILE] [-n N] [-ttl DURATION]\n\n"+
		"Starts an HTTP server on 127.0.0.1 with a payment endpoint protected by idemhttp.Middleware,\n"+
		"drives it with a real client, prints what happened, and exits 1 if any guarantee failed.")
	dbPath := fs.String("db", "", "SQLite database `FILE` (default: a new file in a temporary directory, removed afterwards)")
	n := fs.Int("n", 20, "number of concurrent identical requests in the burst (2 to 1000)")
	ttl := fs.Duration("ttl", 2*time.Second, "the ledger's TTL (1s to 1m); the demo waits it out before purging")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	if *n < 2 || *n > 1000 {
		return usagef("-n must be between 2 and 1000, got %d", *n)
	}
	// A record must outlive the client's retries: the lost-response step
	// retries after idemhttp.Transport's backoff (100-200 ms), and a burst
	// of 1000 requests takes a few hundred milliseconds. Below that the
	// record can expire before a retry arrives, the handler runs again, and
	// the demo would report as a double payment what the library, with such
	// a TTL, rightly allowed. 1s leaves room for that on a loaded machine
	// (several demos at once, built with -race), where shorter TTLs failed.
	if *ttl < time.Second || *ttl > time.Minute {
		return usagef("-ttl must be between 1s and 1m, got %v", *ttl)
	}
	if e := meantFor(*dbPath); e != nil {
		return usagef("the demo runs on an SQLite file; -db %q is a %s connection string", redactDSN(*dbPath), e.name)
	}
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "idemledger-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "demo.db")
	}
	d, err := newDemo(ctx, *dbPath, *ttl)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Fprintf(e.stdout, "idemledger demo: database %s, server http://%s, scope %s\n\n", redactDSN(*dbPath), d.addr, d.scope)
	failed, err := d.run(ctx, *n)
	d.print(e.stdout)
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(d.rows))
	}
	fmt.Fprintf(e.stdout, "\nall %d checks held\n", len(d.rows))
	return nil
}

// demo is one run: a server with a payment endpoint and the rows of the
// table it prints. Each run has its own scope and tags its payments with
// it, so that runs on one file, one after the other or at once, keep to
// their own records.
type demo struct {
	db       *sql.DB
	ledger   *ledger.Ledger[*sql.Tx]
	ttl      time.Duration
	scope    string
	srv      *http.Server
	addr     string
	runs     atomic.Int64 // how many times the payment handler ran
	lastRuns int64        // runs at the end of the previous row
	rows     []demoRow
}

type demoRow struct {
	step, request    string
	status, replayed string
	runs             int64 // handler runs during this step
	check            string
	ok               bool
	interrupted      bool // recorded after the demo was told to stop
}

func newDemo(ctx context.Context, path string, ttl time.Duration) (*demo, error) {
	s, err := openDB(ctx, path, mayCreate)
	if err != nil {
		return nil, err
	}
	db := s.db
	if err := schema.Migrate(ctx, s.drv); err != nil {
		db.Close()
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS demo_payments (
		id INTEGER PRIMARY KEY, scope TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("create demo table: %w", err)
	}
	d := &demo{db: db, ttl: ttl, scope: "demo-" + idemhttp.GenerateKey()[:8]}
	d.ledger, err = ledger.New(s.drv, ledger.Options{TTL: ttl})
	if err != nil {
		db.Close()
		return nil, err
	}
	mw := idemhttp.Middleware(d.ledger, idemhttp.Options{
		Scope: func(r *http.Request) (string, error) { return d.scope, nil },
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", mw(http.HandlerFunc(d.createPayment)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, err
	}
	d.addr = ln.Addr().String()
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go d.srv.Serve(ln)
	return d, nil
}

func (d *demo) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.srv.Shutdown(ctx)
	d.ledger.Close()
	d.db.Close()
}

// createPayment is the business handler: it takes long enough that a burst
// of duplicates overlaps it.
func (d *demo) createPayment(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Amount <= 0 || p.Currency == "" {
		http.Error(w, `{"error":"invalid payment"}`, http.StatusBadRequest)
		return
	}
	d.runs.Add(1)
	time.Sleep(50 * time.Millisecond)
	res, err := d.db.ExecContext(r.Context(), `INSERT INTO demo_payments (scope, amount, currency) VALUES (?, ?, ?)`, d.scope, p.Amount, p.Currency)
	if err != nil {
		http.Error(w, "store payment", http.StatusInternalServerError)
		return
	}
	id, _ := res.LastInsertId()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/payments/%d", id))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%d,"amount":%d,"currency":%q}`+"\n", id, p.Amount, p.Currency)
}

// response is what the client saw of one request.
type response struct {
	status   int
	replayed bool
	body     string
	err      error
}

func (d *demo) post(ctx context.Context, client *http.Client, key, body string) response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.addr+"/payments", strings.NewReader(body))
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		if err := idemhttp.SetKey(req.Header, key); err != nil {
			return response{err: err}
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{
		status:   resp.StatusCode,
		replayed: resp.Header.Get("Idempotent-Replayed") == "true",
		body:     string(b),
		err:      err,
	}
}

// record adds a row for one HTTP exchange.
func (d *demo) record(ctx context.Context, step, request string, r response, check string, ok bool) {
	status := fmt.Sprint(r.status)
	if r.err != nil {
		status = "error: " + r.err.Error()
	}
	d.recordRow(ctx, step, request, status, fmt.Sprint(r.replayed), check, ok)
}

// recordRow adds a row whose status and replayed columns are summaries.
// A row recorded once ctx has ended is not judged: its requests may have
// failed because the demo was stopping (ctx ends before the requests it
// cancels return), not because a guarantee did not hold.
func (d *demo) recordRow(ctx context.Context, step, request, status, replayed, check string, ok bool) {
	runs := d.runs.Load()
	d.rows = append(d.rows, demoRow{step, request, status, replayed, runs - d.lastRuns, check, ok, ctx.Err() != nil})
	d.lastRuns = runs
}

// errInterrupted is returned by run when ctx ends (Ctrl-C, SIGTERM)
// before the last step: the table shows the steps that ran, those the
// interruption cut short marked "interrupted" rather than judged, and no
// count of failed checks is given.
var errInterrupted = errors.New("interrupted")

// run drives the server through every situation of the contract and
// returns how many checks failed.
func (d *demo) run(ctx context.Context, n int) (failed int, err error) {
	client := &http.Client{Timeout: 10 * time.Second}
	const pay = `{"amount":1000,"currency":"EUR"}`
	key := idemhttp.GenerateKey()
	var keys []string // this run's records, all gone after the purge

	steps := []func(){
		func() {
			first := d.post(ctx, client, key, pay)
			keys = append(keys, key)
			d.record(ctx, "first request", "POST /payments key A", first, "handler ran once, 201",
				first.err == nil && first.status == http.StatusCreated && !first.replayed && d.runs.Load() == 1)

			replay := d.post(ctx, client, key, pay)
			d.record(ctx, "retry", "same key, same body", replay, "stored answer replayed, handler not run",
				replay.err == nil && replay.status == first.status && replay.replayed && replay.body == first.body && d.runs.Load() == 1)
		},
		func() {
			reuse := d.post(ctx, client, key, `{"amount":9999,"currency":"EUR"}`)
			d.record(ctx, "key reuse", "same key, other body", reuse, "422, handler not run",
				reuse.err == nil && reuse.status == http.StatusUnprocessableEntity && d.runs.Load() == 1)
		},
		func() {
			// A burst of identical requests: one runs, the others are told
			// it is in flight (409) or, once it completed, get its answer.
			burstKey := idemhttp.GenerateKey()
			keys = append(keys, burstKey)
			before := d.runs.Load()
			var wg sync.WaitGroup
			results := make([]response, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = d.post(ctx, client, burstKey, `{"amount":250,"currency":"USD"}`)
				}()
			}
			wg.Wait()
			var created, replayed, inFlight, other int
			for _, r := range results {
				switch {
				case r.err != nil:
					other++
				case r.status == http.StatusCreated && r.replayed:
					replayed++
				case r.status == http.StatusCreated:
					created++
				case r.status == http.StatusConflict:
					inFlight++
				default:
					other++
				}
			}
			d.recordRow(ctx, "burst", fmt.Sprintf("%d concurrent, one key", n),
				fmt.Sprintf("201×%d 409×%d", created+replayed, inFlight), fmt.Sprintf("%d of %d", replayed, n),
				fmt.Sprintf("handler ran once; the others got 409 (in flight) or the replay; %d other answers", other),
				created == 1 && other == 0 && d.runs.Load() == before+1)
		},
		func() {
			// The first attempt's response is lost on the way back (the
			// handler did run); idemhttp.Transport retries with the same
			// key and gets the replay.
			before := d.runs.Load()
			flaky := &dropFirst{base: http.DefaultTransport}
			retrying := &http.Client{Timeout: 10 * time.Second, Transport: &idemhttp.Transport{Base: flaky}}
			dropped := d.post(ctx, retrying, "", `{"amount":75,"currency":"GBP"}`)
			keys = append(keys, flaky.key)
			d.record(ctx, "lost response", "Transport, first reply dropped", dropped, "retried with the same key, replayed, handler ran once",
				dropped.err == nil && dropped.status == http.StatusCreated && dropped.replayed && flaky.attempts.Load() == 2 && d.runs.Load() == before+1)
		},
		func() {
			// Past the TTL, records are purgeable and a key may run again.
			// Purge also deletes what other runs on this file left, and a
			// run alongside may purge ours first: the check is that ours
			// are gone.
			select {
			case <-time.After(d.ttl + 50*time.Millisecond):
			case <-ctx.Done():
				return
			}
			purged, err := d.ledger.Purge(ctx, ledger.PurgeOptions{BatchSize: 2})
			gone := 0
			for _, k := range keys {
				if _, gerr := d.ledger.Get(ctx, d.scope, k); errors.Is(gerr, ledger.ErrNotFound) {
					gone++
				}
			}
			d.recordRow(ctx, "purge", fmt.Sprintf("after the TTL (%v)", d.ttl), "-", "-",
				fmt.Sprintf("Purge deleted %d expired records, %d of this run's %d among them%s", purged, gone, len(keys), errSuffix(err)),
				err == nil && gone == len(keys))

			before := d.runs.Load()
			again := d.post(ctx, client, key, pay)
			d.record(ctx, "after expiry", "key A again", again, "runs anew: 201, not a replay",
				again.err == nil && again.status == http.StatusCreated && !again.replayed && d.runs.Load() == before+1)
		},
		func() {
			var rows int64
			err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM demo_payments WHERE scope = ?`, d.scope).Scan(&rows)
			d.recordRow(ctx, "payments", "this run's rows in demo_payments", "-", "-",
				fmt.Sprintf("%d payments stored for %d handler runs (want 4)%s", rows, d.runs.Load(), errSuffix(err)),
				err == nil && rows == d.runs.Load() && rows == 4)
		},
	}
	for _, step := range steps {
		step()
		if ctx.Err() != nil {
			return 0, errInterrupted
		}
	}
	for _, r := range d.rows {
		if !r.ok {
			failed++
		}
	}
	return failed, nil
}

func (d *demo) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tREQUEST\tSTATUS\tREPLAYED\tHANDLER RAN\tCHECK\tOK")
	for _, r := range d.rows {
		ok := "yes"
		switch {
		case r.interrupted:
			ok = "interrupted"
		case !r.ok:
			ok = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.step, r.request, r.status, r.replayed, r.runs, r.check, ok)
	}
	tw.Flush()
}

// dropFirst is a RoundTripper that delivers the first request to the server
// and then loses its response, as a dropped connection would. It notes the
// key that the Transport above it chose.
type dropFirst struct {
	base     http.RoundTripper
	attempts atomic.Int64
	key      string
}

var errInjectedDrop = errors.New("connection reset (injected by the demo)")

func (t *dropFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	n := t.attempts.Add(1)
	if n == 1 {
		t.key = strings.Trim(req.Header.Get(idemhttp.HeaderName), `"`)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || n > 1 {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errInjectedDrop
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; error: " + err.Error()
}
