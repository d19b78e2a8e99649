//go:build unix

package testdb

import (
	"errors"
	"syscall"
)

// running reports whether a process with this id runs on the machine.
func running(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
