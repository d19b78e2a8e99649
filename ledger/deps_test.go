package ledger_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/idemledger/idemledger"

// TestLinksNoDriver: the core links no database package; a program that
// uses one engine links only that engine's driver and migration driver; a
// program that only uses the client links no database at all. The drivers
// are found, not listed: the module's packages outside internal/ and cmd/
// that import both package driver and package schema. A driver's database
// modules are the modules of its direct imports from outside the module
// (golang-migrate, which every driver uses for its migrations, aside); two
// drivers that share it are of the same engine (postgres and pgxv5 share
// pgx), and each has exactly one.
func TestLinksNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const migrate = "github.com/golang-migrate/"
	type drv struct {
		pkg string
		// dbModules are the driver's database modules; migrations its
		// direct imports of golang-migrate's database drivers.
		dbModules, migrations []string
	}
	var drivers []drv
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.Contains(f[0], "/internal/") || strings.Contains(f[0], "/cmd/") ||
			!slices.Contains(f[1:], module+"/driver") || !slices.Contains(f[1:], module+"/schema") {
			continue
		}
		d := drv{pkg: f[0]}
		for _, line := range goList(t, append([]string{"-f", "{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{end}}"}, f[1:]...)...) {
			imp, mod, _ := strings.Cut(line, " ")
			switch {
			case mod == "" || mod == module:
			case strings.HasPrefix(imp, migrate+"migrate/v4/database/"):
				d.migrations = append(d.migrations, imp)
			case !strings.HasPrefix(mod, migrate) && !slices.Contains(d.dbModules, mod):
				d.dbModules = append(d.dbModules, mod)
			}
		}
		if len(d.dbModules) != 1 {
			// A driver is over one database package; one that imported
			// another engine's would pass for that engine's kin below.
			t.Errorf("driver %s imports the database modules %q; want one", d.pkg, d.dbModules)
		}
		drivers = append(drivers, d)
		t.Logf("driver %s: database modules %q, migration drivers %q", d.pkg, d.dbModules, d.migrations)
	}
	if len(drivers) < 2 {
		t.Fatalf("found %d driver packages; want every engine's", len(drivers))
	}
	var allDB []string
	for _, d := range drivers {
		allDB = append(allDB, d.dbModules...)
	}
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{module + "/ledger", append([]string{migrate}, allDB...)},
		// The boundary links no migration library: migrations are package
		// schema's (schema.Migration).
		{module + "/driver", append([]string{migrate}, allDB...)},
		{module + "/schema", allDB},
		// The client stands alone: no ledger, no driver, no database, no
		// migration library.
		{module + "/idemclient", append([]string{module + "/ledger", module + "/driver", migrate}, allDB...)},
	}
	for _, d := range drivers {
		var forbidden []string
		for _, e := range drivers {
			if !slices.ContainsFunc(e.dbModules, func(m string) bool { return slices.Contains(d.dbModules, m) }) {
				forbidden = append(forbidden, e.dbModules...)
				forbidden = append(forbidden, e.migrations...)
			}
		}
		tests = append(tests, struct {
			pkg       string
			forbidden []string
		}{d.pkg, forbidden})
	}
	for _, tt := range tests {
		for _, dep := range goList(t, "-deps", tt.pkg) {
			for _, f := range tt.forbidden {
				if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
					t.Errorf("%s links %s", tt.pkg, dep)
				}
			}
		}
	}
}

// goList runs go list with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
