package token

import "testing"

func TestValid(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"POST", true},
		{"M-SEARCH", true},
		{"Idempotent-Replayed", true},
		{"!#$%&'*+-.^_`|~09azAZ", true},
		{"", false},
		{"bad header", false},
		{"a:b", false},
		{"a\tb", false},
		{"\"q\"", false},
		{"caf\u00e9", false},
		{"(x)", false},
		{"a,b", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.s); got != tt.want {
			t.Errorf("Valid(%q) = %t, want %t", tt.s, got, tt.want)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add("POST")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, s string) {
		if !Valid(s) {
			return
		}
		for _, c := range []byte(s) {
			if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ':' || c == '(' || c == ')' {
				t.Fatalf("Valid(%q) with byte %q", s, c)
			}
		}
	})
}
