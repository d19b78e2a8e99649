package sqlite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
)

// gate lets one write transaction of a pool at a time reach SQLite, and
// queues the others in Go.
//
// Without it, every pooled connection that wants the write lock asks SQLite,
// and all but one wait inside SQLite's busy handler, which sleeps and polls
// (1, 2, 5, 10 … up to 100 ms) and serves no one in particular: a request can
// lose the race again and again while later ones win, so that single
// waits reach seconds when several clients write at once (see
// BENCHMARKS.md, "The SQLite writers' gate").
//
// The gate is not first come, first served, and that is for speed: a
// writer that arrives while the slot is free takes it, even when others
// wait, as long as the longest waiter has waited less than starveAfter;
// past that, the slot goes from the writer that gives it back straight to
// the longest waiter, and to each waiter in order of arrival until none
// has waited that long (sync.Mutex's starvation mode, with a longer
// bound). So no writer waits much longer than starveAfter plus one
// transaction per writer queued ahead of it. Why not strict order: SQLite
// empties a connection's page cache when it begins a transaction after
// another connection wrote, and strict order hands the slot to another
// connection at every transaction, so every transaction began cold and
// read its B-tree pages again (see BENCHMARKS.md, "The SQLite writers'
// gate", for the misses and the throughput). The writer that arrives
// while the slot is free is nearly always the connection that has just
// committed, back from the pool with its next caller, its cache warm.
//
// The gate is the process's (more exactly, the pool's): other processes, and
// other pools on the same file, still meet this pool's writer in SQLite and
// wait for it through busy_timeout, and it for them.
type gate struct {
	mu sync.Mutex
	// held: a writer holds the slot. queue: the waiters, longest first.
	// woken: the first waiter was told the slot came free and has not yet
	// come to take it (at most one is told at a time).
	held  bool
	queue []*gateWaiter
	woken bool
	// wait bounds a wait for the slot, as busy_timeout bounds a wait for
	// the lock: a writer that waited this long fails as if SQLITE_BUSY.
	wait time.Duration
	// starveAfter is how long the first waiter waits before the slot is
	// handed to it rather than left to whoever comes first; zero hands
	// it over at every release (first come, first served).
	starveAfter time.Duration
	// now is the clock of the waits (time.Now; tests set their own).
	now func() time.Time
	// wal is the pool's account of its write-ahead log, and ckp its
	// checkpointer (see checkpoint.go).
	wal wal
	ckp *checkpointer
}

// defaultStarveAfter is the gate's bound on how long its first waiter lets
// newcomers take the slot before it is handed the slot in turn. A
// transaction holds the slot for well under a millisecond, so a waiter
// lets a few dozen warm transactions pass, and waits at most this plus
// one transaction per writer queued ahead of it (the pool's connections
// and its checkpointer). A shorter bound leaves most transactions cold; a
// longer one makes the few parked writers' wait, hence the tail latency,
// grow with it (the sweep: BENCHMARKS.md, "The SQLite writers' gate").
const defaultStarveAfter = 10 * time.Millisecond

// gateWaiter is one writer waiting for the slot. Its channel (buffered,
// one) receives true when the slot is handed to it, false when the slot
// came free and it may try to take it.
type gateWaiter struct {
	since time.Time
	ch    chan bool
}

func newGate(wait time.Duration) *gate {
	g := &gate{wait: wait, starveAfter: defaultStarveAfter, now: time.Now}
	g.wal.bound = walBoundPages
	return g
}

// acquire takes the slot, waiting until ctx ends or g.wait passes. Under
// ctx marked as background work's (idriver.Background: a purge's batch, a
// reclaim's step) it takes a free slot only when no writer waits: the
// requests beside a purge go first, and only requests may overtake.
func (g *gate) acquire(ctx context.Context) error {
	g.mu.Lock()
	if !g.held && (len(g.queue) == 0 || !idriver.IsBackground(ctx)) {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{since: g.now(), ch: make(chan bool, 1)}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	for {
		select {
		case handed := <-w.ch:
			if handed || g.retry(w) {
				return nil
			}
		case <-ctx.Done():
			return g.leaveQueue(w, ctx.Err())
		case <-timer.C:
			return g.leaveQueue(w, &busyError{wait: g.wait})
		}
	}
}

// retry is a woken waiter's try at the free slot: it takes it, or stays
// in the queue, in its place, if a newcomer took it first.
func (g *gate) retry(w *gateWaiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.woken = false
	if g.held {
		return false
	}
	g.held = true
	g.remove(w)
	return true
}

// leaveQueue ends a wait that timed out or was cancelled, and returns err.
// Should the slot have been handed to w meanwhile, it is given back; should
// w have been woken, the wake passes to the next waiter.
func (g *gate) leaveQueue(w *gateWaiter, err error) error {
	g.mu.Lock()
	select {
	case handed := <-w.ch:
		if handed {
			g.mu.Unlock()
			g.release()
			return err
		}
		g.woken = false
	default:
	}
	g.remove(w)
	g.wakeFirst()
	g.mu.Unlock()
	return err
}

// release gives the slot back: to the first waiter if it has waited
// starveAfter or longer, else to whoever comes first, telling the first
// waiter that it is free.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) > 0 && g.now().Sub(g.queue[0].since) >= g.starveAfter {
		w := g.queue[0]
		g.queue = g.queue[1:]
		if g.woken {
			// w is the waiter told the slot was free (the first):
			// take that back, so that its channel has room.
			g.woken = false
			select {
			case <-w.ch:
			default:
			}
		}
		w.ch <- true // held stays true: the slot is w's
		return
	}
	g.held = false
	g.wakeFirst()
}

// wakeFirst tells the first waiter that the slot is free, unless it is held
// or one waiter was told already. g.mu is held.
func (g *gate) wakeFirst() {
	if g.held || g.woken || len(g.queue) == 0 {
		return
	}
	g.woken = true
	g.queue[0].ch <- false
}

// remove takes w out of the queue. g.mu is held.
func (g *gate) remove(w *gateWaiter) {
	if i := slices.Index(g.queue, w); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
	}
}

// busyError is a wait for the gate that outlasted the busy timeout. It reads
// as SQLITE_BUSY (Code), so that it is marked busy and retryable like the
// lock wait it replaces.
type busyError struct{ wait time.Duration }

func (e *busyError) Error() string {
	return fmt.Sprintf("sqlite: database is locked (SQLITE_BUSY): another write transaction of this pool held it for more than the busy timeout (%v)", e.wait)
}

// Code returns SQLITE_BUSY.
func (e *busyError) Code() int { return sqliteBusy }
