package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/internal/spans"
)

// checkpointer runs a pool's checkpoints outside the gate, and the bound's
// inside it, on a connection of its own, on a goroutine started by the
// first wake and stopped by close (the pool's Close).
type checkpointer struct {
	base driver.Connector
	gate *gate

	start  sync.Once
	wakeCh chan struct{} // buffered, one: a checkpoint is due
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// running is set while the goroutine works through a wake.
	running atomic.Bool
	// mu guards waiters, the settles (see settle) waiting for the end of
	// the goroutine's next round.
	mu      sync.Mutex
	waiters []chan struct{}
	// settled is when background work last called settle (Unix
	// nanoseconds; 0: never).
	settled atomic.Int64
}

func newCheckpointer(base driver.Connector, g *gate) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	return &checkpointer{base: base, gate: g, wakeCh: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// wake asks for a checkpoint outside the gate, without waiting: a wake
// while one is due or running is folded into it.
func (k *checkpointer) wake() {
	k.start.Do(func() { go k.run() })
	select {
	case k.wakeCh <- struct{}{}:
	default:
	}
}

// close stops the goroutine, if it ran, and closes its connection.
func (k *checkpointer) close() {
	k.cancel()
	started := true
	k.start.Do(func() { started = false })
	if started {
		<-k.done
	}
}

func (k *checkpointer) run() {
	defer close(k.done)
	var conn driver.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-k.wakeCh:
		}
		k.running.Store(true)
		k.mu.Lock()
		waiters := k.waiters
		k.waiters = nil
		k.mu.Unlock()
		held := len(waiters) > 0
		if conn == nil && k.due(held) {
			// On an error, the pool's writers keep counting; the next
			// wake tries again, and past twice the bound they
			// checkpoint themselves.
			if c, err := k.base.Connect(k.ctx); err == nil {
				conn = c
			}
		}
		if conn != nil && k.due(held) && !k.checkpoint(conn, held) {
			conn.Close()
			conn = nil
		}
		k.running.Store(false)
		for _, ch := range waiters {
			close(ch)
		}
	}
}

// waiting reports whether a settle waits.
func (k *checkpointer) waiting() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.waiters) > 0
}

// due reports whether a checkpoint is due: checkpointPages written since
// the last one began (settlePages when background work waits for it), or
// the WAL at its bound.
func (k *checkpointer) due(held bool) bool {
	w := &k.gate.wal
	pages := int64(checkpointPages)
	if held {
		pages = settlePages
	}
	return w.pending.Load() >= pages || w.frames.Load() >= walBoundPages
}

// background reports whether background work settled lately, so that it
// will again before its next transaction: a round that finds the WAL at
// its bound waits for that rather than take the slot (see checkpoint).
func (k *checkpointer) background() bool {
	last := k.settled.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < backgroundWindow
}

// settle returns once no checkpoint is due and none runs, running the one
// that is due first; or when ctx ends, or the pool closes (with an error).
//
// The caller is background work that writes a lot (a purge's batches, a
// reclaim's steps) and calls it between two of its transactions, holding
// nothing. Its writes are what make the checkpoints come often, and
// running its next transaction beside one would compete with the requests
// for the two things they need, the processor and the disk (a purge beside
// its checkpoints kept both processors of a two-core machine busy, and a
// request's goroutine waited to run at all). While a
// settle waits, the checkpoint also has only the requests' few pages to
// chase, so it reaches the end of the WAL without taking the slot (see
// checkpoint).
func (k *checkpointer) settle(ctx context.Context) error {
	k.settled.Store(time.Now().UnixNano())
	if !k.due(true) && !k.running.Load() {
		return nil
	}
	ch := make(chan struct{})
	k.mu.Lock()
	k.waiters = append(k.waiters, ch)
	k.mu.Unlock()
	k.wake()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-k.ctx.Done():
		return errors.New("sqlite: the pool is closed")
	}
}

// checkpoint runs a PASSIVE checkpoint outside the gate and then, when the
// WAL has reached walBoundPages, takes the slot and checkpoints the rest. It
// reports false when conn must not be used again.
//
// Before it takes the slot, it runs PASSIVE checkpoints again (a few at
// most) until one finds fewer than tailPages appended while the one before
// ran: what is left for the checkpoint inside the gate, which the queue
// waits for, is then that short tail, not all that the writers appended
// while a checkpoint of thousands of pages copied and synced.
//
// held says that background work waits for this round (see settle), so
// only the requests write meanwhile: a few pages each. Then PASSIVE
// checkpoints run again (up to maxHeldPassives) until one copies the whole
// WAL, and the slot is not taken at all: the next writer that begins after
// it starts the WAL over, as after the checkpoint inside the gate, which
// holds every request for the copy of the WAL's tail and its two syncs. Should a request's pages keep coming in, or a reader keep
// the WAL from starting over, it falls back to the slot as before.
//
// Each PASSIVE checkpoint also tells the WAL's length (the frames in it
// when it began), which replaces the writers' count of pages since it
// last started over: the count learns so that the WAL started over
// without a checkpoint inside the gate. Pages the writers count while the
// checkpoint runs may be counted twice, an overcount.
func (k *checkpointer) checkpoint(conn driver.Conn, held bool) (connOK bool) {
	w := &k.gate.wal
	for i := 1; ; i++ {
		before := w.frames.Load()
		log, done, err := k.passive(conn)
		appended := w.frames.Load() - before
		if err == nil && log >= 0 {
			w.frames.Add(log - before)
		}
		if w.frames.Load() < walBoundPages {
			return true
		}
		if held {
			if err == nil && done == log {
				// Every frame is copied: the next writer starts the
				// WAL over. The next round's PASSIVE tells whether
				// it did.
				return true
			}
			if i >= maxHeldPassives {
				break
			}
			continue
		}
		if k.waiting() || k.background() {
			// Background work is at it (a settle came while this
			// round ran, the batch's own COMMIT having woken it, or
			// one will before its next transaction): the round that
			// settle waits for finishes the WAL, without the slot.
			return true
		}
		if appended < tailPages || i >= maxPassives {
			break
		}
	}
	if w.frames.Load() < walBoundPages {
		return true
	}
	asked := time.Now()
	if err := k.gate.acquire(k.ctx); err != nil {
		return true
	}
	defer k.gate.release()
	wait := time.Since(asked)
	frames := w.frames.Load()
	if frames < w.bound {
		// A writer did it meanwhile, or the last try failed and it is
		// not yet time for the next.
		return true
	}
	w.ckpt.Lock()
	defer w.ckpt.Unlock()
	return k.gate.boundCheckpoint(conn, frames, spans.BoundCheckpoint, wait)
}

// Bounds of the PASSIVE checkpoints the checkpointer runs before it takes
// the slot (see checkpointer.checkpoint).
const (
	tailPages   = 128
	maxPassives = 4
	// maxHeldPassives bounds the PASSIVE checkpoints of a round that
	// background work waits for, before it takes the slot.
	maxHeldPassives = 8
	// settlePages is how many pages written make a checkpoint due for
	// settle: background work waits for a checkpoint of about one of its
	// transactions' pages, not of checkpointPages. A checkpoint ends with
	// a sync of the database file, and a request's COMMIT that comes
	// meanwhile waits for the disk behind it: the fewer pages that sync
	// writes, the shorter that wait.
	settlePages = 256
	// backgroundWindow: background work that settled this recently is
	// still at work (see background).
	backgroundWindow = 250 * time.Millisecond
)

// passive runs one PASSIVE checkpoint and returns the frames in the WAL
// when it began (log) and how many of them are copied (done); its error
// leaves the WAL longer, and the next one tries again.
func (k *checkpointer) passive(conn driver.Conn) (log, done int64, err error) {
	k.gate.wal.ckpt.Lock()
	defer k.gate.wal.ckpt.Unlock()
	k.gate.wal.pending.Store(0)
	var start time.Time
	if spans.On() {
		start = time.Now()
	}
	_, log, done, err = checkpoint(k.ctx, conn, "PASSIVE")
	if !start.IsZero() {
		spans.Add(spans.Span{Kind: spans.PassiveCheckpoint, Start: start, Took: time.Since(start), N: log, M: done})
	}
	return log, done, err
}

// checkpoint runs PRAGMA wal_checkpoint(mode) on conn and returns its row:
// whether it could not finish (busy), the frames in the WAL (log) and how
// many of them are copied back (done).
func checkpoint(ctx context.Context, conn driver.Conn, mode string) (busy bool, log, done int64, err error) {
	var b int64
	err = queryRow(ctx, conn, "PRAGMA wal_checkpoint("+mode+")", &b, &log, &done)
	return b != 0, log, done, err
}

// queryRow runs query on conn and scans its first row's integers into
// dest.
func queryRow(ctx context.Context, conn driver.Conn, query string, dest ...*int64) error {
	rows, err := conn.(driver.QueryerContext).QueryContext(ctx, query, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(row); err != nil {
		return err
	}
	if len(row) < len(dest) {
		return fmt.Errorf("sqlite: %s: %d columns, want %d", query, len(row), len(dest))
	}
	for i, d := range dest {
		v, ok := row[i].(int64)
		if !ok {
			return fmt.Errorf("sqlite: %s: column %d is %T, want an integer", query, i, row[i])
		}
		*d = v
	}
	return nil
}

// execConn runs query on conn.
func execConn(ctx context.Context, conn driver.Conn, query string) error {
	_, err := conn.(driver.ExecerContext).ExecContext(ctx, query, nil)
	return err
}
