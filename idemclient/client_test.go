package idemclient

import (
	"errors"
	"net/http"
	"regexp"
	"testing"
	"testing/iotest"

	"github.com/google/uuid"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewKey(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		k, err := NewKey()
		if err != nil {
			t.Fatal(err)
		}
		if !uuidV4.MatchString(k) {
			t.Fatalf("NewKey() = %q, not a UUID v4", k)
		}
		if seen[k] {
			t.Fatalf("NewKey() repeated %q", k)
		}
		seen[k] = true
	}
	if k := GenerateKey(); !uuidV4.MatchString(k) {
		t.Fatalf("GenerateKey() = %q, not a UUID v4", k)
	}
}

// A failing random source is an error, never a weaker key. uuid.SetRand is
// global, so this test does not run in parallel with others.
func TestNewKeyNoRandomness(t *testing.T) {
	uuid.SetRand(iotest.ErrReader(errors.New("entropy pool on fire")))
	defer uuid.SetRand(nil)
	k, err := NewKey()
	if !errors.Is(err, ErrNoRandomness) || k != "" {
		t.Fatalf("NewKey() = %q, %v; want ErrNoRandomness", k, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("GenerateKey did not panic without randomness")
		}
	}()
	GenerateKey()
}

func TestSetKey(t *testing.T) {
	tests := []struct {
		key  string
		want string // "" means an error
	}{
		{"abc", `"abc"`},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"a b", `"a b"`},
		{"", ""},
		{"a\nb", ""},
		{"caf\xc3\xa9", ""},
	}
	for _, tt := range tests {
		h := http.Header{HeaderName: {"old"}}
		err := SetKey(h, tt.key)
		if tt.want == "" {
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("SetKey(%q) error = %v, want ErrInvalidKey", tt.key, err)
			}
			if got := h.Values(HeaderName); len(got) != 1 || got[0] != "old" {
				t.Errorf("SetKey(%q) changed the header on error: %q", tt.key, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("SetKey(%q): %v", tt.key, err)
			continue
		}
		if got := h.Values(HeaderName); len(got) != 1 || got[0] != tt.want {
			t.Errorf("SetKey(%q) wrote %q, want [%q]", tt.key, got, tt.want)
		}
	}
}
