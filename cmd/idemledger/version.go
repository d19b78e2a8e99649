package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/idemledger/idemledger/schema"
)

func runVersion(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", "\n\nPrints the build's module version, its Go version and VCS revision, and the\nlatest schema version this build knows (see 'idemledger migrate version').")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %s", strings.Join(redactArgs(fs.Args()), " "))
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		// Only a binary built without module support lacks it.
		fmt.Fprintf(e.stdout, "idemledger (no build information)\nschema %d\n", schema.Latest)
		return nil
	}
	fmt.Fprintln(e.stdout, versionLine(info))
	fmt.Fprintf(e.stdout, "schema %d\n", schema.Latest)
	return nil
}

// versionLine is "idemledger VERSION GOVERSION" followed by the VCS
// revision, its time and "+dirty" when the build recorded them (go build
// in a checkout does; go install of a tagged module gives its version).
func versionLine(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	line := "idemledger " + v + " " + info.GoVersion
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		line += " " + rev
		if at != "" {
			line += " " + at
		}
		if dirty {
			line += " +dirty"
		}
	}
	return line
}
