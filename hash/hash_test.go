package hash

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/canonical"
)

// Goldens below were computed with sha256sum, not with this package:
//
//	printf '{"a":1,"b":2}' | sha256sum
//	sha256sum ../canonical/testdata/jcs/output/values.json
//	printf '{"id":7,"tags":["x"]}' | sha256sum

func TestJSON(t *testing.T) {
	values, err := os.ReadFile("../canonical/testdata/jcs/input/values.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, want string
	}{
		{"reordered", `{ "b": 2, "a": 1.0 }`, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"},
		{"canonical", `{"a":1,"b":2}`, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"},
		{"RFC 8785 example", string(values), "2d5e01a318d0f0879ab568c4be289c8b1f64ef8921a53c6277d5e069978baacb"},
	}
	for _, tt := range tests {
		got, err := JSON([]byte(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.String() != tt.want {
			t.Errorf("%s: JSON = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestLongNumbers checks that a number written with more than 800 digits
// hashes as the value it denotes: 1 followed by 800 zeros and e-800 is 1,
// and strconv.ParseFloat (golang/go#42436) used to read it as 0.1.
func TestLongNumbers(t *testing.T) {
	long := "1" + strings.Repeat("0", 800) + "e-800"
	one, _ := JSON([]byte(`{"amount":1}`))
	tenth, _ := JSON([]byte(`{"amount":0.1}`))
	got, err := JSON([]byte(`{"amount":` + long + `}`))
	if err != nil || got != one || got == tenth {
		t.Errorf("JSON of amount %.12s…e-800 = %s, %v; want %s (amount 1), not %s (amount 0.1)", long, got, err, one, tenth)
	}
	oneValue, _ := Value(map[string]any{"amount": 1})
	got, err = Value(map[string]any{"amount": json.Number(long)})
	if err != nil || got != oneValue {
		t.Errorf("Value of json.Number %.12s…e-800 = %s, %v; want %s (amount 1)", long, got, err, oneValue)
	}
}

func TestJSONErrors(t *testing.T) {
	d, err := JSON([]byte(`{"a":1,"a":2}`))
	var se *canonical.SyntaxError
	if !errors.Is(err, canonical.ErrDuplicateName) || !errors.As(err, &se) || se.Offset != 7 {
		t.Errorf("duplicate: %v", err)
	}
	if !d.IsZero() {
		t.Errorf("digest %s alongside an error", d)
	}
	if !strings.HasPrefix(err.Error(), "hash: json: ") {
		t.Errorf("error %q lacks the hash: json: prefix", err)
	}
	if _, err := JSON(nil); !errors.Is(err, canonical.ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}

func TestValue(t *testing.T) {
	type doc struct {
		Tags []string `json:"tags"`
		ID   int      `json:"id"`
	}
	got, err := Value(doc{ID: 7, Tags: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "d03f8079a39ccb81b99531ca2fb650c93beeabbf61cd691ee4701f005d377db3"; got.String() != want {
		t.Errorf("Value = %s, want %s", got, want)
	}
	viaMap, _ := Value(map[string]any{"tags": []string{"x"}, "id": 7})
	if viaMap != got {
		t.Errorf("map and struct of one value differ: %s, %s", viaMap, got)
	}
	if _, err := Value(func() {}); err == nil || !strings.HasPrefix(err.Error(), "hash: value: ") {
		t.Errorf("Value(func) = %v, want a hash: value: error", err)
	}
}

func TestDigestText(t *testing.T) {
	d := Bytes(nil)
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if d.String() != empty {
		t.Fatalf("Bytes(nil) = %s, want %s", d, empty)
	}
	got, err := ParseDigest(strings.ToUpper(empty))
	if err != nil || got != d {
		t.Errorf("ParseDigest upper case = %s, %v", got, err)
	}
	for _, bad := range []string{"", empty[:63], empty + "0", "g" + empty[1:]} {
		if _, err := ParseDigest(bad); !errors.Is(err, ErrInvalidDigest) {
			t.Errorf("ParseDigest(%q) = %v, want ErrInvalidDigest", bad, err)
		}
	}
}

// TestJSONIsNoFingerprint pins what JSON's doc warns of: two amounts that
// binary64 cannot tell apart share JSON's digest (RFC 8785's form of both
// is 9007199254740992), while Request and Bytes keep them apart.
func TestJSONIsNoFingerprint(t *testing.T) {
	a, b := []byte(`{"amount":9007199254740993}`), []byte(`{"amount":9007199254740992}`)
	ja, erra := JSON(a)
	jb, errb := JSON(b)
	if erra != nil || errb != nil || ja != jb {
		t.Errorf("JSON: %s, %v and %s, %v; want one digest", ja, erra, jb, errb)
	}
	if Request("POST", "/p", "application/json", a) == Request("POST", "/p", "application/json", b) {
		t.Error("Request gives both amounts one fingerprint")
	}
	if Bytes(a) == Bytes(b) {
		t.Error("Bytes gives both amounts one digest")
	}
}
