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
	fs := newFlagSet(e, "canon", "[-check] [-exact] [-strict] [FILE]\n\nPrints the RFC 8785 canonical form of the JSON text in FILE (or standard input).")
	check := fs.Bool("check", false, "print nothing; exit 1 when the input is not already in canonical form (one final newline, as canon prints, is allowed)")
	exact := fs.Bool("exact", false, "refuse a number whose canonical form denotes another decimal value (9007199254740993 prints as ...992), as request fingerprints do")
	strict := fs.Bool("strict", false, "refuse Unicode noncharacters (U+FFFF, U+FDD0 and the like), as strict I-JSON (RFC 7493 section 2.1) does; by default they are kept, as V8 keeps them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	src, name, err := readInput(e, fs.Args())
	if err != nil {
		return err
	}
	out, err := canonical.Options{ExactNumbers: *exact, RefuseNoncharacters: *strict}.Transform(src)
	if err != nil {
		return inputError(name, err)
	}
	if *check {
		if !bytes.Equal(out, bytes.TrimSuffix(src, []byte("\n"))) {
			return inputError(name, errNotCanonical)
		}
		return nil
	}
	out = append(out, '\n')
	_, err = e.stdout.Write(out)
	return err
}
