// Command idemledger demonstrates and administers an idemledger ledger.
//
// Usage:
//
//	idemledger demo    [-db FILE] [-n N] [-ttl DURATION]
//	idemledger canon   [-check] [-exact] [-strict] [FILE]
//	idemledger hash    [-request METHOD TARGET] [-type CONTENT-TYPE] [FILE]
//	idemledger migrate -db DSN [-force] [up|down|version]
//	idemledger purge   -db DSN [-batch N] [-timeout D] [-q]
//	idemledger reclaim -db DSN [-full]
//	idemledger stats   -db DSN [-json]
//	idemledger inspect -db DSN [-scope S] -key K | -in-flight [-limit N] [-json]
//	idemledger version
//
// Every subcommand takes -h ("idemledger help CMD" says the same). Without
// -db, the database is read from the environment variable IDEMLEDGER_DB,
// which keeps a password out of argv, ps and crontabs. A DSN is a URL
// whose scheme (in any case) selects the engine, or the path or file: URI
// of an SQLite file, the default; the -db flag's help lists the forms
// this build takes, and each engine's driver package says where the
// ledger's tables live. Connection strings in another syntax (key=value,
// a database package's own DSN) are refused. Messages show a DSN's password as xxxxx, also when its
// scheme is mistyped (anything shaped like user:password@).
//
// Exit codes: 0 on success, 1 when the work failed (bad input, a failed
// check, an unreachable database, a broken invariant in the demo), 2 on a
// usage error.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// exit codes
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// command is one subcommand: its name, a one-line summary, and its body.
// run returns an error to exit with 1; a *usageError exits with 2.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env carries the process's streams so that subcommands never touch the
// globals and stay testable.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// flagSet, when set (by tests), is given every flag set that
	// newFlagSet makes, with its usage text.
	flagSet func(fs *flag.FlagSet, usage string)
}

// usageError marks a mistake in the command line; main exits with 2.
// printed is set when the flag package has already told the user.
type usageError struct {
	msg     string
	printed bool
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func commands() []command {
	return []command{
		{"demo", "run an end-to-end demonstration on an SQLite file", runDemo},
		{"canon", "print the RFC 8785 canonical form of JSON", runCanon},
		{"hash", "print the SHA-256 digest of canonical JSON or a request fingerprint", runHash},
		{"migrate", "apply or roll back the ledger's schema", runMigrate},
		{"purge", "delete expired records in batches", runPurge},
		{"reclaim", "give the space of purged records back", runReclaim},
		{"stats", "count records by state", runStats},
		{"inspect", "show one record", runInspect},
		{"version", "print the build's version and the schema version it knows", runVersion},
	}
}

func main() {
	// SIGTERM (kill, timeout, systemd, container runtimes) stops a
	// command as Ctrl-C does: it ends its work, cleans up (the demo's
	// temporary directory) and reports (purge's count).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	// Whatever reaches stderr, from this package, the flag package or a
	// driver's error, has the passwords of the arguments blotted out.
	blotted := *e
	blotted.stderr = blotWriter{w: e.stderr, secrets: argSecrets(args)}
	e = &blotted
	if len(args) > 1 && args[0] == "help" {
		// "help CMD" is "CMD -h".
		if len(args) > 2 {
			fmt.Fprintf(e.stderr, "idemledger help: want one command, got %q\n", strings.Join(redactArgs(args[1:]), " "))
			return exitUsage
		}
		args = []string{args[1], "-h"}
	}
	if len(args) == 0 {
		printUsage(e.stderr)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		// Help asked for goes to stdout, for a pager; usage after a
		// mistake to stderr.
		printUsage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		var ue *usageError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, &ue) && ue.printed:
			return exitUsage
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "idemledger %s: %s (see 'idemledger %s -h')\n", c.name, ue.msg, c.name)
			return exitUsage
		default:
			fmt.Fprintf(e.stderr, "idemledger %s: %v\n", c.name, err)
			return exitFail
		}
	}
	fmt.Fprintf(e.stderr, "idemledger: unknown command %q\n", redactDSN(args[0]))
	printUsage(e.stderr)
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: idemledger <command> [flags] [args]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'idemledger <command> -h' or 'idemledger help <command>' for a command's flags.")
}

// newFlagSet returns a flag set whose errors come back to the caller (so
// that they exit with 2) and whose usage goes to stdout when -h asks for
// it, to stderr after a mistake (parseFlags).
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&usageOut{stdout: e.stdout, stderr: e.stderr})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: idemledger %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	if e.flagSet != nil {
		e.flagSet(fs, usage)
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors; -h gives
// flag.ErrHelp back so that the command exits with 0.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if out, ok := fs.Output().(*usageOut); ok {
		// -h asked for the usage: stdout, for a pager. A mistake: stderr,
		// beside the error.
		w := out.stderr
		if errors.Is(err, flag.ErrHelp) {
			w = out.stdout
		}
		out.WriteTo(w)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error(), printed: true}
	}
	return nil
}

// usageOut holds what the flag package prints while it parses, until
// parseFlags knows whether the usage was asked for (-h) or follows a
// mistake.
type usageOut struct {
	bytes.Buffer
	stdout, stderr io.Writer
}
