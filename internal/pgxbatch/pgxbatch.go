// Package pgxbatch holds the one rule of how the pgxv5 driver sends
// statements on the connections of a pgx configuration, so that the driver
// and the tests that must know it read it from the same place.
package pgxbatch

import "github.com/jackc/pgx/v5"

// Mode is how the driver sends statements that travel together (Mutate's
// pairs, a step's record with its COMMIT).
type Mode int8

const (
	// None: one statement at a time.
	None Mode = iota
	// Pipeline: a pgconn pipeline, the ledger's statements prepared.
	Pipeline
	// Batch: a pgx.Batch, which prepares nothing.
	Batch
)

// Of returns the Mode on connections of cfg: Pipeline in
// QueryExecModeCacheStatement, Batch in QueryExecModeExec and
// QueryExecModeSimpleProtocol, and None in the description-caching modes
// (a batch would describe each new savepoint name in a round trip of its
// own) and whenever cfg has a Tracer (the pipeline runs below pgx's
// tracers; one statement at a time, every one traced).
func Of(cfg *pgx.ConnConfig) Mode {
	if cfg == nil || cfg.Tracer != nil {
		return None
	}
	switch cfg.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement:
		return Pipeline
	case pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		return Batch
	}
	return None
}
