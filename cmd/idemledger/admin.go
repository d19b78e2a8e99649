package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "migrate", "-db DSN [-force] [up|down|version]\n\n"+
		"Applies (up, the default) or rolls back (down: drops the ledger's table) the ledger's schema,\n"+
		"or prints the version applied (version). None of the three is read-only: version too creates\n"+
		"the empty migrations table, "+schema.MigrationsTable+", in a database that lacks it.\n"+
		"Only the ledger's own table and that migrations table are touched. down refuses a ledger\n"+
		"that holds records unless -force is given.")
	dsn := dbFlag(fs)
	force := fs.Bool("force", false, "let down drop a ledger that holds records (live leases included)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	action := "up"
	switch fs.NArg() {
	case 0:
	case 1:
		action = fs.Arg(0)
	default:
		return usagef("want one action, got %q%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	if action != "up" && action != "down" && action != "version" {
		return usagef("unknown action %q: want up, down or version", redactDSN(action))
	}
	n := mustExist
	if action == "up" {
		n = mayCreate
	}
	db, err := openDB(ctx, *dsn, n)
	if err != nil {
		return err
	}
	defer db.Close()
	switch action {
	case "up":
		if err := db.migrate(ctx); err != nil {
			return err
		}
	case "down":
		if !*force {
			if err := db.checkEmpty(ctx); err != nil {
				return err
			}
		}
		if err := db.down(ctx); err != nil {
			return err
		}
	}
	v, dirty, err := db.version(ctx)
	if err != nil {
		return err
	}
	if dirty {
		fmt.Fprintf(e.stdout, "version %d (dirty: a migration failed half-way; fix it by hand)\n", v)
		return fmt.Errorf("schema is dirty at version %d", v)
	}
	if v > schema.Latest {
		fmt.Fprintf(e.stdout, "version %d (newer than this idemledger, which knows versions up to %d)\n", v, schema.Latest)
		return nil
	}
	fmt.Fprintf(e.stdout, "version %d\n", v)
	return nil
}

func runPurge(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "purge", "-db DSN [-batch N] [-timeout D] [-q]\n\n"+
		"Deletes expired records in batches and prints how many went; suitable for cron. By default the\n"+
		"batches are sized so that a large purge runs beside the service:\n"+
		engineHelp(func(g *engine) string { return g.purge })+
		"Then the space is given back (see reclaim).\n"+
		"With -timeout, stops after D (a batch whose DELETE was cut short is rolled back), prints the count so far\n"+
		"and exits with 1, so that a cron job never runs into the next one.")
	dsn := dbFlag(fs)
	batch := fs.Int("batch", 0, "rows deleted per batch, fixed, with no pause (each batch is its own short transaction); 0: the defaults above")
	quiet := fs.Bool("q", false, "no progress on stderr")
	timeout := fs.Duration("timeout", 0, "stop after this `duration` (0: no limit)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	if *batch < 0 {
		return usagef("-batch must not be negative, got %d", *batch)
	}
	if *timeout < 0 {
		return usagef("-timeout must not be negative, got %v", *timeout)
	}
	if *timeout > 0 {
		// The deadline covers opening the database too: a cron job must
		// end in time even when the server does not answer.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	// stopped reports a purge that -timeout ended, with the count so far
	// on stdout as after a complete run.
	stopped := func(n int64, err error) error {
		if *timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fmt.Fprintln(e.stdout, n)
			return fmt.Errorf("stopped by -timeout %v after %d records", *timeout, n)
		}
		return err
	}
	db, l, err := openLedger(ctx, *dsn)
	if err != nil {
		return stopped(0, err)
	}
	defer db.Close()
	opts := ledger.PurgeOptions{BatchSize: *batch}
	if !*quiet {
		// Progress only for large purges, every ten batches: a cron job
		// purging a handful of rows stays silent on stderr. Ten batches of
		// more than MaxInt64/10 rows would overflow; no purge gets there.
		every := int64(math.MaxInt64)
		if b := int64(*batch); b == 0 {
			// Batches sized by time: a line per 100,000 records.
			every = 100_000
		} else if b <= math.MaxInt64/10 {
			every = 10 * b
		}
		// Progress comes after every batch, the last (short or empty)
		// one included, so a total already shown is not shown again.
		var shown int64
		opts.Progress = func(deleted int64) {
			if *batch == 0 {
				if deleted/every > shown/every {
					fmt.Fprintf(e.stderr, "purged %d records so far\n", deleted)
					shown = deleted
				}
				return
			}
			if deleted > shown && deleted%every == 0 {
				fmt.Fprintf(e.stderr, "purged %d records so far\n", deleted)
				shown = deleted
			}
		}
	}
	n, err := l.Purge(ctx, opts)
	if err != nil {
		return stopped(n, fmt.Errorf("after %d records: %w", n, err))
	}
	fmt.Fprintln(e.stdout, n)
	return nil
}

func runReclaim(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "reclaim", "-db DSN [-full]\n\n"+
		"Makes the space of purged records free again and prints the ledger's size before and after, in\n"+
		"bytes. purge already does the incremental form after deleting records. -full rebuilds the\n"+
		"storage and blocks writers until done. What each does:\n"+
		strings.TrimSuffix(engineHelp(func(g *engine) string { return g.reclaim }), "\n"))
	dsn := dbFlag(fs)
	full := fs.Bool("full", false, "rebuild the storage completely (blocks writers; for a maintenance window)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	db, l, err := openLedger(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := l.Reclaim(ctx, ledger.ReclaimOptions{Full: *full})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%d -> %d bytes\n", r.Before, r.After)
	return err
}

func runStats(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "stats", "-db DSN [-json]\n\n"+
		"Counts records by state (in flight, completed), expired ones included: an expired record stays\n"+
		"in the table, and in its state's count, until purge deletes it, though retries no longer get\n"+
		"its answer. Then those expired awaiting purge (of either state), how long the first of them\n"+
		"has waited, and the oldest and newest record.")
	dsn := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object (times as RFC 3339 strings, null when the table is empty)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	db, l, err := openLedger(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := l.Stats(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, statsJSON{
			InFlight: s.InFlight, Completed: s.Completed, Released: s.Released, Expired: s.Expired, LeaseExpired: s.LeaseExpired,
			Committed: s.Committed, CompletedEstimated: s.Estimated, ExpiredEstimated: s.ExpiredEstimated,
			PurgeBacklog: s.PurgeBacklog.Milliseconds(), Oldest: jsonTime(s.Oldest), Newest: jsonTime(s.Newest),
			Steps: s.Steps,
		})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "in flight\t%d\n", s.InFlight)
	fmt.Fprintf(tw, "  lease ran out\t%d\n", s.LeaseExpired)
	// Records whose holder marked its commit point: with the lease run out
	// too, their effect happened and their answer is lost (see inspect
	// -in-flight, column "committed").
	fmt.Fprintf(tw, "  passed commit point\t%d\n", s.Committed)
	fmt.Fprintf(tw, "completed, expired included\t%d%s\n", s.Completed, estimate(s.Estimated))
	fmt.Fprintf(tw, "released\t%d\n", s.Released)
	fmt.Fprintf(tw, "expired, awaiting purge\t%d%s\n", s.Expired, estimate(s.ExpiredEstimated))
	fmt.Fprintf(tw, "purge backlog\t%v\n", s.PurgeBacklog)
	fmt.Fprintf(tw, "oldest created\t%s\n", formatTime(s.Oldest))
	fmt.Fprintf(tw, "newest created\t%s\n", formatTime(s.Newest))
	fmt.Fprintf(tw, "recorded steps\t%d\n", s.Steps)
	return tw.Flush()
}

// estimate marks a figure of stats that is the engine's estimate.
func estimate(estimated bool) string {
	if estimated {
		return " (estimate)"
	}
	return ""
}

func runInspect(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "inspect", "-db DSN [-scope S] -key K | -in-flight [-limit N] [-json]\n\n"+
		"Shows the record of -key in -scope; without -scope, the records of -key in every scope\n"+
		"(the whole table is read); with -in-flight, a line per record in flight, oldest first.\n"+
		"Scope, key and header values are quoted as Go strings, the body shown as text when it is\n"+
		"printable UTF-8. With -json, one JSON object for one record, an array for the others\n"+
		"(the body as a JSON string when it is UTF-8, else base64 in body_base64).")
	dsn := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	scope := fs.String("scope", "", "the record's scope (\"\" is the scope of records stored without one); unset: every scope")
	key := fs.String("key", "", "the record's idempotency key")
	inFlight := fs.Bool("in-flight", false, "list the records in flight instead")
	limit := fs.Int("limit", 100, "the most records listed by -in-flight or a search of every scope")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s%s", strings.Join(redactArgs(fs.Args()), " "), flagHint(fs.Args()))
	}
	scoped := false
	fs.Visit(func(f *flag.Flag) { scoped = scoped || f.Name == "scope" })
	switch {
	case *inFlight && (*key != "" || scoped):
		return usagef("-in-flight lists every record in flight: it takes no -key or -scope")
	case !*inFlight && *key == "":
		return usagef("-key (or -in-flight) is required")
	case *limit < 1:
		return usagef("-limit must be at least 1, got %d", *limit)
	}
	db, l, err := openLedger(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if *inFlight {
		rs, err := l.InFlight(ctx, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e.stdout, recordsJSON(rs))
		}
		if len(rs) == 0 {
			_, err := fmt.Fprintln(e.stdout, "no record in flight")
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scope\tkey\tfence\tcreated\tlease expires\tcommitted")
		for _, r := range rs {
			fmt.Fprintf(tw, "%q\t%q\t%d\t%s\t%s\t%s\n", r.Scope, r.Key, r.Fence, formatTime(r.CreatedAt),
				formatTime(r.LeaseExpiresAt), formatTime(r.CommittedAt))
		}
		return tw.Flush()
	}
	if !scoped {
		rs, err := l.Find(ctx, *key, *limit)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return fmt.Errorf("no record of key %q in any scope", *key)
		}
		if *asJSON {
			return writeJSON(e.stdout, recordsJSON(rs))
		}
		for i, r := range rs {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			if err := printRecord(e, r); err != nil {
				return err
			}
		}
		return printSteps(ctx, e, l, *key, nil)
	}
	r, err := l.Get(ctx, *scope, *key)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, newRecordJSON(r))
	}
	if err := printRecord(e, r); err != nil {
		return err
	}
	return printSteps(ctx, e, l, *key, scope)
}

// printSteps shows the recorded steps of key (in scope, when not nil),
// after its records, when there are any: a half-done operation's progress.
func printSteps(ctx context.Context, e *env, l interface {
	FindSteps(context.Context, string, int) ([]ledger.StepRecord, error)
}, key string, scope *string) error {
	steps, err := l.FindSteps(ctx, key, 1000)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	header := false
	for _, s := range steps {
		if scope != nil && s.Scope != *scope {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nsteps\nscope\tname\tfence\trecorded\tresult bytes")
			header = true
		}
		fmt.Fprintf(tw, "%q\t%q\t%d\t%s\t%d\n", s.Scope, s.Name, s.Fence, formatTime(s.CreatedAt), len(s.Result))
	}
	return tw.Flush()
}

// printRecord shows one record as inspect prints it.
func printRecord(e *env, r *ledger.Record) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scope\t%q\n", r.Scope)
	fmt.Fprintf(tw, "key\t%q\n", r.Key)
	fmt.Fprintf(tw, "state\t%s\n", r.State)
	fmt.Fprintf(tw, "fingerprint\t%s\n", r.Fingerprint)
	fmt.Fprintf(tw, "fence\t%d\n", r.Fence)
	fmt.Fprintf(tw, "created\t%s\n", formatTime(r.CreatedAt))
	if !r.CommittedAt.IsZero() {
		fmt.Fprintf(tw, "committed\t%s\n", formatTime(r.CommittedAt))
	}
	if r.State == ledger.StateInFlight {
		fmt.Fprintf(tw, "lease expires\t%s\n", formatTime(r.LeaseExpiresAt))
		// An in-flight record expires too (claim time plus the TTL, once
		// its lease has also run out): Purge deletes it then.
		fmt.Fprintf(tw, "expires\t%s\n", formatTime(r.ExpiresAt))
	} else {
		fmt.Fprintf(tw, "completed\t%s\n", formatTime(r.CompletedAt))
		fmt.Fprintf(tw, "expires\t%s\n", formatTime(r.ExpiresAt))
		if r.Outcome.Kind != "" {
			fmt.Fprintf(tw, "kind\t%s\n", r.Outcome.Kind)
		}
		fmt.Fprintf(tw, "status\t%d\n", r.Outcome.Status)
		for _, name := range sortedKeys(r.Outcome.Header) {
			for _, v := range r.Outcome.Header[name] {
				// Quoted, like scope and key: a value may hold bytes that
				// are not UTF-8 (obs-text) or control characters, which
				// must not reach the terminal as they are.
				fmt.Fprintf(tw, "header\t%s: %q\n", name, v)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.State != ledger.StateInFlight {
		_, err := fmt.Fprintf(e.stdout, "body\n%s\n", formatBody(r.Outcome.Body))
		return err
	}
	return nil
}

func sortedKeys(h map[string][]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// timeLayout is RFC 3339 with milliseconds, the ledger's resolution,
// always three digits so that times line up and compare as text
// (time.RFC3339Nano drops trailing zeros).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// formatBody shows a body as text when every rune is printable (or common
// whitespace), and as a byte count with a hex prefix otherwise, so that
// binary bodies never garble the terminal.
func formatBody(b []byte) string {
	if len(b) == 0 {
		return "(empty)"
	}
	printable := utf8.Valid(b)
	for _, r := range string(b) {
		if !printable {
			break
		}
		printable = unicode.IsPrint(r) || r == '\n' || r == '\r' || r == '\t'
	}
	if printable {
		return fmt.Sprintf("(%d bytes)\n%s", len(b), b)
	}
	const show = 32
	if len(b) > show {
		return fmt.Sprintf("%d bytes, binary: %x…", len(b), b[:show])
	}
	return fmt.Sprintf("%d bytes, binary: %x", len(b), b)
}
