// Package rounds runs a test's worker processes (the test binary started
// again) in lockstep, for tests that need several OS processes to act on
// one file at the same instant: the workers start once, then each round
// number written to their stdin makes them all act at once, and each
// answers on stdout. Starting processes is slow, under -race especially;
// driving started ones through a pipe lines them up within microseconds.
// It is for tests only.
package rounds

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// DirEnv is the environment variable that hands the workers their
// directory; a test binary that finds it set is a worker.
const DirEnv = "IDEMLEDGER_TEST_ROUNDS_DIR"

// Workers are the worker processes of one test.
type Workers struct {
	ws []worker
}

type worker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// Start starts n copies of the test binary, each running only the test
// named workerTest with [DirEnv] set to dir, and stops them (by closing
// their stdin) when t ends. Their stderr goes to the test's.
func Start(t *testing.T, n int, workerTest, dir string) *Workers {
	t.Helper()
	w := &Workers{}
	t.Cleanup(func() {
		for _, p := range w.ws {
			p.in.Close() // a worker ends with its input
		}
		for _, p := range w.ws {
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	})
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^"+workerTest+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), DirEnv+"="+dir)
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
		w.ws = append(w.ws, worker{cmd, in, bufio.NewScanner(out)})
	}
	return w
}

// Round has every worker run round r at once and returns, per worker,
// "" for success or the error it met.
func (w *Workers) Round(t *testing.T, r int) []string {
	t.Helper()
	for _, p := range w.ws {
		if _, err := fmt.Fprintln(p.in, r); err != nil {
			t.Fatal(err)
		}
	}
	msgs := make([]string, len(w.ws))
	for i, p := range w.ws {
		msgs[i] = p.reply(t, r)
	}
	return msgs
}

// Run runs rounds 0 to n-1 (n is def, or the number in the environment
// variable env when it is set) and fails t for every worker round that
// failed, then once more with the failures counted by message, each
// message passed through normalize (say, to replace the round's file name)
// so that alike failures count together. after, when not nil, runs once
// each round is over, to check what the workers left.
func (w *Workers) Run(t *testing.T, env string, def int, normalize func(r int, msg string) string, after func(r int)) {
	t.Helper()
	n := def
	if s := os.Getenv(env); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s: %v", env, err)
		}
	}
	failures := map[string]int{}
	failed := 0
	for r := range n {
		for _, msg := range w.Round(t, r) {
			if msg != "" {
				t.Errorf("round %d: %s", r, msg)
				failures[normalize(r, msg)]++
				failed++
			}
		}
		if after != nil {
			after(r)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d worker rounds failed:", failed, n*len(w.ws))
		for msg, k := range failures {
			t.Errorf("  %d × %s", k, msg)
		}
	}
}

// reply reads the worker's answer for round r.
func (p worker) reply(t *testing.T, r int) string {
	t.Helper()
	for p.out.Scan() {
		line, ok := strings.CutPrefix(p.out.Text(), "ROUND ")
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
	t.Fatalf("worker gone in round %d: %v", r, p.out.Err())
	return ""
}

// Serve is the body of a worker: for each round number on stdin it calls
// do with the directory and the round, and answers "ROUND r ok" or "ROUND
// r <error>" on stdout, until stdin ends. Outside a worker ([DirEnv] unset)
// it skips t.
func Serve(t *testing.T, do func(dir string, r int) error) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		t.Skip("only run as a worker process")
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r, err := strconv.Atoi(in.Text())
		if err != nil {
			t.Fatalf("round %q: %v", in.Text(), err)
		}
		msg := "ok"
		if err := do(dir, r); err != nil {
			msg = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		fmt.Printf("ROUND %d %s\n", r, msg)
	}
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
}

// InWorker reports whether this process is a worker.
func InWorker() bool { return os.Getenv(DirEnv) != "" }
