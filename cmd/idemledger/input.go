package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
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
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// A DSN given here by mistake is quoted without its password.
			pe.Path = redactDSN(pe.Path)
		}
		return b, redactDSN(args[0]), err
	default:
		return nil, "", usagef("want at most one FILE, got %d arguments%s", len(args), flagHint(args))
	}
}

// inputError names the input in an error that came from parsing it.
func inputError(name string, err error) error {
	return fmt.Errorf("%s: %w", name, err)
}

// flagHint explains a common slip: the flag package stops at the first
// argument that is not a flag, so flags written after it are arguments.
func flagHint(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return " (flags go before arguments: " + redactDSN(a) + " was read as an argument)"
		}
	}
	return ""
}
