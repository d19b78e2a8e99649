package schema_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

const (
	freshDirEnv    = "IDEMLEDGER_TEST_FRESH_DIR"
	freshRoundsEnv = "IDEMLEDGER_TEST_FRESH_ROUNDS" // overrides freshRounds
	freshProcesses = 8
	freshRounds    = 20
)

// TestFreshFileAcrossProcesses starts 8 processes (this test binary run
// again, see TestFreshFileWorker) that open and migrate the same SQLite
// file, which does not exist yet, at the same instant, as replicas of a
// service started together do; and again on a new file, round after
// round. Every Open and Migrate must succeed, and leave the file clean at
// the latest version. Before Migrate held the write lock for its whole
// run, every run failed: 5 to 24 of its 160 worker rounds (21 to 41 under
// -race) with "Dirty database version 1", a migrator having read the
// version while another had it marked dirty. IDEMLEDGER_TEST_FRESH_ROUNDS
// sets another number of rounds.
//
// The workers start once and are then driven round by round through
// their stdin, so that they all reach the new file within microseconds
// of each other instead of after their (slow under -race) start-up.
func TestFreshFileAcrossProcesses(t *testing.T) {
	if os.Getenv(freshDirEnv) != "" {
		t.Skip("inside a worker process")
	}
	rounds := freshRounds
	if s := os.Getenv(freshRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", freshRoundsEnv, err)
		}
		rounds = n
	}
	dir := t.TempDir()
	workers := startFreshWorkers(t, dir)
	ctx := context.Background()

	failures := map[string]int{} // by error message
	failed := 0
	for r := range rounds {
		for _, w := range workers {
			if _, err := fmt.Fprintln(w.in, r); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range workers {
			if msg := w.reply(t, r); msg != "" {
				t.Errorf("round %d: %s", r, msg)
				failures[strings.ReplaceAll(msg, freshPath(dir, r), "<new file>")]++
				failed++
			}
		}
		if v, dirty, err := versionOf(ctx, freshPath(dir, r)); err != nil || v != 1 || dirty {
			t.Errorf("round %d: Version = %d, %v, %v; want 1, false, nil", r, v, dirty, err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d worker rounds failed:", failed, rounds*freshProcesses)
		for msg, n := range failures {
			t.Errorf("  %d × %s", n, msg)
		}
	}
}

type freshWorker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startFreshWorkers starts the worker processes, and stops them (by
// closing their stdin) when t ends.
func startFreshWorkers(t *testing.T, dir string) []freshWorker {
	var workers []freshWorker
	t.Cleanup(func() {
		for _, w := range workers {
			w.in.Close() // the worker exits at the end of its input
		}
		for _, w := range workers {
			if err := w.cmd.Wait(); err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	})
	for range freshProcesses {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFreshFileWorker$", "-test.count=1")
		cmd.Env = append(os.Environ(), freshDirEnv+"="+dir)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, freshWorker{cmd, in, bufio.NewScanner(out)})
	}
	return workers
}

// reply reads the worker's answer for round r: "" for success, else the
// error it met.
func (w freshWorker) reply(t *testing.T, r int) string {
	t.Helper()
	for w.out.Scan() {
		line, ok := strings.CutPrefix(w.out.Text(), "ROUND ")
		if !ok {
			continue // anything else the test binary prints
		}
		n, msg, _ := strings.Cut(line, " ")
		if n != strconv.Itoa(r) {
			t.Fatalf("worker answered %q in round %d", line, r)
		}
		if msg == "ok" {
			return ""
		}
		return msg
	}
	t.Fatalf("worker gone in round %d: %v", r, w.out.Err())
	return ""
}

func freshPath(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("r%d.db", round))
}

// versionOf opens path and reads its migration version.
func versionOf(ctx context.Context, path string) (version uint, dirty bool, err error) {
	db, err := sqlite.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer db.Close()
	return schema.Version(ctx, db)
}

// TestFreshFileWorker is the body of a worker process of
// TestFreshFileAcrossProcesses; it does nothing in a normal run. For each
// round number it reads on stdin, it opens and migrates that round's file
// and answers "ROUND n ok" or "ROUND n <error>" on stdout.
func TestFreshFileWorker(t *testing.T) {
	dir := os.Getenv(freshDirEnv)
	if dir == "" {
		t.Skip("only run as a worker of TestFreshFileAcrossProcesses")
	}
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r, err := strconv.Atoi(in.Text())
		if err != nil {
			t.Fatalf("round %q: %v", in.Text(), err)
		}
		msg := "ok"
		if err := openAndMigrate(ctx, freshPath(dir, r)); err != nil {
			msg = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		fmt.Printf("ROUND %d %s\n", r, msg)
	}
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
}

// openAndMigrate is what a service does at start-up.
func openAndMigrate(ctx context.Context, path string) error {
	db, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return schema.Migrate(ctx, db)
}
