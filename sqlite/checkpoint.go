package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/idemledger/idemledger/internal/spans"
)

// The pool checkpoints its write-ahead log itself; SQLite's automatic
// checkpoint is off on its connections (wal_autocheckpoint=0, see
// newConnector). SQLite's own ran inside the COMMIT that took the WAL past
// 1,000 pages, while the gate held every queued writer behind it: they all
// waited for the copy and its sync, and behind a purge's batches, each
// dirtying hundreds of pages, the waits reached seconds.
// Instead:
//
//   - Outside the gate: every checkpointPages pages the pool's writers
//     wrote, the pool's checkpointer, a goroutine with a connection of its
//     own, runs a PASSIVE checkpoint, which copies the WAL's pages into the
//     database file while the writers go on. No request waits for it.
//   - Inside the gate, past walBoundPages: the checkpointer, right after
//     its outside checkpoint, queues for the slot like a writer and, holding
//     it, checkpoints the WAL to its end. Should it fall behind, the writer
//     that takes the WAL past a second walBoundPages does it instead, before
//     giving the slot back.
//
// The second is what bounds the WAL. SQLite starts the WAL file over only
// when a writer begins after a checkpoint copied all of it (nBackfill equal
// to mxFrame) and no reader still reads from it
// (https://sqlite.org/wal.html, "Avoiding Excessively Large WAL Files"). A
// checkpoint run beside writers that never pause (8 clients back to back)
// always finds frames appended after its start, so on its own it never
// completes and the WAL grows without end (BENCHMARKS.md, "The SQLite
// writers' gate"). Inside the gate no writer of the
// pool appends, so the checkpoint reaches the end of the WAL; the outside
// checkpoint has just copied most of it, so what is left is the tail
// written while it ran.
//
// Background work that writes a lot (a purge, a reclaim) settles between
// its transactions (see settle): it waits for the checkpoint its writes
// made due rather than run beside it. While it does, only the requests
// write, a few pages each, so an outside checkpoint reaches the end of the
// WAL and the next writer starts it over: the bound is kept without the
// slot (see checkpoint). Beside a purge, the checkpoint inside the gate
// came every few batches and held every request for its copy and syncs
// (BENCHMARKS.md, "SQLite purge").

// checkpointPages is how many pages the pool's writers write to the WAL
// between two checkpoints outside the gate: SQLite's own default
// (wal_autocheckpoint), which Open turns off on its connections.
const checkpointPages = 1000

// walBoundPages is the WAL's length, in pages written since it last started
// over, past which it is checkpointed to its end inside the gate. Four
// times checkpointPages: the checkpoint that holds the queue comes once
// every 4,000 pages (about 16 MB of WAL at 4 KiB pages), not at every
// 1,000, and it finds only the tail written during the outside checkpoint
// just before it to copy. The WAL is longer than this only while a reader
// keeps SQLite from starting it over (see boundCheckpoint), or, up to
// twice as long, while the checkpointer lags behind the writers.
const walBoundPages = 4 * checkpointPages

// boundBusyTimeout is the busy timeout of the checkpoint inside the gate
// (the connection's busy_timeout for that one statement): how long it waits
// for readers that still read frames it must copy or that keep the WAL from
// starting over. The pool's own reads take a millisecond or so; a reader
// that takes longer (a long read transaction, another process's backup)
// makes the checkpoint give up rather than hold every writer of the pool up
// to the full busy timeout, and it is tried again checkpointPages later.
const boundBusyTimeout = 10 * time.Millisecond

// wal is a pool's account of its write-ahead log, kept by its writers and
// its checkpointer.
type wal struct {
	// ckpt is held while one of the pool's connections checkpoints:
	// SQLite lets one checkpoint run at a time and fails a second at once
	// with SQLITE_BUSY, without waiting.
	ckpt sync.Mutex
	// frames counts the pages written to the WAL since it last started
	// over, as the pool's writers counted them (modernc's per-connection
	// count of pages written), set after each checkpoint outside the gate
	// from the WAL's own length (see checkpointer.checkpoint), which learns
	// so that the WAL started over after an outside checkpoint finished it.
	// Other processes' writers are not counted: their pools bound what
	// they write, and a checkpoint inside the gate holds SQLite's write
	// lock, so theirs wait for it too.
	frames atomic.Int64
	// pending counts the pages written since the last checkpoint outside
	// the gate began.
	pending atomic.Int64
	// bound is the count of frames past which the slot's holder
	// checkpoints (walBoundPages, or later after a checkpoint that could
	// not finish). Only the slot's holder reads or writes it.
	bound int64
}

// afterWrite runs while c holds the slot, after its write transaction or
// statement ended: it counts the pages the write added to the WAL, wakes
// the checkpointer every checkpointPages pages and, should the WAL reach
// twice the bound (the checkpointer behind), checkpoints it to its end
// before the slot goes to the next writer.
func (c *gateConn) afterWrite() {
	g := c.gate
	n := pagesWritten(c.Conn)
	if n == 0 {
		return
	}
	frames := g.wal.frames.Add(n)
	if frames >= g.wal.bound+walBoundPages {
		g.wal.ckpt.Lock()
		ok := g.boundCheckpoint(c.Conn, frames, spans.WriterCheckpoint, 0)
		g.wal.ckpt.Unlock()
		if !ok {
			c.markBroken()
		}
		return
	}
	if g.wal.pending.Add(n) >= checkpointPages {
		g.ckp.wake()
	}
}

// pageCounter is modernc's per-connection count of pages written.
type pageCounter interface {
	Status(op msqlite.DBStatusOp, reset bool) (current, high int, err error)
}

// pagesWritten returns the pages conn wrote since the last call: in WAL
// mode, frames appended to the WAL (a page written twice in one transaction
// counts twice, an overcount).
func pagesWritten(conn driver.Conn) int64 {
	pc, ok := conn.(pageCounter)
	if !ok {
		return 0
	}
	n, _, err := pc.Status(msqlite.DBStatusCacheWrite, true)
	if err != nil {
		return 0
	}
	return int64(n)
}

// boundCheckpoint checkpoints the WAL to its end on conn, which has no
// transaction open, while its caller holds the slot and g.wal.ckpt.
// RESTART: it copies every frame, then waits (at most boundBusyTimeout)
// until no reader reads from the WAL, so that the next writer starts it
// over from its first frame
// (https://sqlite.org/c3ref/wal_checkpoint_v2.html).
//
// When it cannot finish (a reader holds frames it must copy, or keeps the
// WAL from starting over; another process checkpoints), the writers go on
// and it is tried again checkpointPages later: the WAL grows meanwhile, as
// it does under SQLite's own checkpoint while a reader holds it. It reports
// false when conn's busy timeout could not be set back, so conn must not be
// used again.
//
// kind and wait label the checkpoint's span (see package spans).
func (g *gate) boundCheckpoint(conn driver.Conn, frames int64, kind string, wait time.Duration) (connOK bool) {
	var start time.Time
	if spans.On() {
		start = time.Now()
	}
	busy, log, done, connOK, err := restartCheckpoint(conn)
	if !start.IsZero() {
		spans.Add(spans.Span{Kind: kind, Start: start, Took: time.Since(start), Wait: wait, N: log, M: done})
	}
	if err != nil || busy || done < log {
		g.wal.bound = frames + checkpointPages
		return connOK
	}
	// Every frame is copied and no reader is left on the WAL: the next
	// writer's first frame goes at its start.
	g.wal.frames.Store(0)
	g.wal.pending.Store(0)
	g.wal.bound = walBoundPages
	return connOK
}

// restartCheckpoint runs a RESTART checkpoint on conn with boundBusyTimeout
// as its busy timeout, and sets conn's own back after; connOK is false when
// that failed.
func restartCheckpoint(conn driver.Conn) (busy bool, log, done int64, connOK bool, err error) {
	ctx := context.Background()
	var prev int64
	if err := queryRow(ctx, conn, "PRAGMA busy_timeout", &prev); err != nil {
		return false, 0, 0, true, err
	}
	if err := execConn(ctx, conn, fmt.Sprintf("PRAGMA busy_timeout = %d", boundBusyTimeout.Milliseconds())); err != nil {
		return false, 0, 0, false, err
	}
	busy, log, done, err = checkpoint(ctx, conn, "RESTART")
	connOK = execConn(ctx, conn, fmt.Sprintf("PRAGMA busy_timeout = %d", prev)) == nil
	return busy, log, done, connOK, err
}
