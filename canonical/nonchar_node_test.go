package canonical

import (
	"os/exec"
	"strings"
	"testing"
)

// noncharacterTests are documents holding Unicode noncharacters, with their
// canonical form as V8 computes it: the want strings were printed by
// testdata/jcsnode.js (node v20.20.2), which gave the same bytes as the
// npm package canonicalize 4.0.0 (the RFC 8785 author's reference for
// JavaScript), not by package canonical. TestNoncharacterNode checks them
// against V8 again when node is installed.
var noncharacterTests = []struct {
	name, in, want string
}{
	{"escaped U+FFFF",
		`["\uffff"]`,
		"[\"\uFFFF\"]"},
	{"escaped U+FFFE, upper-case hex",
		`["\uFFFE"]`,
		"[\"\uFFFE\"]"},
	{"first and last of U+FDD0..U+FDEF",
		`["\ufdd0","\uFDEF"]`,
		"[\"\uFDD0\",\"\uFDEF\"]"},
	{"raw U+FDD0",
		"[\"\uFDD0\"]",
		"[\"\uFDD0\"]"},
	{"raw U+10FFFF name",
		"{\"\U0010FFFF\":1}",
		"{\"\U0010FFFF\":1}"},
	{"surrogate-pair names U+10FFFF and U+1FFFE",
		`{"\udbff\udfff":1,"\ud83f\udffe":2}`,
		"{\"\U0001FFFE\":2,\"\U0010FFFF\":1}"},
	{"upper-case surrogate pair",
		`["\uDBFF\uDFFF"]`,
		"[\"\U0010FFFF\"]"},
	{"names sorted by UTF-16 code units",
		`{"\uffff":1,"\ufffe":2,"\ufdd0":3,"\ue000":4,"\ud800\udc00":5,"\udbff\udfff":6,"a":7,"\u00e9":8}`,
		"{\"a\":7,\"\u00E9\":8,\"\U00010000\":5,\"\U0010FFFF\":6,\"\uE000\":4,\"\uFDD0\":3,\"\uFFFE\":2,\"\uFFFF\":1}"},
	{"raw and escaped names",
		"{\"\\uffff\":1,\"\uFFFE\":2,\"\uFDD0x\":3,\"\\ufdd0\":4}",
		"{\"\uFDD0\":4,\"\uFDD0x\":3,\"\uFFFE\":2,\"\uFFFF\":1}"},
	{"beside other escapes",
		`"\u0000\uffff\n\ufdd0\"\\\/\u001f"`,
		"\"\\u0000\uFFFF\\n\uFDD0\\\"\\\\/\\u001f\""},
	{"raw last two of every plane above 0",
		"\"\U0001FFFE\U0001FFFF\U0002FFFE\U0002FFFF\U0003FFFE\U0003FFFF\U0004FFFE\U0004FFFF\U0005FFFE\U0005FFFF\U0006FFFE\U0006FFFF\U0007FFFE\U0007FFFF\U0008FFFE\U0008FFFF\U0009FFFE\U0009FFFF\U000AFFFE\U000AFFFF\U000BFFFE\U000BFFFF\U000CFFFE\U000CFFFF\U000DFFFE\U000DFFFF\U000EFFFE\U000EFFFF\U000FFFFE\U000FFFFF\U0010FFFE\U0010FFFF\"",
		"\"\U0001FFFE\U0001FFFF\U0002FFFE\U0002FFFF\U0003FFFE\U0003FFFF\U0004FFFE\U0004FFFF\U0005FFFE\U0005FFFF\U0006FFFE\U0006FFFF\U0007FFFE\U0007FFFF\U0008FFFE\U0008FFFF\U0009FFFE\U0009FFFF\U000AFFFE\U000AFFFF\U000BFFFE\U000BFFFF\U000CFFFE\U000CFFFF\U000DFFFE\U000DFFFF\U000EFFFE\U000EFFFF\U000FFFFE\U000FFFFF\U0010FFFE\U0010FFFF\""},
	{"all 66 escaped, in an array",
		`["\uFDD0","\ufdd1","\uFDD2","\ufdd3","\uFDD4","\ufdd5","\uFDD6","\ufdd7","\uFDD8","\ufdd9","\uFDDA","\ufddb","\uFDDC","\ufddd","\uFDDE","\ufddf","\uFDE0","\ufde1","\uFDE2","\ufde3","\uFDE4","\ufde5","\uFDE6","\ufde7","\uFDE8","\ufde9","\uFDEA","\ufdeb","\uFDEC","\ufded","\uFDEE","\ufdef","\uFFFE","\uffff","\uD83F\uDFFE","\ud83f\udfff","\uD87F\uDFFE","\ud87f\udfff","\uD8BF\uDFFE","\ud8bf\udfff","\uD8FF\uDFFE","\ud8ff\udfff","\uD93F\uDFFE","\ud93f\udfff","\uD97F\uDFFE","\ud97f\udfff","\uD9BF\uDFFE","\ud9bf\udfff","\uD9FF\uDFFE","\ud9ff\udfff","\uDA3F\uDFFE","\uda3f\udfff","\uDA7F\uDFFE","\uda7f\udfff","\uDABF\uDFFE","\udabf\udfff","\uDAFF\uDFFE","\udaff\udfff","\uDB3F\uDFFE","\udb3f\udfff","\uDB7F\uDFFE","\udb7f\udfff","\uDBBF\uDFFE","\udbbf\udfff","\uDBFF\uDFFE","\udbff\udfff"]`,
		"[\"\uFDD0\",\"\uFDD1\",\"\uFDD2\",\"\uFDD3\",\"\uFDD4\",\"\uFDD5\",\"\uFDD6\",\"\uFDD7\",\"\uFDD8\",\"\uFDD9\",\"\uFDDA\",\"\uFDDB\",\"\uFDDC\",\"\uFDDD\",\"\uFDDE\",\"\uFDDF\",\"\uFDE0\",\"\uFDE1\",\"\uFDE2\",\"\uFDE3\",\"\uFDE4\",\"\uFDE5\",\"\uFDE6\",\"\uFDE7\",\"\uFDE8\",\"\uFDE9\",\"\uFDEA\",\"\uFDEB\",\"\uFDEC\",\"\uFDED\",\"\uFDEE\",\"\uFDEF\",\"\uFFFE\",\"\uFFFF\",\"\U0001FFFE\",\"\U0001FFFF\",\"\U0002FFFE\",\"\U0002FFFF\",\"\U0003FFFE\",\"\U0003FFFF\",\"\U0004FFFE\",\"\U0004FFFF\",\"\U0005FFFE\",\"\U0005FFFF\",\"\U0006FFFE\",\"\U0006FFFF\",\"\U0007FFFE\",\"\U0007FFFF\",\"\U0008FFFE\",\"\U0008FFFF\",\"\U0009FFFE\",\"\U0009FFFF\",\"\U000AFFFE\",\"\U000AFFFF\",\"\U000BFFFE\",\"\U000BFFFF\",\"\U000CFFFE\",\"\U000CFFFF\",\"\U000DFFFE\",\"\U000DFFFF\",\"\U000EFFFE\",\"\U000EFFFF\",\"\U000FFFFE\",\"\U000FFFFF\",\"\U0010FFFE\",\"\U0010FFFF\"]"},
	{"all 66 as names, reversed",
		`{"\udbff\udfff":0,"\uDBFF\uDFFE":1,"\udbbf\udfff":2,"\uDBBF\uDFFE":3,"\udb7f\udfff":4,"\uDB7F\uDFFE":5,"\udb3f\udfff":6,"\uDB3F\uDFFE":7,"\udaff\udfff":8,"\uDAFF\uDFFE":9,"\udabf\udfff":10,"\uDABF\uDFFE":11,"\uda7f\udfff":12,"\uDA7F\uDFFE":13,"\uda3f\udfff":14,"\uDA3F\uDFFE":15,"\ud9ff\udfff":16,"\uD9FF\uDFFE":17,"\ud9bf\udfff":18,"\uD9BF\uDFFE":19,"\ud97f\udfff":20,"\uD97F\uDFFE":21,"\ud93f\udfff":22,"\uD93F\uDFFE":23,"\ud8ff\udfff":24,"\uD8FF\uDFFE":25,"\ud8bf\udfff":26,"\uD8BF\uDFFE":27,"\ud87f\udfff":28,"\uD87F\uDFFE":29,"\ud83f\udfff":30,"\uD83F\uDFFE":31,"\uffff":32,"\uFFFE":33,"\ufdef":34,"\uFDEE":35,"\ufded":36,"\uFDEC":37,"\ufdeb":38,"\uFDEA":39,"\ufde9":40,"\uFDE8":41,"\ufde7":42,"\uFDE6":43,"\ufde5":44,"\uFDE4":45,"\ufde3":46,"\uFDE2":47,"\ufde1":48,"\uFDE0":49,"\ufddf":50,"\uFDDE":51,"\ufddd":52,"\uFDDC":53,"\ufddb":54,"\uFDDA":55,"\ufdd9":56,"\uFDD8":57,"\ufdd7":58,"\uFDD6":59,"\ufdd5":60,"\uFDD4":61,"\ufdd3":62,"\uFDD2":63,"\ufdd1":64,"\uFDD0":65}`,
		"{\"\U0001FFFE\":31,\"\U0001FFFF\":30,\"\U0002FFFE\":29,\"\U0002FFFF\":28,\"\U0003FFFE\":27,\"\U0003FFFF\":26,\"\U0004FFFE\":25,\"\U0004FFFF\":24,\"\U0005FFFE\":23,\"\U0005FFFF\":22,\"\U0006FFFE\":21,\"\U0006FFFF\":20,\"\U0007FFFE\":19,\"\U0007FFFF\":18,\"\U0008FFFE\":17,\"\U0008FFFF\":16,\"\U0009FFFE\":15,\"\U0009FFFF\":14,\"\U000AFFFE\":13,\"\U000AFFFF\":12,\"\U000BFFFE\":11,\"\U000BFFFF\":10,\"\U000CFFFE\":9,\"\U000CFFFF\":8,\"\U000DFFFE\":7,\"\U000DFFFF\":6,\"\U000EFFFE\":5,\"\U000EFFFF\":4,\"\U000FFFFE\":3,\"\U000FFFFF\":2,\"\U0010FFFE\":1,\"\U0010FFFF\":0,\"\uFDD0\":65,\"\uFDD1\":64,\"\uFDD2\":63,\"\uFDD3\":62,\"\uFDD4\":61,\"\uFDD5\":60,\"\uFDD6\":59,\"\uFDD7\":58,\"\uFDD8\":57,\"\uFDD9\":56,\"\uFDDA\":55,\"\uFDDB\":54,\"\uFDDC\":53,\"\uFDDD\":52,\"\uFDDE\":51,\"\uFDDF\":50,\"\uFDE0\":49,\"\uFDE1\":48,\"\uFDE2\":47,\"\uFDE3\":46,\"\uFDE4\":45,\"\uFDE5\":44,\"\uFDE6\":43,\"\uFDE7\":42,\"\uFDE8\":41,\"\uFDE9\":40,\"\uFDEA\":39,\"\uFDEB\":38,\"\uFDEC\":37,\"\uFDED\":36,\"\uFDEE\":35,\"\uFDEF\":34,\"\uFFFE\":33,\"\uFFFF\":32}"},
	{"nested in values and names",
		"{\"b\":[{\"\\ufdef\":\"\uFDD1\"}],\"a\":{\"z\":\"\\ud87f\\udfff\",\"\U0008FFFE\":null}}",
		"{\"a\":{\"z\":\"\U0002FFFF\",\"\U0008FFFE\":null},\"b\":[{\"\uFDEF\":\"\uFDD1\"}]}"},
}

// TestNoncharacterTable checks the default canonical form of documents with
// noncharacters against V8's, through every entry point.
func TestNoncharacterTable(t *testing.T) {
	for _, tt := range noncharacterTests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ep := range entryPoints {
				if ep.name == "Marshal" || ep.name == "Options.Marshal" {
					continue // json.Marshal rewrites the text: see TestNoncharacterMarshalGo
				}
				if strings.HasPrefix(ep.name, "Options.") && strings.Count(tt.in, "[")+strings.Count(tt.in, "{") > 2 {
					continue // deeper than their MaxDepth 2
				}
				got, err := ep.fn(t, []byte(tt.in))
				if err != nil || string(got) != tt.want {
					t.Errorf("%s(%q) = %q, %v; want %q", ep.name, tt.in, got, err, tt.want)
				}
			}
		})
	}
}

// TestNoncharacterNode checks the want strings of noncharacterTests against
// V8, when node is installed.
func TestNoncharacterNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found in PATH (%v): V8 comparison not run", err)
	}
	var in strings.Builder
	for _, tt := range noncharacterTests {
		in.WriteString(tt.in)
		in.WriteByte('\n')
	}
	cmd := exec.Command(node, "testdata/jcsnode.js")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node testdata/jcsnode.js: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(noncharacterTests) {
		t.Fatalf("node printed %d lines, want %d", len(lines), len(noncharacterTests))
	}
	for i, tt := range noncharacterTests {
		if lines[i] != tt.want {
			t.Errorf("%s: V8 says %q, the table %q", tt.name, lines[i], tt.want)
		}
	}
}
