package main

import (
	"fmt"
	"io"
)

// A layout writes the tables of one section of BENCHMARKS.md from the
// figures. It may write partial tables before f.err is set; run discards
// them then.
type layout func(w io.Writer, f *figures)

// layouts are the sections of BENCHMARKS.md by command-line argument.
var layouts = map[string]layout{
	"ledger-sqlite":       ledgerSQLite,
	"ledger-sqlite-row":   ledgerSQLiteRow,
	"ledger-sqlite-full":  ledgerSQLiteFull,
	"idemhttp":            idemHTTP,
	"ledger-postgres":     ledgerPostgres,
	"ledger-postgres-pgx": ledgerPostgresPgx,
	"idemhttp-clients":    idemHTTPClients,
	// The same tables, for the rounds of the build before the batching,
	// and for the rounds with synchronous_commit=off.
	"ledger-postgres-pgx-before":       ledgerPostgresPgx,
	"ledger-postgres-pgx-async":        ledgerPostgresPgx,
	"ledger-postgres-pgx-async-before": ledgerPostgresPgx,
	// The same tables for the rounds taken again on a quiet machine.
	"idemhttp-clients-quiet":    idemHTTPClients,
	"ledger-postgres-pgx-quiet": ledgerPostgresPgx,
}

// ledgerSQLite is the section "ledger (SQLite)": ledger.Mutate, lease mode
// and the same without Config.DB against a plain transaction as
// throughputs, under both synchronous settings; replay against a first
// execution; and Purge.
func ledgerSQLite(w io.Writer, f *figures) {
	fmt.Fprintf(w, "%d rounds.\n\n", len(f.rounds))
	for _, sync := range []string{"FULL", "NORMAL"} {
		mutate := "BenchmarkMutate/sync=" + sync + "/"
		base := mutate + "plain"
		rows := [][2]string{{"plain (BEGIN, INSERT, COMMIT)", base}}
		for _, nodb := range []string{"", "-nodb"} {
			tag := ""
			if nodb != "" {
				tag = " without Config.DB"
			}
			rows = append(rows,
				[2]string{"Mutate, first execution" + tag, mutate + "first" + nodb},
				[2]string{"Mutate, replay" + tag, mutate + "replay" + nodb},
				[2]string{"Claim + Complete (lease mode)" + tag, "BenchmarkClaimComplete/sync=" + sync + nodb})
		}
		fmt.Fprintf(w, "synchronous=%s\n\n", sync)
		againstPlain(w, f, base, rows)
		for _, nodb := range []string{"", "-nodb"} {
			first, replay := mutate+"first"+nodb, mutate+"replay"+nodb
			fmt.Fprintf(w, "replay%s vs first%s: %s× the throughput by wall clock, %s× by CPU time\n\n", nodb, nodb,
				times(f.ratio(first, replay, "ns/op")), times(f.ratio(first, replay, "cpu-ns/op")))
		}
	}
	const purge = "BenchmarkPurge"
	longest := f.values(purge, "ms/longest-batch")
	fmt.Fprint(w, "Purge, 100,000 expired rows, batches of 1,000, synchronous=FULL\n\n")
	fmt.Fprintln(w, "| rows/s (median, min–max) | longest batch, ms (median, max) | CPU µs per row | s per Purge |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	fmt.Fprintf(w, "| %s | %s (%s) | %s | %s |\n",
		spread(f.values(purge, "rows/s"), num), num(longest.med), num(longest.max),
		micro(f.values(purge, "cpu-ns/row").med), num(f.values(purge, "ns/op").med/1e9))
}

// againstPlain writes a table of rows, each a label and a benchmark name,
// with their times and their throughputs against the benchmark base.
func againstPlain(w io.Writer, f *figures, base string, rows [][2]string) {
	fmt.Fprintln(w, "| operation | µs/op (median, min–max) | × plain throughput | CPU µs/op | × plain (CPU) | allocs/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, row := range rows {
		label, name := row[0], row[1]
		// Times in inverse order: plain's time over name's is name's
		// throughput over plain's.
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f |\n", label,
			spread(f.values(name, "ns/op"), micro), times(f.ratio(base, name, "ns/op")),
			micro(f.values(name, "cpu-ns/op").med), times(f.ratio(base, name, "cpu-ns/op")),
			f.values(name, "allocs/op").med)
	}
	fmt.Fprintln(w)
}

// ledgerSQLiteRow is the section "What the ledger's row alone costs": a
// plain transaction, the same with one prepared INSERT of a completed
// ledger record, and Mutate's first execution, under both synchronous
// settings; then Mutate against the row alone.
func ledgerSQLiteRow(w io.Writer, f *figures) {
	fmt.Fprintf(w, "%d rounds.\n\n", len(f.rounds))
	for _, sync := range []string{"FULL", "NORMAL"} {
		p := "BenchmarkMutate/sync=" + sync + "/"
		fmt.Fprintf(w, "synchronous=%s\n\n", sync)
		againstPlain(w, f, p+"plain", [][2]string{
			{"plain (BEGIN, INSERT, COMMIT)", p + "plain"},
			{"plain + the ledger's row (one more INSERT)", p + "row"},
			{"Mutate, first execution", p + "first"},
		})
		fmt.Fprintf(w, "Mutate vs the row alone: %s× the throughput by wall clock, %s× by CPU time\n\n",
			times(f.ratio(p+"row", p+"first", "ns/op")), times(f.ratio(p+"row", p+"first", "cpu-ns/op")))
	}
}

// ledgerSQLiteFull is the section "The first execution under FULL,
// measured longer": Mutate's first execution against a plain transaction,
// synchronous=FULL, with quartiles, since its spread from round to round is
// as wide as the margin to the target.
func ledgerSQLiteFull(w io.Writer, f *figures) {
	const p = "BenchmarkMutate/sync=FULL/"
	fmt.Fprintf(w, "%d rounds.\n\n", len(f.rounds))
	againstPlain(w, f, p+"plain", [][2]string{
		{"plain (BEGIN, INSERT, COMMIT)", p + "plain"},
		{"Mutate, first execution", p + "first"},
	})
	wall, cpu := f.quartiles(p+"plain", p+"first", "ns/op"), f.quartiles(p+"plain", p+"first", "cpu-ns/op")
	fmt.Fprintf(w, "first vs plain, quartiles of the per-round ratios: %.2f–%.2f by wall clock, %.2f–%.2f by CPU time\n\n",
		wall[0], wall[1], cpu[0], cpu[1])
}

// idemHTTP is the section "idemhttp": each handler's time against the bare
// handler and the bare handler in a transaction, in process and over
// loopback HTTP, under both synchronous settings.
func idemHTTP(w io.Writer, f *figures) {
	fmt.Fprintf(w, "%d rounds. Ratios are times (lower is better).\n\n", len(f.rounds))
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, via := range []string{"inproc", "http"} {
			p := "BenchmarkMiddleware/sync=" + sync + "/" + via + "/"
			fmt.Fprintf(w, "synchronous=%s, %s\n\n", sync, via)
			fmt.Fprintln(w, "| handler | µs/op (median, min–max) | × bare | × bare-tx | CPU µs/op | × bare (CPU) | × bare-tx (CPU) | allocs/op |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
			for _, h := range []string{"bare", "first", "replay", "bare-tx", "tx-first", "tx-replay"} {
				name := p + h
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0f |\n", h,
					spread(f.values(name, "ns/op"), micro),
					times(f.ratio(name, p+"bare", "ns/op")), times(f.ratio(name, p+"bare-tx", "ns/op")),
					micro(f.values(name, "cpu-ns/op").med),
					times(f.ratio(name, p+"bare", "cpu-ns/op")), times(f.ratio(name, p+"bare-tx", "cpu-ns/op")),
					f.values(name, "allocs/op").med)
			}
			fmt.Fprintln(w)
		}
	}
}

// totalCPU is the derived unit of CPU time per operation in the client
// and the PostgreSQL server together.
const totalCPU = "total-cpu-ns/op"

// addTotalCPU sets totalCPU wherever a round has both the client's and
// the server's CPU time. A round with one of them only gets none, rather
// than a total that leaves out half the work.
func addTotalCPU(rounds []round) {
	for _, r := range rounds {
		for _, m := range r {
			client, okC := m["cpu-ns/op"]
			server, okS := m["server-cpu-ns/op"]
			if okC && okS {
				m[totalCPU] = client + server
			}
		}
	}
}

// ledgerPostgres is the section "ledger (PostgreSQL)": Mutate's first
// execution and replay against a plain transaction, as throughputs, with
// 1, 8 and 32 clients; then replay against a first execution.
func ledgerPostgres(w io.Writer, f *figures) {
	addTotalCPU(f.rounds)
	fmt.Fprintf(w, "%d rounds.\n\n", len(f.rounds))
	fmt.Fprintln(w, "| clients | transaction | ops/s (median, min–max) | × plain throughput | client CPU µs/op | server CPU µs/op | × plain (CPU, client + server) |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	clients := []int{1, 8, 32}
	prefix := func(n int) string { return fmt.Sprintf("BenchmarkPostgresMutate/clients=%d/", n) }
	for _, n := range clients {
		p := prefix(n)
		for _, tx := range []string{"plain", "first", "replay"} {
			name := p + tx
			// ops/s is a throughput already; CPU per op is a cost, so
			// plain's over name's is name's throughput per CPU second.
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", n, tx,
				spread(f.values(name, "ops/s"), num), times(f.ratio(name, p+"plain", "ops/s")),
				micro(f.values(name, "cpu-ns/op").med), micro(f.values(name, "server-cpu-ns/op").med),
				times(f.ratio(p+"plain", name, totalCPU)))
		}
	}
	fmt.Fprintln(w)
	for _, n := range clients {
		p := prefix(n)
		fmt.Fprintf(w, "clients=%d: replay vs first: %s× the throughput by wall clock, %s× by CPU time (client + server)\n\n", n,
			times(f.ratio(p+"replay", p+"first", "ops/s")), times(f.ratio(p+"first", p+"replay", totalCPU)))
	}
}

// clientsDrivers are the drivers of BenchmarkClients, in its order.
var clientsDrivers = []string{"sqlite-full", "sqlite-normal", "postgres", "pgxv5"}

// idemHTTPClients is the section "idemhttp under concurrency (issue 14)":
// for every driver and 1 and 16 clients, each handler's throughput over
// loopback HTTP against the bare handler's and the bare transaction's
// from the same round, its CPU time and, on PostgreSQL, the server's WAL
// per request; then the targets, replay against bare, beside the
// floor (read: the same work without the ledger).
func idemHTTPClients(w io.Writer, f *figures) {
	fmt.Fprintf(w, "%d rounds. Throughputs: higher is better.\n\n", len(f.rounds))
	handlers := []string{"bare", "first", "replay", "read", "bare-tx", "tx-first", "tx-replay"}
	for _, d := range clientsDrivers {
		pg := d == "postgres" || d == "pgxv5"
		for _, n := range []int{1, 16} {
			p := fmt.Sprintf("BenchmarkClients/driver=%s/clients=%d/", d, n)
			fmt.Fprintf(w, "driver=%s, clients=%d\n\n", d, n)
			head, rule := "| handler | requests/s (median, min–max) | × bare | × bare-tx | CPU µs/op | allocs/op |", "|---|---:|---:|---:|---:|---:|"
			if pg {
				head, rule = head+" WAL B/op |", rule+"---:|"
			}
			fmt.Fprintln(w, head)
			fmt.Fprintln(w, rule)
			for _, h := range handlers {
				name := p + h
				ns := f.values(name, "ns/op")
				rate := summary{med: 1e9 / ns.med, min: 1e9 / ns.max, max: 1e9 / ns.min}
				// Times in inverse order: bare's time over name's is
				// name's throughput over bare's.
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f |", h, spread(rate, num),
					times(f.ratio(p+"bare", name, "ns/op")), times(f.ratio(p+"bare-tx", name, "ns/op")),
					micro(f.values(name, "cpu-ns/op").med), f.values(name, "allocs/op").med)
				if pg {
					fmt.Fprintf(w, " %s |", num(f.values(name, "wal-B/op").med))
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w, "| target (replay throughput × bare) | measured | met | floor: read × bare | replay × read |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|")
	for _, t := range []struct {
		driver  string
		clients int
		want    float64
	}{
		{"postgres", 1, 2}, {"postgres", 16, 1.4}, {"pgxv5", 1, 2}, {"pgxv5", 16, 1.4},
		{"sqlite-full", 16, 10}, {"sqlite-normal", 16, 1.1},
	} {
		p := fmt.Sprintf("BenchmarkClients/driver=%s/clients=%d/", t.driver, t.clients)
		r := f.ratio(p+"bare", p+"replay", "ns/op")
		met := "yes"
		if r.med < t.want {
			met = "no"
		}
		fmt.Fprintf(w, "| %s, %d clients: ≥ %.1f× | %s | %s | %s | %s |\n", t.driver, t.clients, t.want, times(r), met,
			times(f.ratio(p+"bare", p+"read", "ns/op")), times(f.ratio(p+"read", p+"replay", "ns/op")))
	}
	fmt.Fprintln(w)
}

// ledgerPostgresPgx is the section "ledger (PostgreSQL): database/sql and
// pgx": from BenchmarkPostgresMutatePaired's rounds, Mutate's first
// execution against a plain transaction of the same driver, as throughput
// ratios measured turn by turn, with 1, 8 and 32 clients, for
// database/sql (driver postgres) and pgx (driver pgxv5), and on pgx the
// floor (plain plus Mutate's extra writes in the same five round trips).
func ledgerPostgresPgx(w io.Writer, f *figures) {
	fmt.Fprintf(w, "%d rounds.\n\n", len(f.rounds))
	fmt.Fprintln(w, "| clients | database/sql: first × plain | pgx: first × plain | pgx: floor × plain | pgx: first × floor |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|")
	for _, n := range []int{1, 8, 32} {
		p := fmt.Sprintf("BenchmarkPostgresMutatePaired/clients=%d/", n)
		// first-x over floor-x is the floor's time over first's: first's
		// throughput relative to the floor's.
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", n,
			times(f.values(p+"sql", "first-x")), times(f.values(p+"pgx", "first-x")),
			times(f.values(p+"pgx", "floor-x")), times(f.ratioUnits(p+"pgx", "first-x", "floor-x")))
	}
	fmt.Fprintln(w)
}
