package main

import (
	"bytes"
	"context"
	"errors"

	"github.com/idemledger/idemledger/canonical"
)

// errNotCanonical is returned by canon -check when the input is valid JSON
// whose bytes differ from its canonical form.
var errNotCanonical = errors.New("input is valid JSON but not in RFC 8785 canonical form")

func runCanon(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "canon", "[-check] [FILE]\n\nPrints the RFC 8785 canonical form of the JSON text in FILE (or standard input).")
	check := fs.Bool("check", false, "print nothing; exit 1 when the input is not already in canonical form")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	src, name, err := readInput(e, fs.Args())
	if err != nil {
		return err
	}
	out, err := canonical.Transform(src)
	if err != nil {
		return inputError(name, err)
	}
	if *check {
		if !bytes.Equal(out, src) {
			return inputError(name, errNotCanonical)
		}
		return nil
	}
	out = append(out, '\n')
	_, err = e.stdout.Write(out)
	return err
}
