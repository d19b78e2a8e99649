package main

import (
	"context"
	"fmt"

	"github.com/idemledger/idemledger/hash"
)

func runHash(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "hash", "[-request METHOD TARGET] [-type CONTENT-TYPE] [FILE]\n\n"+
		"Prints, in hex, the SHA-256 of the RFC 8785 canonical form of the JSON in FILE (or standard input),\n"+
		"or with -request the request fingerprint of hash.Request over method, target, content type and body.")
	method := fs.String("request", "", "fingerprint a request with this `METHOD`; the next argument is its TARGET (path with query)")
	ctype := fs.String("type", "", "the request's `CONTENT-TYPE` (with -request)")

	// The flag package stops at the first positional argument, and TARGET
	// is one, so parse again after taking it to allow "-request POST /x -type t".
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	var target string
	if *method != "" {
		if len(rest) == 0 {
			return usagef("-request needs METHOD and TARGET")
		}
		target, rest = rest[0], rest[1:]
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		rest = fs.Args()
	} else if *ctype != "" {
		return usagef("-type is only meaningful with -request")
	}
	body, name, err := readInput(e, rest)
	if err != nil {
		return err
	}
	var d hash.Digest
	if *method != "" {
		d = hash.Request(*method, target, *ctype, body)
	} else if d, err = hash.JSON(body); err != nil {
		return inputError(name, err)
	}
	_, err = fmt.Fprintln(e.stdout, d)
	return err
}
