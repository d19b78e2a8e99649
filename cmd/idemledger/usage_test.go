package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestUsageLinesListEveryFlag: the usage line of each subcommand (its -h,
// the package documentation and the command-line guide, docs/operations.md) names
// every flag its flag set defines, and no other. The flag names come from
// the flag sets themselves, so a new flag without a usage entry fails.
func TestUsageLinesListEveryFlag(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	docLines := lineOf(regexp.MustCompile(`(?m)^//\tidemledger (\w+) +(.*)$`), string(src))
	readmeLines := lineOf(regexp.MustCompile("(?m)^go run ./cmd/idemledger (\\w+) (.*?)(?: +#.*)?$"), string(readme))
	flagToken := regexp.MustCompile(`(?:^|[\s\[])-([a-z]+(?:-[a-z]+)*)\b`)

	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var (
				fs    *flag.FlagSet
				usage string
				out   bytes.Buffer
			)
			e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out,
				flagSet: func(f *flag.FlagSet, u string) { fs, usage = f, u }}
			if code := run(context.Background(), e, []string{c.name, "-h"}); code != exitOK || fs == nil {
				t.Fatalf("%s -h: exit code %d, flag set %v; output:\n%s", c.name, code, fs, out.String())
			}
			var defined []string
			fs.VisitAll(func(f *flag.Flag) { defined = append(defined, f.Name) })
			slices.Sort(defined)
			line, _, _ := strings.Cut(usage, "\n")
			if len(defined) == 0 && line != "" {
				t.Fatalf("%s defines no flags, but its usage line is %q", c.name, line)
			}
			for _, where := range []struct{ name, line string }{
				{"-h", line},
				{"the package documentation", docLines[c.name]},
				{"docs/operations.md", readmeLines[c.name]},
			} {
				var listed []string
				for _, m := range flagToken.FindAllStringSubmatch(where.line, -1) {
					listed = append(listed, m[1])
				}
				slices.Sort(listed)
				listed = slices.Compact(listed)
				if !slices.Equal(listed, defined) {
					t.Errorf("%s's usage line in %s, %q, lists the flags %q; its flag set defines %q", c.name, where.name, where.line, listed, defined)
				}
			}
			if doc := strings.Join(strings.Fields(docLines[c.name]), " "); doc != line {
				t.Errorf("%s: the package documentation says %q, -h says %q", c.name, doc, line)
			}
		})
	}
}

// lineOf maps the first group of each match of re in s (a command's name)
// to its second (the rest of its usage line).
func lineOf(re *regexp.Regexp, s string) map[string]string {
	m := map[string]string{}
	for _, g := range re.FindAllStringSubmatch(s, -1) {
		m[g[1]] = g[2]
	}
	return m
}
