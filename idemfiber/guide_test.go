package idemfiber_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// excerpt is a quoted block of docs/transport.md: the file it names on
// the line above it, and its code.
var excerpt = regexp.MustCompile("(?s)<!-- (idemfiber/[a-z_]+\\.go) -->\n```go\n(.*?)\n```")

// TestGuideQuotesTheCode: every Go block of docs/transport.md ("Writing a
// transport") is a verbatim piece of the file of this package that it
// names, so the guide cannot drift from the code it walks through.
func TestGuideQuotesTheCode(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "docs", "transport.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := excerpt.FindAllStringSubmatch(string(guide), -1)
	if all := strings.Count(string(guide), "```go"); len(blocks) != all || all < 5 {
		t.Fatalf("%d of the guide's %d Go blocks name their file; want all, and at least 5", len(blocks), all)
	}
	for _, b := range blocks {
		src, err := os.ReadFile(filepath.Join("..", b[1]))
		if err != nil {
			t.Errorf("the guide quotes %s: %v", b[1], err)
			continue
		}
		if !strings.Contains(string(src), b[2]) {
			first, _, _ := strings.Cut(b[2], "\n")
			t.Errorf("the guide's block from %s, which begins %q, is not in that file", b[1], first)
		}
	}
}
