package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// The model-based test drives a real ledger, on every driver, and a small
// in-memory model of the contract (the doc comments of Claim, Complete,
// Release, Extend, Purge, Get and Record.Expired) with the same random
// operations, on a fake clock, and compares every answer. The model is
// written from the documentation, not from the SQL.
const (
	modelSeedEnv  = "IDEMLEDGER_MODEL_SEED"  // run only this seed
	modelStepsEnv = "IDEMLEDGER_MODEL_STEPS" // steps per seed (default modelStepsCI, or modelStepsQuick)

	modelStepsCI    = 3000
	modelStepsQuick = 1000 // without testdb.LongEnv
	modelSeqSteps   = 250  // steps of one sequence, from an empty ledger
	modelFixed      = 20261129
	modelKeys       = 8 // over 2 scopes
	modelFPs        = 3
)

var modelScopes = [...]string{"", "tenant-b"}

// TestModel runs modelStepsCI steps for a fixed seed and as many for a
// random one (both logged), 6,000 steps in all, with testdb.LongEnv set
// (as CI runs it), modelStepsQuick per seed without; IDEMLEDGER_MODEL_SEED
// runs one seed and IDEMLEDGER_MODEL_STEPS sets the steps. A divergence fails with the seed
// and the shortest failing sequence found by shrinking.
func TestModel(t *testing.T) {
	t.Parallel()
	testdb.EachAtOnce(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testModel(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testModel(t, d) })
}

// testModel is TestModel on one driver's database.
func testModel[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	def := modelStepsCI
	if !testdb.LongRun() {
		def = modelStepsQuick
		t.Logf("%d steps per seed, not %d: set %s=1 for the long run", modelStepsQuick, modelStepsCI, testdb.LongEnv)
	}
	steps := envInt(modelStepsEnv, def)
	seeds := []uint64{modelFixed, rand.Uint64() % 1e9}
	if s := os.Getenv(modelSeedEnv); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", modelSeedEnv, err)
		}
		seeds = []uint64{seed}
	}
	// One database for every sequence: the ledger keeps all its state in
	// the table, which each sequence empties first.
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			tally := map[string]int{}
			for seq, done := 0, 0; done < steps; seq++ {
				n := min(modelSeqSteps, steps-done)
				cfg := modelConfigs[rng.IntN(len(modelConfigs))]
				ops := genOps(rng, n)
				if diff := runModel(t, d, cfg, ops, tally); diff != nil {
					min := shrinkOps(ops, func(ops []modelOp) bool { return runModel(t, d, cfg, ops, nil) != nil })
					diff = runModel(t, d, cfg, min, nil)
					t.Fatalf("ledger and model diverge: seed %d, sequence %d (lease %v, TTL %v); "+
						"shortest failing sequence (%d of %d steps):\n%s\nrepeat with %s=%d go test -run '^TestModel$' ./ledger",
						seed, seq, cfg.lease, cfg.ttl, len(min), len(ops), diff, modelSeedEnv, seed)
				}
				done += n
			}
			t.Logf("seed %d: %d steps agree; answers seen: %v", seed, steps, tally)
		})
	}
}

// modelConfigs: the lease shorter than, equal to and longer than the TTL.
var modelConfigs = []struct{ lease, ttl time.Duration }{
	{1 * time.Second, 3 * time.Second},
	{2 * time.Second, 2 * time.Second},
	{3 * time.Second, 1 * time.Second},
}

type modelOpKind int

const (
	opClaim modelOpKind = iota
	opComplete
	opRelease
	opExtend
	opPurge
	opGet
	opStats
	opJump
	opMutate // MutateOutcome in a transaction of its own
	opCommit // Ledger.Commit: the commit point, written into the record
)

// modelOp is one step. Its arguments are selectors resolved when it runs
// (a claim handle is the h-th claim made so far, modulo their number; a
// jump aims at a boundary of the j-th record), so that a sequence with
// steps removed still means something: shrinking relies on it.
type modelOp struct {
	kind   modelOpKind
	key    int // 0..modelKeys-1; the scope is key/4
	fp     int
	h      int // claim handle selector (see pickHandle)
	status int
	body   int // 0 nil, 1 empty, 2 text
	header int // 0 nil, 1 empty, 2 two fields
	batch  int
	jump   int   // 0: small step; 1: lease boundary; 2: expiry boundary; 3: past the TTL
	delta  int64 // ms: the small step, or -1/0/+1 around a boundary
}

func genOps(rng *rand.Rand, n int) []modelOp {
	ops := make([]modelOp, n)
	for i := range ops {
		// Mostly the first fingerprint, so that retries replay; the
		// others reuse the key for another payload.
		o := modelOp{key: rng.IntN(modelKeys), fp: []int{0, 0, 0, 0, 0, 0, 0, 1, 1, 2}[rng.IntN(10)], h: rng.IntN(1 << 20)}
		switch r := rng.IntN(100); {
		case r < 30:
			o.kind = opClaim
		case r < 50:
			o.kind = opComplete
			o.status = []int{200, 201, 404, 0}[rng.IntN(4)]
			o.body, o.header = rng.IntN(3), rng.IntN(3)
			if rng.IntN(4) == 0 {
				o.kind = opCommit
			}
		case r < 56:
			o.kind = opRelease
		case r < 63:
			o.kind = opExtend
		case r < 67:
			o.kind = opPurge
			o.batch = rng.IntN(4) // 0: the default
		case r < 75:
			o.kind = opGet
		case r < 77:
			o.kind = opStats
		case r < 85:
			o.kind = opMutate
			o.status = []int{200, 201, 404, 0}[rng.IntN(4)]
			o.body, o.header = rng.IntN(3), rng.IntN(3)
		default:
			o.kind = opJump
			o.jump = []int{0, 0, 0, 1, 1, 2, 3}[rng.IntN(7)]
			if o.jump == 0 {
				o.delta = rng.Int64N(700)
			} else {
				o.delta = rng.Int64N(3) - 1
			}
		}
		ops[i] = o
	}
	return ops
}

// shrinkOps removes steps from a failing sequence while it still fails
// (delta debugging: chunks of halving size, down to single steps).
func shrinkOps(ops []modelOp, fails func([]modelOp) bool) []modelOp {
	ops = slices.Clone(ops)
	for chunk := len(ops) / 2; chunk >= 1; {
		removed := false
		for i := 0; i+chunk <= len(ops); {
			cand := slices.Concat(ops[:i], ops[i+chunk:])
			if fails(cand) {
				ops, removed = cand, true
				continue
			}
			i += chunk
		}
		if !removed || chunk > len(ops) {
			chunk /= 2
		}
	}
	return ops
}

// The model.

type modelRec struct {
	fp                         int
	state                      ledger.State
	holder                     int // the handle id holding the lease
	fence                      int64
	leaseExp                   int64 // 0 when completed
	created, completed, expExp int64
	committed                  int64 // the commit mark, 0 when none
	out                        ledger.Outcome
	// released: Release ended the lease; the record keeps its fence and
	// counts failures, the runs that ended so.
	released bool
	failures int
}

type model struct {
	now, lease, ttl int64 // ms
	recs            map[int]*modelRec
}

func (m *model) expired(r *modelRec) bool {
	return r.expExp <= m.now && (r.state == ledger.StateCompleted || r.released || r.leaseExp <= m.now)
}

// takeoverFailures is the count of failed runs a claim with fingerprint
// fpi continues when it takes r over: r's own when r has not expired and
// has fpi, 0 otherwise (also for a new record).
func (m *model) takeoverFailures(r *modelRec, fpi int) int {
	if r == nil || m.expired(r) || r.fp != fpi {
		return 0
	}
	return r.failures
}

// failuresString is the failures a claim reports, in the answer's text.
func failuresString(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" failures=%d", n)
}

func (m *model) record(key int) *ledger.Record {
	r := m.recs[key]
	rec := &ledger.Record{
		Scope: modelScopes[key/4], Key: modelKeyName(key), Fingerprint: modelFP(r.fp),
		State: r.state, Fence: r.fence, Outcome: r.out,
		CreatedAt: ms(r.created), ExpiresAt: ms(r.expExp),
	}
	if r.state == ledger.StateInFlight {
		rec.LeaseExpiresAt = ms(r.leaseExp)
	} else {
		rec.CompletedAt = ms(r.completed)
	}
	if r.committed != 0 {
		rec.CommittedAt = ms(r.committed)
	}
	return rec
}

// handle is a claim as both sides see it.
type handle struct {
	id   int
	key  int
	real *ledger.Claim
	// model side
	replay bool
	fence  int64
}

func modelKeyName(k int) string { return fmt.Sprintf("key-%d", k%4) }
func modelFP(i int) hash.Digest { return fp(fmt.Sprint("model payload ", i)) }
func ms(v int64) time.Time      { return time.UnixMilli(v).UTC() }

func modelReq(key, fpi int) ledger.Request {
	return ledger.Request{Scope: modelScopes[key/4], Key: modelKeyName(key), Fingerprint: modelFP(fpi)}
}

func modelOutcome(o modelOp) (given, stored ledger.Outcome) {
	given.Status = o.status
	switch o.body {
	case 1:
		given.Body = []byte{}
	case 2:
		given.Body = []byte(`{"id":` + strconv.Itoa(o.status) + `}`)
	}
	switch o.header {
	case 1:
		given.Header = map[string][]string{}
	case 2:
		given.Header = map[string][]string{"Location": {"/x"}, "Vary": {"B", "A"}}
	}
	stored = given
	if len(stored.Body) == 0 {
		stored.Body = nil // "A nil or empty Body is read back as nil"
	}
	return given, stored
}

// runModel runs ops against a fresh ledger and the model and returns nil
// when every answer agrees, or the steps up to the first divergence.
//
// tally, when not nil, counts the kinds of answers, to show what the
// sequences reached.
func runModel[TTx any](t *testing.T, d *testdb.DB[TTx], cfg struct{ lease, ttl time.Duration }, ops []modelOp, tally map[string]int) error {
	ctx := context.Background()
	if _, err := d.SQL.Exec("DELETE FROM idempotency_ledger"); err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: t0}
	l, err := ledger.New(d.Driver, ledger.Options{Lease: cfg.lease, TTL: cfg.ttl, Now: clk.Now})
	if err == nil {
		defer l.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	m := &model{now: t0.UnixMilli(), lease: cfg.lease.Milliseconds(), ttl: cfg.ttl.Milliseconds(), recs: map[int]*modelRec{}}
	var handles []*handle
	var log strings.Builder
	for i, o := range ops {
		var step, want, got string
		switch o.kind {
		case opClaim:
			step = fmt.Sprintf("Claim(%s/%s, fp%d)", modelScopes[o.key/4], modelKeyName(o.key), o.fp)
			c, err := l.Claim(ctx, modelReq(o.key, o.fp))
			got = claimString(c, err)
			var h *handle
			want, h = m.claim(o.key, o.fp, len(handles))
			if h != nil && err == nil {
				h.real = c
				handles = append(handles, h)
				step += fmt.Sprintf(" -> claim #%d", h.id)
			}
		case opComplete, opRelease, opExtend, opCommit:
			if len(handles) == 0 {
				continue
			}
			h := pickHandle(handles, o)
			switch o.kind {
			case opComplete:
				given, stored := modelOutcome(o)
				step = fmt.Sprintf("Complete(claim #%d, %d %q %v)", h.id, given.Status, given.Body, given.Header)
				got = errString(l.Complete(ctx, h.real, given))
				want = m.complete(h, stored)
			case opCommit:
				step = fmt.Sprintf("Commit(claim #%d)", h.id)
				got = errString(l.Commit(ctx, h.real))
				want = m.commit(h)
			case opRelease:
				step = fmt.Sprintf("Release(claim #%d)", h.id)
				got = errString(l.Release(ctx, h.real))
				want = m.release(h)
			case opExtend:
				step = fmt.Sprintf("Extend(claim #%d)", h.id)
				until, err := l.Extend(ctx, h.real)
				got = errString(err)
				if err == nil {
					h.real = h.real.WithLease(until)
					got += " until " + h.real.LeaseExpiresAt.Format(time.RFC3339Nano)
				}
				want = m.extend(h)
			}
		case opPurge:
			step = fmt.Sprintf("Purge(batch %d)", o.batch)
			n, err := l.Purge(ctx, ledger.PurgeOptions{BatchSize: o.batch})
			got = fmt.Sprintf("%d %s", n, errString(err))
			want = fmt.Sprintf("%d ok", m.purge())
		case opGet:
			step = fmt.Sprintf("Get(%s/%s)", modelScopes[o.key/4], modelKeyName(o.key))
			r, err := l.Get(ctx, modelScopes[o.key/4], modelKeyName(o.key))
			if err != nil {
				got = errString(err)
			} else {
				got = recordString(r) + fmt.Sprintf(" expired=%v", r.Expired(clk.Now()))
			}
			want = m.get(o.key)
		case opStats:
			step = "Stats()"
			s, err := l.Stats(ctx)
			ms := m.stats()
			if s.Estimated {
				// The engine estimates the count of completed records
				// (PostgreSQL once autovacuum analyzed the table): the
				// model has nothing to compare it with.
				s.Completed, s.Estimated = ms.Completed, false
			}
			got = fmt.Sprintf("%+v %s", s, errString(err))
			want = fmt.Sprintf("%+v ok", ms)
		case opMutate:
			given, stored := modelOutcome(o)
			fails := o.h%4 == 0
			step = fmt.Sprintf("MutateOutcome(%s/%s, fp%d, %d %q %v, fn fails: %v)",
				modelScopes[o.key/4], modelKeyName(o.key), o.fp, given.Status, given.Body, given.Header, fails)
			got = realMutate(t, ctx, d, l, modelReq(o.key, o.fp), given, fails)
			want = m.mutate(o.key, o.fp, stored, fails)
		case opJump:
			d := m.jump(o)
			clk.Advance(time.Duration(d) * time.Millisecond)
			step = fmt.Sprintf("time +%dms -> %s", d, clk.Now().Format("15:04:05.000"))
		}
		fmt.Fprintf(&log, "%4d  %s\n", i, step)
		if tally != nil {
			tally[answerKind(o, want)]++
		}
		if got != want {
			fmt.Fprintf(&log, "      ledger: %s\n      model:  %s\n", got, want)
			return errors.New(log.String())
		}
	}
	return nil
}

// pickHandle resolves o's claim selector: two times in three the latest
// claim of o's key (the usual caller), else any claim made so far (a stale
// owner, a replay, a released or taken-over lease).
func pickHandle(handles []*handle, o modelOp) *handle {
	if o.h%3 != 0 {
		for _, h := range slices.Backward(handles) {
			if h.key == o.key {
				return h
			}
		}
	}
	return handles[o.h%len(handles)]
}

// jump moves the model's clock and returns by how much (ms): a small step,
// or to one millisecond before, at or after a lease or expiry boundary of
// a record, or past the TTL.
func (m *model) jump(o modelOp) int64 {
	var bounds []int64
	for _, k := range slices.Sorted(maps.Keys(m.recs)) {
		r := m.recs[k]
		switch {
		case o.jump == 1 && r.state == ledger.StateInFlight:
			bounds = append(bounds, r.leaseExp)
		case o.jump == 2:
			bounds = append(bounds, r.expExp)
		}
	}
	d := int64(1)
	switch {
	case o.jump == 0:
		d = o.delta
	case o.jump == 3:
		d = m.ttl + m.lease
	case len(bounds) > 0:
		if target := bounds[o.h%len(bounds)] + o.delta; target > m.now {
			d = target - m.now
		}
	}
	m.now += d
	return d
}

// claim follows Claim's doc comment. It returns the expected answer and,
// when the claim succeeds (a lease or a replay), its handle.
func (m *model) claim(key, fpi, id int) (string, *handle) {
	r := m.recs[key]
	if m.open(r, fpi) {
		fence := int64(1)
		if r != nil {
			fence = r.fence + 1 // a takeover; after a purge the fence starts again
		}
		failures := m.takeoverFailures(r, fpi)
		m.recs[key] = &modelRec{fp: fpi, state: ledger.StateInFlight, holder: id, fence: fence,
			leaseExp: m.now + m.lease, created: m.now, expExp: m.now + m.ttl, failures: failures}
		return fmt.Sprintf("lease fence=%d until=%s%s", fence, ms(m.now+m.lease).Format(time.RFC3339Nano), failuresString(failures)),
			&handle{id: id, key: key, fence: fence}
	}
	switch {
	case r.fp != fpi:
		return "error: " + ledger.ErrKeyReused.Error(), nil
	case r.state == ledger.StateInFlight && r.leaseExp <= m.now:
		return "error: " + committedString(r), nil
	case r.state == ledger.StateInFlight:
		return fmt.Sprintf("in flight, retry after %v", time.Duration(r.leaseExp-m.now)*time.Millisecond), nil
	}
	return "replay fence=" + strconv.FormatInt(r.fence, 10) + " " + recordString(m.record(key)),
		&handle{id: id, key: key, fence: r.fence, replay: true}
}

// errModelFn is the error of a MutateOutcome whose fn fails.
var errModelFn = errors.New("model fn failed")

// realMutate runs MutateOutcome in a transaction of its own, committed
// when it succeeds, and answers as model.mutate does.
func realMutate[TTx any](t *testing.T, ctx context.Context, d *testdb.DB[TTx], l *ledger.Ledger[TTx], req ledger.Request, out ledger.Outcome, fails bool) string {
	tx := d.Begin(t)
	res, err := ledger.MutateOutcome(ctx, l, tx, req, func(context.Context) (ledger.Outcome, error) {
		if fails {
			return ledger.Outcome{}, errModelFn
		}
		return out, nil
	})
	if err != nil {
		d.Rollback(t, tx)
		return claimString(nil, err)
	}
	d.Commit(t, tx)
	if res.Replayed {
		return fmt.Sprintf("replay fence=%d %s", res.Fence, outcomeString(res.Value))
	}
	return fmt.Sprintf("ran fence=%d", res.Fence)
}

// mutate follows MutateOutcome's doc comment (Mutate's, with the outcome
// stored as it is): where a claim would win, fn runs and the record is
// completed at once, or, if fn fails, everything stays as it was; where
// the record stands, the claim's answer.
func (m *model) mutate(key, fpi int, out ledger.Outcome, fails bool) string {
	r := m.recs[key]
	if m.open(r, fpi) {
		if fails {
			return "error: " + errModelFn.Error()
		}
		fence := int64(1)
		if r != nil {
			fence = r.fence + 1
		}
		m.recs[key] = &modelRec{fp: fpi, state: ledger.StateCompleted, holder: -1, fence: fence,
			created: m.now, completed: m.now, expExp: m.now + m.ttl, out: out}
		return fmt.Sprintf("ran fence=%d", fence)
	}
	switch {
	case r.fp != fpi:
		return "error: " + ledger.ErrKeyReused.Error()
	case r.state == ledger.StateInFlight && r.leaseExp <= m.now:
		return "error: " + committedString(r)
	case r.state == ledger.StateInFlight:
		return fmt.Sprintf("in flight, retry after %v", time.Duration(r.leaseExp-m.now)*time.Millisecond)
	}
	return fmt.Sprintf("replay fence=%d %s", r.fence, outcomeString(r.out))
}

// open follows Claim's doc comment: a claim wins when the key has no
// record, when it was released, when it expired, or when it is in flight
// under a lease that ran out with the same fingerprint and no commit mark.
func (m *model) open(r *modelRec, fpi int) bool {
	return r == nil || r.released || m.expired(r) ||
		(r.state == ledger.StateInFlight && r.leaseExp <= m.now && r.fp == fpi && r.committed == 0)
}

// committedString is the text of the *ledger.CommittedError of r.
func committedString(r *modelRec) string {
	return fmt.Sprintf("%v (fence %d, at %s)", ledger.ErrCommitted, r.fence, ms(r.committed).Format(time.RFC3339Nano))
}

// commit follows Ledger.Commit's doc comment: the holder's mark, the first
// one kept, and the lease renewed for a whole lease from now.
func (m *model) commit(h *handle) string {
	if !m.holds(h) {
		return leaseLost(h)
	}
	r := m.recs[h.key]
	if r.committed == 0 {
		r.committed = m.now
	}
	r.leaseExp = max(r.leaseExp, m.now+m.lease)
	return "ok"
}

// outcomeString shows an outcome as recordString does.
func outcomeString(o ledger.Outcome) string {
	body := "nil"
	if o.Body != nil {
		body = strconv.Quote(string(o.Body))
	}
	return fmt.Sprintf("out=%d %s %#v", o.Status, body, o.Header)
}

// holds: the handle's lease still holds (same token, hence same fence,
// and still in flight); a lease that ran out without a takeover holds.
func (m *model) holds(h *handle) bool {
	r := m.recs[h.key]
	return !h.replay && r != nil && r.state == ledger.StateInFlight && !r.released && r.holder == h.id
}

func (m *model) complete(h *handle, out ledger.Outcome) string {
	if !m.holds(h) {
		return leaseLost(h)
	}
	r := m.recs[h.key]
	r.state, r.out, r.completed, r.expExp, r.leaseExp, r.holder = ledger.StateCompleted, out, m.now, m.now+m.ttl, 0, -1
	return "ok"
}

func (m *model) release(h *handle) string {
	if !m.holds(h) {
		return leaseLost(h)
	}
	if r := m.recs[h.key]; r.committed != 0 {
		return "error: ledger: release: " + strings.TrimPrefix(committedString(r), "ledger: ")
	}
	// The record stays, released, with its fence; it expires no earlier
	// than a lease after its lease's end.
	r := m.recs[h.key]
	r.released, r.holder, r.failures = true, -1, r.failures+1
	r.expExp = max(r.expExp, r.leaseExp+m.lease)
	return "ok"
}

func (m *model) extend(h *handle) string {
	if !m.holds(h) {
		return leaseLost(h)
	}
	m.recs[h.key].leaseExp = m.now + m.lease
	return "ok until " + ms(m.now+m.lease).Format(time.RFC3339Nano)
}

func leaseLost(h *handle) string {
	if h.replay {
		return "error: " + ledger.ErrLeaseLost.Error() + ": the claim is a replay and holds no lease"
	}
	return "error: " + ledger.ErrLeaseLost.Error()
}

func (m *model) purge() int {
	n := 0
	for k, r := range m.recs {
		if m.expired(r) {
			delete(m.recs, k)
			n++
		}
	}
	return n
}

func (m *model) get(key int) string {
	if m.recs[key] == nil || m.recs[key].released {
		return "error: ledger: get: record not found"
	}
	return recordString(m.record(key)) + fmt.Sprintf(" expired=%v", m.expired(m.recs[key]))
}

func (m *model) stats() ledger.Stats {
	var s ledger.Stats
	for _, r := range m.recs {
		switch {
		case r.released:
			s.Released++
		case r.state == ledger.StateInFlight:
			s.InFlight++
		default:
			s.Completed++
		}
		if m.expired(r) {
			s.Expired++
			if b := time.Duration(m.now-r.expExp) * time.Millisecond; b > s.PurgeBacklog {
				s.PurgeBacklog = b
			}
		}
		if r.state == ledger.StateInFlight && !r.released && r.leaseExp <= m.now {
			s.LeaseExpired++
		}
		if r.state == ledger.StateInFlight && !r.released && r.committed != 0 {
			s.Committed++
		}
		if c := ms(r.created); s.Oldest.IsZero() || c.Before(s.Oldest) {
			s.Oldest = c
		}
		if c := ms(r.created); c.After(s.Newest) {
			s.Newest = c
		}
	}
	return s
}

// Answers as text, the same for both sides.

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return "error: " + err.Error()
}

func claimString(c *ledger.Claim, err error) string {
	switch {
	case err != nil:
		var inFlight *ledger.InFlightError
		if errors.As(err, &inFlight) {
			return fmt.Sprintf("in flight, retry after %v", inFlight.RetryAfter)
		}
		return errString(err)
	case c.Replayed():
		return "replay fence=" + strconv.FormatInt(c.Fence, 10) + " " + recordString(c.Replay)
	}
	return fmt.Sprintf("lease fence=%d until=%s%s", c.Fence, c.LeaseExpiresAt.Format(time.RFC3339Nano), failuresString(c.Failures))
}

func recordString(r *ledger.Record) string {
	body := "nil"
	if r.Outcome.Body != nil {
		body = strconv.Quote(string(r.Outcome.Body))
	}
	f := func(t time.Time) string {
		if t.IsZero() {
			return "0"
		}
		return t.Format("15:04:05.000")
	}
	return fmt.Sprintf("{%q/%q fp=%x %v fence=%d lease=%s out=%d %s %#v created=%s completed=%s expires=%s committed=%s}",
		r.Scope, r.Key, r.Fingerprint[:4], r.State, r.Fence, f(r.LeaseExpiresAt),
		r.Outcome.Status, body, r.Outcome.Header, f(r.CreatedAt), f(r.CompletedAt), f(r.ExpiresAt), f(r.CommittedAt))
}

// answerKind names the kind of an expected answer for the tally.
func answerKind(o modelOp, want string) string {
	name := [...]string{"claim", "complete", "release", "extend", "purge", "get", "stats", "jump", "mutate", "commit"}[o.kind]
	switch {
	case o.kind == opClaim && strings.HasPrefix(want, "lease fence=1 "):
		return "claim:new"
	case o.kind == opClaim && strings.HasPrefix(want, "lease"):
		return "claim:takeover"
	case (o.kind == opClaim || o.kind == opMutate) && strings.Contains(want, "commit point"):
		return name + ":committed"
	case o.kind == opClaim:
		return "claim:" + strings.Fields(want)[0]
	case o.kind == opMutate && want == "ran fence=1":
		return "mutate:new"
	case o.kind == opMutate && strings.HasPrefix(want, "ran"):
		return "mutate:takeover"
	case o.kind == opMutate:
		return "mutate:" + strings.Fields(want)[0]
	case o.kind == opPurge && !strings.HasPrefix(want, "0 "):
		return "purge:deleted"
	case o.kind == opGet && strings.HasSuffix(want, "expired=true"):
		return "get:expired"
	case o.kind == opJump && o.jump > 0 && o.jump < 3:
		return fmt.Sprintf("jump:boundary%+d", o.delta)
	case strings.Contains(want, "lease lost"):
		return name + ":lost"
	}
	return name
}
