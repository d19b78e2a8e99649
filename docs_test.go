package idemledger

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quoted is a Go block of a guide with the file it quotes named on the
// line above it: <!-- path/from/the/root.go -->.
var quoted = regexp.MustCompile("(?s)<!-- ([A-Za-z0-9_./-]+\\.go) -->\n```go\n(.*?)\n```")

// untab drops each line's leading tabs, so that a block may quote code
// from inside a function at a shallower indentation.
func untab(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// TestGuidesQuoteTheCode: every Go block of README.md and docs/*.md names
// the file it comes from (an Example, a test or a file under examples/),
// and appears in that file verbatim but for leading tabs, so that the
// guides compile and cannot drift from the code.
func TestGuidesQuoteTheCode(t *testing.T) {
	guides, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	guides = append([]string{"README.md"}, guides...)
	total := 0
	for _, g := range guides {
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		blocks := quoted.FindAllStringSubmatch(string(text), -1)
		all := strings.Count(string(text), "```go")
		if len(blocks) != all {
			t.Errorf("%s: %d of its %d Go blocks name their file on the line above", g, len(blocks), all)
		}
		total += len(blocks)
		for _, b := range blocks {
			src, err := os.ReadFile(filepath.FromSlash(b[1]))
			if err != nil {
				t.Errorf("%s quotes %s: %v", g, b[1], err)
				continue
			}
			if !strings.Contains(untab(string(src)), untab(b[2])) {
				first, _, _ := strings.Cut(b[2], "\n")
				t.Errorf("%s: the block from %s, which begins %q, is not in that file", g, b[1], first)
			}
		}
	}
	if total < 20 {
		t.Errorf("%d quoted Go blocks in README.md and docs/; want at least 20", total)
	}
}
