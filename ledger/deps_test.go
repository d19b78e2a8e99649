package ledger_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoDriver: the core links no database package; a program that
// uses one engine links only that engine's driver and migration driver; a
// program that only uses the client links no database at all.
func TestLinksNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{"github.com/idemledger/idemledger/ledger", []string{"modernc.org/sqlite", "github.com/jackc/pgx/v5", "github.com/golang-migrate/"}},
		// The boundary links no migration library: migrations are package
		// schema's (schema.Migration).
		{"github.com/idemledger/idemledger/driver", []string{"modernc.org/sqlite", "github.com/jackc/pgx/v5", "github.com/golang-migrate/"}},
		{"github.com/idemledger/idemledger/sqlite", []string{"github.com/jackc/pgx/v5", "github.com/golang-migrate/migrate/v4/database/pgx"}},
		{"github.com/idemledger/idemledger/postgres", []string{"modernc.org/sqlite", "github.com/golang-migrate/migrate/v4/database/sqlite"}},
		{"github.com/idemledger/idemledger/pgxv5", []string{"modernc.org/sqlite", "github.com/golang-migrate/migrate/v4/database/sqlite"}},
		{"github.com/idemledger/idemledger/schema", []string{"modernc.org/sqlite", "github.com/jackc/pgx/v5"}},
		// The client stands alone: no ledger, no driver, no database, no
		// migration library.
		{"github.com/idemledger/idemledger/idemclient", []string{"github.com/idemledger/idemledger/ledger",
			"github.com/idemledger/idemledger/driver", "modernc.org/sqlite", "github.com/jackc/pgx/v5",
			"github.com/golang-migrate/"}},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tt.forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s", tt.pkg, dep)
				}
			}
		}
	}
}
