package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idemledger/idemledger/sqlite"
)

// TestOpenRefusesNilOption: a nil Option is an error naming its place,
// not a panic, and nothing is created on disk.
func TestOpenRefusesNilOption(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	tests := []struct {
		name string
		opts []sqlite.Option
		want string
	}{
		{"only option", []sqlite.Option{nil}, `sqlite: open "` + path + `": opts[0] is a nil Option`},
		{"after a good one", []sqlite.Option{sqlite.WithMaxOpenConns(1), nil}, `sqlite: open "` + path + `": opts[1] is a nil Option`},
		{"before a bad one", []sqlite.Option{nil, sqlite.WithMaxOpenConns(0)}, `sqlite: open "` + path + `": opts[0] is a nil Option`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(path, tt.opts...)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if err.Error() != tt.want {
				t.Errorf("Open = %q, want %q", err, tt.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("Open with a nil Option touched %s: %v", path, err)
			}
		})
	}
}
