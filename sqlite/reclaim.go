package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pace"
	"github.com/idemledger/idemledger/internal/spans"
)

var _ idriver.Reclaimer = (*Driver)(nil)

// The steps of an incremental reclaim are sized by time, as Purge's
// batches are: each is one statement that holds the write lock (moving a
// page rewrites it, its parent's pointer and the pointer map), and the
// pool's writers queue behind it. A step of a fixed page count takes
// longer as the file grows, and even steps sized by time are slow now and
// then (their COMMIT syncs three pages' worth of WAL for each page moved),
// and the requests queued behind them wait as long: reclaimStepTime keeps
// them short, and a slow one is followed by a small one (BENCHMARKS.md,
// "SQLite purge").
const (
	reclaimStepTime  = 2 * time.Millisecond
	firstReclaimStep = 32
	maxReclaimStep   = 4096
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// Reclaim gives the file's free pages back to the file system and
// truncates the WAL (see ledger.Ledger.Reclaim).
//
// Incremental (full false): PRAGMA incremental_vacuum in steps, each a
// write statement of its own that queues with the pool's writers and is
// sized to take about reclaimStepTime, until no free page is left; then PRAGMA
// wal_checkpoint(TRUNCATE), which empties the WAL file when no reader is
// using it (otherwise it stays for the next reclaim: not an error). It
// needs a file with auto_vacuum=INCREMENTAL, which files created by [Open]
// have; on an older file it only truncates the WAL, and free pages are
// reused by new records before the file grows.
//
// Full: VACUUM, which rewrites the whole file (blocking the writers until
// it is done, and needing as much free disk again), and in doing so turns
// an older file into one with incremental auto-vacuum ([Open] asks for it
// on every connection). Then the checkpoint, as above.
func (d *Driver) Reclaim(ctx context.Context, full bool) (before, after int64, err error) {
	before, err = d.size(ctx)
	if err != nil {
		return 0, 0, interpretError(err)
	}
	if full {
		if err := d.vacuum(ctx); err != nil {
			return before, 0, interpretError(err)
		}
	} else if err := d.incrementalVacuum(ctx); err != nil {
		return before, 0, interpretError(err)
	}
	var busy, logPages, done int64
	if err := d.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done); err != nil {
		return before, 0, interpretError(err)
	}
	after, err = d.size(ctx)
	return before, after, interpretError(err)
}

// vacuum rewrites the file with incremental auto-vacuum: the pragma is the
// connection's, so both statements run on one.
func (d *Driver) vacuum(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "VACUUM")
	return err
}

func (d *Driver) incrementalVacuum(ctx context.Context) error {
	var mode int64
	if err := d.db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return err
	}
	if mode != autoVacuumIncremental {
		return nil
	}
	last, step := int64(-1), firstReclaimStep
	for {
		var free int64
		if err := d.db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
			return err
		}
		if free == 0 || free == last {
			// Done, or a step freed nothing (another connection holds
			// pages we cannot move yet): leave the rest for later.
			return nil
		}
		last = free
		start := time.Now()
		// A query, stepped to its end: each step of the statement
		// frees pages, and an Exec might stop after the first.
		rows, err := d.db.QueryContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", step))
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		took := time.Since(start)
		spans.Add(spans.Span{Kind: spans.ReclaimStep, Start: start, Took: took, N: int64(step)})
		step = pace.Next(step, maxReclaimStep, reclaimStepTime, took)
		// Each step's page moves go through the WAL: the checkpoint they
		// make due runs before the next step, not beside it.
		if err := d.Settle(ctx); err != nil {
			return err
		}
	}
}

// size is the database's bytes: its pages, and the WAL file beside it.
func (d *Driver) size(ctx context.Context) (int64, error) {
	var pages, pageSize int64
	if err := d.db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, err
	}
	if err := d.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return 0, err
	}
	var seq int
	var name string
	var file sql.NullString
	if err := d.db.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		return 0, err
	}
	n := pages * pageSize
	if file.String != "" {
		fi, err := os.Stat(file.String + "-wal")
		switch {
		case err == nil:
			n += fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return 0, err
		}
	}
	return n, nil
}
