//go:build unix

package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemledger/idemledger/sqlite"
)

// TestSIGTERM: SIGTERM (kill's default, and what timeout, systemd,
// docker and Kubernetes send) stops a command as Ctrl-C does: the demo
// removes its temporary directory, and purge says how many records it
// deleted. Each command is signalled once it has printed its first line,
// well before it would end on its own.
func TestSIGTERM(t *testing.T) {
	t.Run("demo", func(t *testing.T) {
		tmp := t.TempDir()
		r := signalled(t, []string{"TMPDIR=" + tmp}, "stdout", "idemledger demo: database", "demo")
		r.want(t, 1)
		if !strings.Contains(r.stderr, "idemledger demo: interrupted") {
			t.Errorf("stderr %q", r.stderr)
		}
		if strings.Contains(r.stdout, " NO\n") {
			t.Errorf("the interrupted demo judged a step:\n%s", r.stdout)
		}
		if names := dirNames(t, tmp); len(names) != 0 {
			t.Errorf("the demo left %q in its temporary directory %s", names, tmp)
		}
	})
	t.Run("purge", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.db")
		idemledger(t, "", "migrate", "-db", path).want(t, 0)
		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// Far more expired rows than purge deletes before the signal: a
		// row per batch, each its own transaction, takes the purge longer
		// than this test takes to write them all (written here, in key
		// order, through a driver built with -race).
		_, err = db.Exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000)
			INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, created_at, completed_at, expires_at)
			SELECT 's', printf('%06d', i), zeroblob(32), 'completed', 1, 200, 1, 1, 2 FROM c`)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := signalled(t, nil, "stderr", "purged 10 records so far", "purge", "-db", path, "-batch", "1")
		r.want(t, 1)
		if r.stdout != "" || !strings.Contains(r.stderr, "idemledger purge: after ") || !strings.Contains(r.stderr, "context canceled") {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
}

// signalled runs the binary with args and the extra environment env,
// sends it SIGTERM once stream ("stdout" or "stderr") has a line that
// starts with first, and returns what it did. A process killed by the
// signal has the exit code -1.
func signalled(t *testing.T, env []string, stream, first string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	var pipe io.ReadCloser
	var err error
	if stream == "stdout" {
		pipe, err = cmd.StdoutPipe()
		cmd.Stderr = &stderr
	} else {
		pipe, err = cmd.StderrPipe()
		cmd.Stdout = &stdout
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var seen bytes.Buffer
	sent := false
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if !sent && strings.HasPrefix(sc.Text(), first) {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	if stream == "stdout" {
		stdout = seen
	} else {
		stderr = seen
	}
	if !sent {
		t.Fatalf("%q printed no line starting with %q on %s:\nstdout %q\nstderr %q", args, first, stream, stdout.String(), stderr.String())
	}
	return exited(t, args, err, stdout.String(), stderr.String())
}
