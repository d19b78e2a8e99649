package idemhttp

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// The load test's size. CI runs the default (loadRaceRequests under -race,
// with testdb.LongEnv set; without it, -race runs loadShortRequests); the
// full run of RELIABILITY.md is
//
//	IDEMLEDGER_LOAD_REQUESTS=100000 go test -run '^TestLoad$' -v -timeout 30m ./idemhttp/
const (
	loadEnvRequests     = "IDEMLEDGER_LOAD_REQUESTS"
	loadDefaultRequests = 3000
	loadRaceRequests    = 800 // under -race, where each request is ~10 times slower
	loadShortRequests   = 400
	loadClients         = 64
	loadScopes          = 8
	// loadLaterGap is how many jobs separate an original from its later
	// duplicate: far enough that the original has long been answered.
	loadLaterGap = 256
	// loadDeadline bounds the whole run, so that a deadlock fails the test
	// with a message instead of hanging until go test's own timeout.
	loadDeadline = 20 * time.Minute
)

// Job kinds: every original request, and the duplicates of a tenth of them,
// half sent at the same moment as the original and half after its answer.
const (
	kindOriginal = iota
	kindDupNow
	kindDupLater
)

type loadJob struct {
	idx  int32 // index of the original
	kind uint8
}

// loadAnswer is one response as the client saw it.
type loadAnswer struct {
	sent   bool
	status int16
	replay bool
	order  int64 // the business row id in the body, 0 when none
}

// TestLoad drives the middleware on a real server on 127.0.0.1 over a
// SQLite file with 64 keep-alive clients. Its handler inserts one business
// row per execution and answers with the row's id, so a second execution
// under one key would show as a second row and as another body. It checks:
// no key ran twice (rows == distinct keys == originals), no 5xx, every key
// has exactly one first answer, every duplicate got that answer (marked as a
// replay) or 409, and every later duplicate got the replay. It reports
// requests/s, latency percentiles, live heap after collection at each
// quarter, and peak RSS; live heap at the end may not exceed the heap at
// half way by more than a bound (a leak per request would).
func TestLoad(t *testing.T) {
	n := loadDefaultRequests
	if raceEnabled {
		n = loadRaceRequests
		if !testdb.LongRun() {
			n = loadShortRequests
			t.Logf("%d requests under -race, not %d: set %s=1 for the long run", loadShortRequests, loadRaceRequests, testdb.LongEnv)
		}
	}
	if testing.Short() {
		n = loadShortRequests
	}
	if s := os.Getenv(loadEnvRequests); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 20 || v > 10_000_000 {
			t.Fatalf("%s=%q: want a number of requests from 20 to 10000000", loadEnvRequests, s)
		}
		n = v
	}
	dups := n / 10
	originals := n - dups

	db := testdb.SQLitePool(t)
	if _, err := db.Exec(`CREATE TABLE load_orders (
		id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, key TEXT NOT NULL, body BLOB)`); err != nil {
		t.Fatal(err)
	}
	// A claim waits for SQLite's write lock up to the lease, not the 5 s
	// of the default ClaimTimeout: on a CI machine running other suites
	// beside this one, a claim behind 64 clients waited past 5 s and was
	// answered 503 busy, a true answer that this test, about what runs
	// and what is answered, would count as a failure. The latencies are
	// reported as they are.
	l, err := ledger.New(sqlite.New(db), ledger.Options{ClaimTimeout: ledger.DefaultLease})
	if err != nil {
		t.Fatal(err)
	}
	var executions atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		executions.Add(1)
		key, _ := ParseKey(r.Header, KeyRules{})
		body, _ := io.ReadAll(r.Body)
		res, err := db.ExecContext(r.Context(), `INSERT INTO load_orders (scope, key, body) VALUES (?, ?, ?)`,
			r.Header.Get("X-Tenant"), key, body)
		var id int64
		if err == nil {
			id, err = res.LastInsertId()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/orders/"+strconv.FormatInt(id, 10))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d}`, id)
	})
	mw := Middleware(l, Options{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mw(h), ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String() + "/orders"
	tr := &http.Transport{MaxIdleConnsPerHost: loadClients, MaxConnsPerHost: loadClients}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	jobs := loadJobs(originals, dups)
	// All bookkeeping is allocated before the run, so that it does not
	// count as growth in the memory figures.
	answers := make([][3]loadAnswer, originals)
	answered := make([]atomic.Bool, originals) // the original's answer arrived
	latency := make([]time.Duration, len(jobs))
	heap := make([]uint64, 0, 5)
	heap = append(heap, liveHeap())

	ctx, cancel := context.WithTimeout(context.Background(), loadDeadline)
	defer cancel()
	var next, done atomic.Int64
	var fiveXX, transportErrs atomic.Int64
	quarter := make(chan struct{}, 8)
	var wg sync.WaitGroup
	start := time.Now()
	for range loadClients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(jobs)) {
					return
				}
				j := jobs[i]
				if j.kind == kindDupLater {
					for !answered[j.idx].Load() && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
				}
				t0 := time.Now()
				a, err := loadSend(ctx, client, base, j)
				latency[i] = time.Since(t0)
				if err != nil {
					transportErrs.Add(1)
					t.Errorf("request %d (key %d, kind %d): %v", i, j.idx, j.kind, err)
				}
				if a.status >= 500 {
					fiveXX.Add(1)
				}
				answers[j.idx][j.kind] = a
				if j.kind == kindOriginal {
					answered[j.idx].Store(true)
				}
				if d := done.Add(1); d%int64(len(jobs)/4) == 0 && d < int64(len(jobs)) {
					quarter <- struct{}{}
				}
			}
		})
	}
	// Live heap after a collection at each quarter of the run. (The
	// collection pauses the clients briefly; that is part of the price of
	// measuring.)
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-quarter:
				heap = append(heap, liveHeap())
			case <-stopSampling:
				return
			}
		}
	})
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	sampler.Wait()
	heap = append(heap, liveHeap())
	if ctx.Err() != nil {
		t.Fatalf("the run did not finish within %v: %d of %d requests answered", loadDeadline, done.Load(), len(jobs))
	}

	// Every answer, key by key.
	var firstRuns, replays, conflicts, laterReplays int
	for idx := range answers {
		var first *loadAnswer
		for k := range answers[idx] {
			if a := &answers[idx][k]; a.sent && a.status == http.StatusCreated && !a.replay {
				if first != nil {
					t.Errorf("key %d: two first answers %+v and %+v", idx, *first, *a)
				}
				first = a
			}
		}
		if first == nil {
			t.Errorf("key %d: no first answer among %+v", idx, answers[idx])
			continue
		}
		firstRuns++
		for k, a := range answers[idx] {
			switch {
			case !a.sent || &answers[idx][k] == first:
			case a.status == http.StatusCreated && a.replay && a.order == first.order:
				replays++
				if k == kindDupLater {
					laterReplays++
				}
			case a.status == http.StatusConflict && k != kindDupLater:
				conflicts++
			default:
				t.Errorf("key %d, kind %d: answer %+v, first answer %+v", idx, k, a, *first)
			}
		}
	}

	var rows, distinct, completed int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT scope || ' ' || key) FROM load_orders`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM idempotency_ledger WHERE state = 'completed'`).Scan(&completed); err != nil {
		t.Fatal(err)
	}
	dupRows := loadDuplicateRows(t, db)

	slices.Sort(latency)
	pct := func(p float64) time.Duration { return latency[int(p*float64(len(latency)-1))] }
	t.Logf("requests %d (originals %d, duplicates %d: %d concurrent, %d later), clients %d, GOMAXPROCS %d",
		len(jobs), originals, dups, (dups+1)/2, dups/2, loadClients, runtime.GOMAXPROCS(0))
	t.Logf("elapsed %v, %.0f requests/s, latency p50 %v p99 %v max %v",
		elapsed.Round(time.Millisecond), float64(len(jobs))/elapsed.Seconds(),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), latency[len(latency)-1].Round(time.Millisecond))
	t.Logf("handler executions %d, business rows %d, distinct keys %d, keys run twice %d, completed records %d",
		executions.Load(), rows, distinct, dupRows, completed)
	t.Logf("answers: first %d, replays %d (of which later duplicates %d), 409 %d, 5xx %d, transport errors %d",
		firstRuns, replays, laterReplays, conflicts, fiveXX.Load(), transportErrs.Load())
	t.Logf("live heap after GC at 0/25/50/75/100%%: %s MiB; peak RSS (VmHWM) %s",
		mib(heap), peakRSS())

	if fiveXX.Load() != 0 {
		t.Errorf("%d answers were 5xx", fiveXX.Load())
	}
	if dupRows != 0 || rows != originals || distinct != originals || executions.Load() != int64(originals) {
		t.Errorf("executions %d, rows %d, distinct keys %d, keys run twice %d; want %d, each once",
			executions.Load(), rows, distinct, dupRows, originals)
	}
	if completed != originals {
		t.Errorf("completed records %d, want %d", completed, originals)
	}
	if laterReplays != dups/2 {
		t.Errorf("later duplicates replayed %d, want %d", laterReplays, dups/2)
	}
	// Steady memory: what is live at the end is what was live half way,
	// give or take the runtime's and the pool's noise. A leak of even a
	// few hundred bytes per request crosses this bound on the full run.
	if len(heap) == 5 {
		mid, end := heap[2], heap[4]
		if end > mid+max(4<<20, mid/4) {
			t.Errorf("live heap grew from %d bytes half way to %d at the end", mid, end)
		}
	}
}

// loadJobs lays out the run: each original in turn, a concurrent duplicate
// right after its original (so that two clients take them at once), and a
// later duplicate loadLaterGap jobs further on (its client also waits for
// the original's answer).
func loadJobs(originals, dups int) []loadJob {
	jobs := make([]loadJob, 0, originals+dups)
	isDup := make([]int8, originals) // 0 none, 1 concurrent, 2 later
	for d := range dups {
		i := int(int64(d) * int64(originals) / int64(dups))
		isDup[i] = int8(1 + d%2)
	}
	type pending struct {
		due int
		job loadJob
	}
	var later []pending
	for i := range originals {
		for len(later) > 0 && later[0].due <= len(jobs) {
			jobs = append(jobs, later[0].job)
			later = later[1:]
		}
		jobs = append(jobs, loadJob{int32(i), kindOriginal})
		switch isDup[i] {
		case 1:
			jobs = append(jobs, loadJob{int32(i), kindDupNow})
		case 2:
			later = append(later, pending{len(jobs) + loadLaterGap, loadJob{int32(i), kindDupLater}})
		}
	}
	for _, p := range later {
		jobs = append(jobs, p.job)
	}
	return jobs
}

// loadSend sends one job. The later duplicate's body is the original's JSON
// with its members reordered and spaced: the same canonical form, so the
// same fingerprint.
func loadSend(ctx context.Context, c *http.Client, base string, j loadJob) (loadAnswer, error) {
	body := fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, j.idx)
	if j.kind == kindDupLater {
		body = fmt.Sprintf(`{ "currency" : "EUR", "amount" : %d }`, j.idx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base, strings.NewReader(body))
	if err != nil {
		return loadAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", "tenant-"+strconv.Itoa(int(j.idx)%loadScopes))
	req.Header.Set(HeaderName, `"load-`+strconv.Itoa(int(j.idx))+`"`)
	resp, err := c.Do(req)
	if err != nil {
		return loadAnswer{sent: true}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := loadAnswer{sent: true, status: int16(resp.StatusCode), replay: resp.Header.Get(DefaultReplayHeader) == "true"}
	if err != nil {
		return a, err
	}
	if resp.StatusCode == http.StatusCreated {
		if _, err := fmt.Sscanf(string(b), `{"order":%d}`, &a.order); err != nil {
			return a, fmt.Errorf("body %q: %v", b, err)
		}
		if resp.Header.Get("Location") != "/orders/"+strconv.FormatInt(a.order, 10) {
			return a, fmt.Errorf("Location %q for body %q", resp.Header.Get("Location"), b)
		}
	}
	return a, nil
}

func loadDuplicateRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM load_orders GROUP BY scope, key HAVING COUNT(*) > 1)`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// liveHeap collects garbage and returns the bytes of live heap objects.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func mib(v []uint64) string {
	parts := make([]string, len(v))
	for i, b := range v {
		parts[i] = strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64)
	}
	return strings.Join(parts, " / ")
}

// peakRSS returns the process's peak resident set size from
// /proc/self/status (Linux), or "n/a" elsewhere.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "n/a"
}
