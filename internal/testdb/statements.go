package testdb

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Statements is a pgx QueryTracer that records every statement its
// connections send, with the server process that ran it: for tests that
// hold a driver to the statements it sends and to the connection it sends
// them on.
type Statements struct {
	mu   sync.Mutex
	seen []Statement
}

// Statement is one statement a traced connection sent: its server process
// (pgconn's PID), its text, trimmed, and its arguments as the driver
// passed them to pgx.
type Statement struct {
	PID  uint32
	SQL  string
	Args []any
}

// TraceQueryStart records the statement.
func (s *Statements) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, Statement{conn.PgConn().PID(), strings.TrimSpace(d.SQL), d.Args})
	return ctx
}

// TraceQueryEnd does nothing.
func (*Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Take returns the statements recorded since the last Take, and forgets
// them.
func (s *Statements) Take() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.seen
	s.seen = nil
	return seen
}

// WantReclaim checks the statements a PostgreSQL driver's Reclaim sent:
// the table's size before and after, and between them the plain VACUUM at
// autovacuum's pace (the cost delay set and reset around it, all three on
// one server process), or VACUUM FULL alone when full.
func WantReclaim(t testing.TB, got []Statement, full bool) {
	t.Helper()
	size := "SELECT pg_total_relation_size('idempotency_ledger'::regclass)"
	want := []string{size, "SET vacuum_cost_delay = '2ms'", "VACUUM (ANALYZE) idempotency_ledger", "RESET vacuum_cost_delay", size}
	if full {
		want = []string{size, "VACUUM (FULL, ANALYZE) idempotency_ledger", size}
	}
	sqls := make([]string, len(got))
	for i, s := range got {
		sqls[i] = s.SQL
	}
	if !slices.Equal(sqls, want) {
		t.Fatalf("Reclaim(full %v) sent\n%q\nwant\n%q", full, sqls, want)
	}
	if !full && (got[1].PID != got[2].PID || got[2].PID != got[3].PID) {
		t.Errorf("Reclaim sent its SET, VACUUM and RESET on server processes %d, %d, %d; want one", got[1].PID, got[2].PID, got[3].PID)
	}
}
