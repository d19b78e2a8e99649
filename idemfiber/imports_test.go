package idemfiber_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPublicAPIOnly: idemfiber is a transport a third party could have
// written: none of its own imports is an internal package, of idemledger
// or of anyone. (Its tests may use the main module's internal/testdb for
// their databases, as every integration module's tests do; the public
// packages it imports may use their own module's internal packages.)
func TestPublicAPIOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	var ours int
	for _, path := range imports {
		if strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
			t.Errorf("idemfiber imports %s, an internal package", path)
		}
		if strings.HasPrefix(path, "github.com/idemledger/idemledger/") {
			ours++
		}
	}
	// Guard the guard: an empty or failed listing would pass above.
	if ours < 3 {
		t.Errorf("go list found %d idemledger imports in %q, want lifecycle, ledger, idemhttp and hash", ours, imports)
	}
}
