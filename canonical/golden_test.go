package canonical

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGoldenJCS checks the reference implementation's vectors (copied from
// cyberphone/json-canonicalization into testdata/jcs) byte for byte.
func TestGoldenJCS(t *testing.T) {
	names, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range names {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src := readFile(t, in)
			want := readFile(t, filepath.Join("testdata/jcs/output", name))
			got, err := Transform(src)
			if err != nil {
				t.Fatalf("Transform: %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestRFC8785Examples checks the sorting example of RFC 8785 section 3.2.3
// and the whole-transformation example of section 3.2.4 (whose string shows
// the escaping rules of section 3.2.2.2).
func TestRFC8785Examples(t *testing.T) {
	for _, name := range []string{"sorting", "example"} {
		t.Run(name, func(t *testing.T) {
			src := readFile(t, "testdata/rfc8785/"+name+".in.json")
			want := readFile(t, "testdata/rfc8785/"+name+".out.json")
			got, err := Transform(src)
			if err != nil {
				t.Fatalf("Transform: %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestFormatFloatAppendixB checks the number table of RFC 8785 Appendix B,
// both through FormatFloat and through Transform of the value's
// 17-significant-digit spelling.
func TestFormatFloatAppendixB(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(readFile(t, "testdata/rfc8785/numbers.txt"))), "\n")
	n := 0
	for _, line := range lines {
		if strings.HasPrefix(line, "#") {
			continue
		}
		hexBits, want, _ := strings.Cut(line, ",")
		f := fromHex(t, hexBits)
		got, err := FormatFloat(f)
		if want == "error" {
			if err != ErrNonFinite {
				t.Errorf("%s: FormatFloat = %q, %v; want ErrNonFinite", hexBits, got, err)
			}
			continue
		}
		n++
		if err != nil || got != want {
			t.Errorf("%s: FormatFloat = %q, %v; want %q", hexBits, got, err, want)
		}
		in := strconv.FormatFloat(f, 'e', 16, 64)
		out, err := Transform([]byte(in))
		if err != nil || string(out) != want {
			t.Errorf("Transform(%s) = %s, %v; want %s", in, out, err, want)
		}
	}
	if n != 24 {
		t.Fatalf("read %d finite vectors, want 24", n)
	}
}

// es6Full is the reference implementation's million-line number file, read
// from the shared checkout when it is there (it is too large to commit).
const es6Full = "../../shared/testdata/jcs/es6testfile1m.txt.gz"

// es6FullSHA256 is the published SHA-256 of the uncompressed file.
const es6FullSHA256 = "49415fee2c56c77864931bd3624faad425c3c577d6d74e89a83bc725506dad16"

// TestFormatFloatES6 compares FormatFloat with the reference ES6 number
// file: the committed sample (every 100th line) always, and the full million
// lines when the shared file exists.
func TestFormatFloatES6(t *testing.T) {
	// Sample lines quoted in testdata/jcs/README of the shared vectors.
	for _, c := range []struct{ hex, want string }{
		{"4340000000000001", "9007199254740994"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"8000000000000000", "0"},
	} {
		if got, err := FormatFloat(fromHex(t, c.hex)); err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.hex, got, err, c.want)
		}
	}
	if n := checkES6File(t, "testdata/jcs/es6sample10k.txt.gz", ""); n != 10000 {
		t.Errorf("sample: checked %d lines, want 10000", n)
	}
	if _, err := os.Stat(es6Full); err != nil {
		t.Logf("full ES6 number file not checked: %s is not present (%v); the committed 10,000-line sample was used", es6Full, err)
		return
	}
	if n := checkES6File(t, es6Full, es6FullSHA256); n != 1000000 {
		t.Errorf("full file: checked %d lines, want 1000000", n)
	}
}

// checkES6File compares every "hex,expected" line of a gzip file with
// FormatFloat and returns the number of lines checked. A non-empty sum is
// the required SHA-256 of the uncompressed content.
func checkES6File(t *testing.T, name, sum string) int {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(zr, h))
	n, bad := 0, 0
	for sc.Scan() {
		line := sc.Text()
		hexBits, want, ok := strings.Cut(line, ",")
		if !ok {
			t.Fatalf("%s: malformed line %q", name, line)
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("%s: line %q: %v", name, line, err)
		}
		got, err := FormatFloat(math.Float64frombits(bits))
		if err != nil || got != want {
			if bad++; bad <= 10 {
				t.Errorf("%s: %s: got %q, %v; want %q", name, hexBits, got, err, want)
			}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Errorf("%s: %d mismatches in %d lines", name, bad, n)
	}
	if sum != "" {
		if got := hex.EncodeToString(h.Sum(nil)); got != sum {
			t.Errorf("%s: SHA-256 %s, want %s", name, got, sum)
		}
	}
	return n
}

// TestFormatFloatNode compares FormatFloat with V8's String(x) over 100,000
// values printed by testdata/es6num.js.
func TestFormatFloatNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found in PATH (%v): V8 comparison not run", err)
	}
	const count = 100000
	out, err := exec.Command(node, "testdata/es6num.js", strconv.Itoa(count), "20240601").Output()
	if err != nil {
		t.Fatalf("node testdata/es6num.js: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != count {
		t.Fatalf("node printed %d lines, want %d", len(lines), count)
	}
	bad := 0
	for _, line := range lines {
		hexBits, want, _ := strings.Cut(line, ",")
		got, err := FormatFloat(fromHex(t, hexBits))
		if err != nil || got != want {
			if bad++; bad <= 10 {
				t.Errorf("%s: got %q, %v; V8 says %q", hexBits, got, err, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d mismatches with V8 in %d values", bad, count)
	}
}

func fromHex(t *testing.T, s string) float64 {
	t.Helper()
	bits, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return math.Float64frombits(bits)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
