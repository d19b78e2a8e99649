package main

import (
	"fmt"
	"io"
	"os"
)

// readInput reads the file named by the only positional argument, or
// standard input when there is none or it is "-". It returns the bytes and
// a name for messages.
func readInput(e *env, args []string) ([]byte, string, error) {
	switch len(args) {
	case 0:
		b, err := io.ReadAll(e.stdin)
		return b, "stdin", err
	case 1:
		if args[0] == "-" {
			b, err := io.ReadAll(e.stdin)
			return b, "stdin", err
		}
		b, err := os.ReadFile(args[0])
		return b, args[0], err
	default:
		return nil, "", usagef("want at most one FILE, got %d arguments", len(args))
	}
}

// inputError names the input in an error that came from parsing it.
func inputError(name string, err error) error {
	return fmt.Errorf("%s: %w", name, err)
}
