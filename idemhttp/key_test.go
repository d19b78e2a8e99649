package idemhttp

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/ledger"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("k", 255)
	tests := []struct {
		name    string
		lines   []string // nil: no field at all
		rules   KeyRules
		want    string
		wantErr error // nil: success
	}{
		{"quoted", []string{`"abc-123"`}, KeyRules{}, "abc-123", nil},
		{"bare token", []string{`abc-123`}, KeyRules{}, "abc-123", nil},
		{"bare uuid starting with digits", []string{`8e03978e-40d5-43e8-bc93-6894a57f9324`}, KeyRules{}, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"quoted uuid", []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, KeyRules{}, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"bare integer", []string{`12345`}, KeyRules{}, "12345", nil},
		{"bare decimal keeps its text", []string{`1.50`}, KeyRules{}, "1.50", nil},
		{"outer whitespace trimmed", []string{" \t\"k\" \t"}, KeyRules{}, "k", nil},
		{"params on string ignored", []string{`"k";v=1`}, KeyRules{}, "k", nil},
		{"params on string ignored, strict", []string{`"k";v=1;w`}, KeyRules{Strict: true}, "k", nil},
		{"bare key is the whole value", []string{`k;v=1`}, KeyRules{}, "k;v=1", nil},
		{"bare batch;x", []string{`batch;x`}, KeyRules{}, "batch;x", nil},
		{"bare order-17;attempt=1", []string{`order-17;attempt=1`}, KeyRules{}, "order-17;attempt=1", nil},
		{"bare x;y=?1", []string{`x;y=?1`}, KeyRules{}, "x;y=?1", nil},
		{"bare a;b", []string{`a;b`}, KeyRules{}, "a;b", nil},
		{"quoted a;b, same key", []string{`"a;b"`}, KeyRules{}, "a;b", nil},
		{"semicolon not a parameter", []string{`a;1`}, KeyRules{}, "a;1", nil},
		{"bare display string kept whole", []string{`%"x;y"`}, KeyRules{}, `%"x;y"`, nil},
		{"bare byte sequence kept whole", []string{`:YWJj:;p`}, KeyRules{}, ":YWJj:;p", nil},
		{"escapes decoded", []string{`"a\"b\\c"`}, KeyRules{}, `a"b\c`, nil},
		{"space inside quotes", []string{`"a b"`}, KeyRules{}, "a b", nil},
		{"space in bare, as stripe-go sends it", []string{`order 42`}, KeyRules{}, "order 42", nil},
		{"bare spaces inside kept, outside trimmed", []string{"  a  b \t"}, KeyRules{}, "a  b", nil},
		{"bare with quote char", []string{`a"b`}, KeyRules{}, `a"b`, nil},
		{"stripe-like bare", []string{`KG5LxwFBepaKHyUD`}, KeyRules{}, "KG5LxwFBepaKHyUD", nil},
		{"255 bytes", []string{long}, KeyRules{}, long, nil},
		{"255 bytes quoted", []string{`"` + long + `"`}, KeyRules{}, long, nil},
		{"custom limit", []string{"abcd"}, KeyRules{MaxLength: 4}, "abcd", nil},

		{"missing", nil, KeyRules{}, "", ErrMissingKey},
		{"two lines", []string{`"a"`, `"a"`}, KeyRules{}, "", ErrInvalidKey},
		{"empty quoted", []string{`""`}, KeyRules{}, "", ErrInvalidKey},
		{"empty field", []string{``}, KeyRules{}, "", ErrInvalidKey},
		{"only spaces", []string{`   `}, KeyRules{}, "", ErrInvalidKey},
		{"256 bytes", []string{long + "k"}, KeyRules{}, "", ErrKeyTooLong},
		{"256 bytes quoted", []string{`"` + long + `k"`}, KeyRules{}, "", ErrKeyTooLong},
		{"over custom limit", []string{"abcde"}, KeyRules{MaxLength: 4}, "", ErrKeyTooLong},
		{"huge", []string{strings.Repeat("x", 100000)}, KeyRules{}, "", ErrKeyTooLong},
		{"unterminated quote", []string{`"abc`}, KeyRules{}, "", ErrInvalidKey},
		{"bad escape", []string{`"a\b"`}, KeyRules{}, "", ErrInvalidKey},
		{"control in quotes", []string{"\"a\x01b\""}, KeyRules{}, "", ErrInvalidKey},
		{"tab in bare", []string{"a\tb"}, KeyRules{}, "", ErrInvalidKey},
		{"non-ASCII bare", []string{"caf\xc3\xa9"}, KeyRules{}, "", ErrInvalidKey},
		{"non-ASCII quoted", []string{"\"caf\xc3\xa9\""}, KeyRules{}, "", ErrInvalidKey},
		{"DEL", []string{"a\x7fb"}, KeyRules{}, "", ErrInvalidKey},
		{"comma-joined list", []string{`a, b`}, KeyRules{}, "", ErrInvalidKey},
		{"quoted list", []string{`"a", "b"`}, KeyRules{}, "", ErrInvalidKey},
		{"bare comma", []string{`a,b`}, KeyRules{}, "", ErrInvalidKey},
		{"bare in strict", []string{`abc`}, KeyRules{Strict: true}, "", ErrInvalidKey},
		{"integer in strict", []string{`123`}, KeyRules{Strict: true}, "", ErrInvalidKey},
		{"garbage after string", []string{`"a"b`}, KeyRules{}, "", ErrInvalidKey},
		{"bare with a space after ; is the whole value", []string{`123; v=2`}, KeyRules{}, "123; v=2", nil},
		{"token with params in strict", []string{`k;v=1`}, KeyRules{Strict: true}, "", ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, l := range tt.lines {
				h.Add(HeaderName, l)
			}
			got, err := ParseKey(h, tt.rules)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseKey(%q) error = %v, want %v", tt.lines, err, tt.wantErr)
				}
				if errors.Is(tt.wantErr, ErrKeyTooLong) && !errors.Is(err, ErrInvalidKey) {
					t.Fatalf("too-long error %v does not wrap ErrInvalidKey", err)
				}
				if got != "" {
					t.Fatalf("ParseKey(%q) = %q with an error", tt.lines, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q", tt.lines, got, err, tt.want)
			}
		})
	}
}

// The error text may reach logs: it must not carry the key.
func TestParseKeyErrorOmitsKey(t *testing.T) {
	secret := "SECRETKEY" + strings.Repeat("z", 300)
	for _, v := range []string{secret, `"` + secret + `"`, secret + "\x01", `"` + secret} {
		h := http.Header{HeaderName: {v}}
		_, err := ParseKey(h, KeyRules{})
		if err == nil {
			t.Fatalf("ParseKey(%.20q...) succeeded", v)
		}
		if strings.Contains(err.Error(), "SECRETKEY") {
			t.Fatalf("error %q carries the key", err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		`"abc"`, `abc`, `"a\"b"`, `""`, `"k";v=1`, `k;v=1`, `12;a`, `%"x;y"`,
		`:YWJj:`, `?1`, `@123`, `"abc`, "a\tb", `a, b`, `1.5`, `*tok/en`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, v string, strict bool) {
		key, err := ParseKey(http.Header{HeaderName: {v}}, KeyRules{Strict: strict})
		if err != nil {
			if key != "" {
				t.Fatalf("key %q returned with error %v", key, err)
			}
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		if key == "" || len(key) > ledger.DefaultMaxKeyLength {
			t.Fatalf("accepted key of %d bytes", len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted byte 0x%02x", key[i])
			}
		}
		// Every accepted key survives SetKey and reads back the same, in
		// strict mode too: the quoted form is canonical.
		h := http.Header{}
		if err := SetKey(h, key); err != nil {
			t.Fatalf("SetKey(%q): %v", key, err)
		}
		back, err := ParseKey(h, KeyRules{Strict: true})
		if err != nil || back != key {
			t.Fatalf("round trip of %q gave %q, %v", key, back, err)
		}
	})
}
