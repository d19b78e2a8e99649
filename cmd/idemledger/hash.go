package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/token"
)

func runHash(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "hash", "[-request METHOD TARGET] [-type CONTENT-TYPE] [FILE]\n\n"+
		"Prints, in hex, the SHA-256 of the RFC 8785 canonical form of the JSON in FILE (or standard input),\n"+
		"or with -request the request fingerprint of hash.Request over method, target, content type and body.\n"+
		"With -request, a TARGET that names a file needs FILE after it (- for standard input).")
	method := fs.String("request", "", "fingerprint a request with this `METHOD`; the next argument is its TARGET: the path, starting with '/', and query, or *")
	ctype := fs.String("type", "", "the request's `CONTENT-TYPE` (with -request)")

	// The flag package stops at the first positional argument, and TARGET
	// is one, so parse again after taking it to allow "-request POST /x -type t".
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	request := false
	fs.Visit(func(f *flag.Flag) { request = request || f.Name == "request" })
	rest := fs.Args()
	var target string
	if request {
		if *method == "" || len(rest) == 0 {
			return usagef("-request needs METHOD and TARGET")
		}
		if !token.Valid(*method) {
			return usagef("METHOD %q is not an HTTP method (an RFC 9110 token)", *method)
		}
		target, rest = rest[0], rest[1:]
		if err := checkTarget(target); err != nil {
			return err
		}
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			// "hash -request POST -type t body.json" takes body.json for
			// the TARGET: when a TARGET names a file and no FILE follows,
			// the body from standard input must be asked for with "-".
			if st, err := os.Stat(target); err == nil && st.Mode().IsRegular() {
				return usagef("TARGET %q names a file, and FILE is missing: give FILE, or - for standard input (hash -request METHOD TARGET FILE)", redactDSN(target))
			}
		}
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

// checkTarget accepts the request targets that a fingerprint is computed
// over on the server (http.Request.URL.RequestURI): a path starting with
// '/', with its query, or "*" (OPTIONS *). Spaces and control characters
// never appear in one; they are percent-encoded.
func checkTarget(target string) error {
	if target != "*" && !strings.HasPrefix(target, "/") {
		return usagef("TARGET %q is not a request target: want a path starting with '/' (and its query), or *", redactDSN(target))
	}
	for i := 0; i < len(target); i++ {
		if target[i] <= ' ' || target[i] == 0x7f {
			return usagef("TARGET %q is not a request target: it holds a space or control character (percent-encode it)", redactDSN(target))
		}
	}
	return nil
}
