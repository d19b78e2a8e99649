package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// headerCases are Outcome headers that must read back exactly as written:
// field values are bytes (RFC 9110 Section 5.5 allows obs-text, 0x80 to
// 0xFF, which net/http sends unchanged), not necessarily UTF-8 text.
var headerCases = []struct {
	name string
	h    map[string][]string
}{
	{"obs-text ISO-8859-1 e-acute", map[string][]string{"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""}}},
	{"byte 0x80", map[string][]string{"X-Raw": {"\x80"}}},
	{"byte 0xFF after NUL", map[string][]string{"X-Raw": {"\x00\xff"}}},
	{"every byte from 0x80 to 0xFF", map[string][]string{"X-Raw": {highBytes()}}},
	{"lone UTF-8 continuation byte", map[string][]string{"X-Raw": {"a\xbfb"}}},
	{"truncated UTF-8 sequence", map[string][]string{"X-Raw": {"\xe2\x82"}}},
	{"UTF-8 encoded surrogate", map[string][]string{"X-Raw": {"\xed\xa0\x80"}}},
	{"overlong UTF-8", map[string][]string{"X-Raw": {"\xc0\xaf"}}},
	{"valid multi-byte UTF-8", map[string][]string{"Content-Disposition": {"attachment; filename*=UTF-8''caf\u00e9 \u20ac \U0001F600.txt"}}},
	{"U+FFFD itself", map[string][]string{"X-Raw": {"\ufffd"}}},
	{"a string that looks like the byte form", map[string][]string{"X-Raw": {`{"b64":"/w=="}`}}},
	{"empty values", map[string][]string{"X-Empty": {""}, "X-Two-Empty": {"", ""}}},
	{"several values per name, in order", map[string][]string{
		"Link": {"</z>", "caf\xe9", "", "</a>", "\xff", "caf\u00e9"},
		"Vary": {"B", "A"},
	}},
	{"no values: nil and empty lists", map[string][]string{"X-Nil": nil, "X-None": {}}},
	{"HTML characters", map[string][]string{"Link": {"<a&b>", "<\xe9>"}}},
}

// highBytes is every byte from 0x80 to 0xFF, in order.
func highBytes() string {
	var b strings.Builder
	for c := 0x80; c <= 0xff; c++ {
		b.WriteByte(byte(c))
	}
	return b.String()
}

// storedHeaders reads the headers column of key's row as it is.
func (b *bundle[TTx]) storedHeaders(t *testing.T, key string) []byte {
	t.Helper()
	var raw []byte
	q := testdb.Rebind(b.d.Engine, `SELECT headers FROM idempotency_ledger WHERE scope = ? AND "key" = ?`)
	if err := b.db.QueryRow(q, "tenant-1", key).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestOutcomeHeaderBytes: Complete stores header values byte for byte, and
// both Get and the replay of a Claim return them so, whether or not they
// are valid UTF-8.
func TestOutcomeHeaderBytes(t *testing.T) {
	eachDriver(t, testOutcomeHeaderBytes[*sql.Tx], testOutcomeHeaderBytes[pgx.Tx])
}

func testOutcomeHeaderBytes[TTx any](t *testing.T, b *bundle[TTx]) {
	for i, tc := range headerCases {
		t.Run(tc.name, func(t *testing.T) {
			key := "k" + string(rune('a'+i))
			c := b.claim(t, req(key, "p"))
			if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 200, Header: tc.h}); err != nil {
				t.Fatal(err)
			}
			if got := b.get(t, key).Outcome.Header; !reflect.DeepEqual(got, tc.h) {
				t.Errorf("Get: header %#v\nwant %#v", got, tc.h)
			}
			r := b.claim(t, req(key, "p"))
			if !r.Replayed() || !reflect.DeepEqual(r.Replay.Outcome.Header, tc.h) {
				t.Errorf("replay: %v, header %#v\nwant %#v", r.Replayed(), r.Replay.Outcome.Header, tc.h)
			}
		})
	}
}

// TestMutateOutcomeHeaderBytes: the same through MutateOutcome, for its
// first execution's record and for its replay.
func TestMutateOutcomeHeaderBytes(t *testing.T) {
	eachDriver(t, testMutateOutcomeHeaderBytes[*sql.Tx], testMutateOutcomeHeaderBytes[pgx.Tx])
}

func testMutateOutcomeHeaderBytes[TTx any](t *testing.T, b *bundle[TTx]) {
	for i, tc := range headerCases {
		t.Run(tc.name, func(t *testing.T) {
			key := "m" + string(rune('a'+i))
			out := ledger.Outcome{Status: 201, Header: tc.h, Body: []byte("x")}
			runs := 0
			mutate := func() ledger.Result[ledger.Outcome] {
				t.Helper()
				var res ledger.Result[ledger.Outcome]
				b.inTx(t, func(tx TTx) {
					var err error
					res, err = ledger.MutateOutcome(b.ctx, b.l, tx, req(key, "p"), func(context.Context) (ledger.Outcome, error) {
						runs++
						return out, nil
					})
					if err != nil {
						t.Fatal(err)
					}
				})
				return res
			}
			if res := mutate(); res.Replayed || runs != 1 {
				t.Fatalf("first execution: %+v, %d runs", res, runs)
			}
			if got := b.get(t, key).Outcome; !reflect.DeepEqual(got, out) {
				t.Errorf("Get: %#v\nwant %#v", got, out)
			}
			if res := mutate(); !res.Replayed || runs != 1 || !reflect.DeepEqual(res.Value, out) {
				t.Errorf("replay: %v, %d runs, %#v\nwant %#v", res.Replayed, runs, res.Value, out)
			}
		})
	}
}

// TestStoredHeaderFormat pins the bytes of the headers column. A header
// whose values are all valid UTF-8 is stored exactly as json.Marshal
// writes it, as every release so far did; a value that is not valid UTF-8
// is the object {"b64": standard base64 of its bytes} in its place.
func TestStoredHeaderFormat(t *testing.T) {
	eachDriver(t, testStoredHeaderFormat[*sql.Tx], testStoredHeaderFormat[pgx.Tx])
}

func testStoredHeaderFormat[TTx any](t *testing.T, b *bundle[TTx]) {
	utf8Headers := []map[string][]string{
		{},
		{"Location": {"/orders/7"}, "Vary": {"B", "A"}},
		{"Link": {`</a>; rel="next"`, "<b&c>"}, "X-Empty": {""}, "X-Nil": nil, "X-None": {}},
		{"Content-Disposition": {"attachment; filename*=UTF-8''caf\u00e9 \u20ac \U0001F600.txt"}, "X-Ls": {"\u2028\u2029\ufffd"}},
		{"X-Raw": {`{"b64":"/w=="}`, "\x00\x01\x7f"}},
	}
	mixed := []struct {
		h    map[string][]string
		want string
	}{
		{map[string][]string{"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""}},
			`{"Content-Disposition":[{"b64":"YXR0YWNobWVudDsgZmlsZW5hbWU9ImNhZukudHh0Ig=="}]}`},
		{map[string][]string{"Link": {"</z>", "\xff", "", "<&>"}, "Vary": {"B", "A"}, "X-Nil": nil, "X-Raw": {"\x00\x80"}},
			`{"Link":["\u003c/z\u003e",{"b64":"/w=="},"","\u003c\u0026\u003e"],"Vary":["B","A"],"X-Nil":null,"X-Raw":[{"b64":"AIA="}]}`},
	}
	{
		complete := func(key string, h map[string][]string) {
			t.Helper()
			c := b.claim(t, req(key, "p"))
			if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 200, Header: h}); err != nil {
				t.Fatal(err)
			}
		}
		for i, h := range utf8Headers {
			key := "utf8-" + string(rune('a'+i))
			complete(key, h)
			want, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.storedHeaders(t, key); string(got) != string(want) {
				t.Errorf("stored %q\nwant %q (json.Marshal's)", got, want)
			}
		}
		for i, m := range mixed {
			key := "mixed-" + string(rune('a'+i))
			complete(key, m.h)
			if got := b.storedHeaders(t, key); string(got) != m.want {
				t.Errorf("stored %q\nwant %q", got, m.want)
			}
		}
		// No header is no bytes at all (NULL).
		complete("nil", nil)
		if got := b.storedHeaders(t, "nil"); got != nil {
			t.Errorf("nil header stored as %q, want NULL", got)
		}
	}
}

// TestStoredHeaderDecoding sets the headers column by hand: records that
// earlier releases wrote (JSON arrays of strings only) read back as they
// always did, the byte form reads back as its bytes, and a malformed
// column is an error of Get and of Claim, never a silently changed
// header.
func TestStoredHeaderDecoding(t *testing.T) {
	eachDriver(t, testStoredHeaderDecoding[*sql.Tx], testStoredHeaderDecoding[pgx.Tx])
}

func testStoredHeaderDecoding[TTx any](t *testing.T, b *bundle[TTx]) {
	good := []struct {
		name   string
		stored string
		want   map[string][]string
	}{
		{"legacy", `{"Location":["/orders/7"],"Vary":["B","A"]}`, map[string][]string{"Location": {"/orders/7"}, "Vary": {"B", "A"}}},
		{"legacy empty object", `{}`, map[string][]string{}},
		{"legacy null", `null`, nil},
		{"legacy nil and empty lists", `{"X-Nil":null,"X-None":[]}`, map[string][]string{"X-Nil": nil, "X-None": {}}},
		{"legacy escapes", `{"Link":["\u003c/a\u003e; rel=\"next\"","caf\u00e9","\ud83d\ude00"]}`, map[string][]string{"Link": {`</a>; rel="next"`, "caf\u00e9", "\U0001F600"}}},
		{"legacy U+FFFD, as the old writer left obs-text", `{"X-Raw":["caf\ufffd"]}`, map[string][]string{"X-Raw": {"caf\ufffd"}}},
		{"legacy value that looks like the byte form", `{"X-Raw":["{\"b64\":\"/w==\"}"]}`, map[string][]string{"X-Raw": {`{"b64":"/w=="}`}}},
		{"legacy whitespace", " { \"A\" : [ \"x\" , \"y\" ] } ", map[string][]string{"A": {"x", "y"}}},
		{"legacy null value in a list", `{"A":[null,"x"]}`, map[string][]string{"A": {"", "x"}}},
		{"byte form", `{"A":[{"b64":"Y2Fm6Q=="},"x",{"b64":""},{"b64":"/w=="}]}`, map[string][]string{"A": {"caf\xe9", "x", "", "\xff"}}},
		{"byte form of valid UTF-8", `{"A":[{"b64":"YQ=="}]}`, map[string][]string{"A": {"a"}}},
		{"byte form with whitespace", `{"A":[ { "b64" : "/w==" } ]}`, map[string][]string{"A": {"\xff"}}},
	}
	bad := []struct{ name, stored string }{
		{"not JSON", `{"A":["x"]`},
		{"not an object", `["x"]`},
		{"a string, not a list", `{"A":"x"}`},
		{"a number in a list", `{"A":[1]}`},
		{"a boolean in a list", `{"A":[true]}`},
		{"a list in a list", `{"A":[["x"]]}`},
		{"an empty object", `{"A":[{}]}`},
		{"another member", `{"A":[{"hex":"ff"}]}`},
		{"an extra member", `{"A":[{"b64":"/w==","x":1}]}`},
		{"the member named in another case", `{"A":[{"B64":"/w=="}]}`},
		{"the member twice", `{"A":[{"b64":"/w==","b64":"/w=="}]}`},
		{"a number for b64", `{"A":[{"b64":1}]}`},
		{"null for b64", `{"A":[{"b64":null}]}`},
		{"not base64", `{"A":[{"b64":"!!!!"}]}`},
		{"unpadded base64", `{"A":[{"b64":"/w"}]}`},
		{"URL-safe base64", `{"A":[{"b64":"_w=="}]}`},
		{"base64 with a newline", `{"A":[{"b64":"/w==\n"}]}`},
		{"base64 with nonzero padding bits", `{"A":[{"b64":"/x=="}]}`},
	}
	{
		set := func(key, stored string) {
			t.Helper()
			// By a ledger without a cache: b.l would keep the record
			// as completed, before the hand-made change below.
			complete(t, b, req(key, "p"), ledger.Outcome{Status: 200})
			q := testdb.Rebind(b.d.Engine, `UPDATE idempotency_ledger SET headers = ? WHERE scope = ? AND "key" = ?`)
			if _, err := b.db.Exec(q, []byte(stored), "tenant-1", key); err != nil {
				t.Fatal(err)
			}
		}
		for i, tc := range good {
			t.Run(tc.name, func(t *testing.T) {
				key := "good-" + string(rune('a'+i))
				set(key, tc.stored)
				if got := b.get(t, key).Outcome.Header; !reflect.DeepEqual(got, tc.want) {
					t.Errorf("stored %s: header %#v\nwant %#v", tc.stored, got, tc.want)
				}
			})
		}
		for i, tc := range bad {
			t.Run(tc.name, func(t *testing.T) {
				key := "bad-" + string(rune('a'+i))
				set(key, tc.stored)
				r, err := b.l.Get(b.ctx, "tenant-1", key)
				if err == nil || !strings.Contains(err.Error(), "stored headers") {
					t.Errorf("Get of stored %s = %+v, %v; want a stored headers error", tc.stored, r, err)
				}
				if c, err := b.l.Claim(b.ctx, req(key, "p")); err == nil {
					t.Errorf("Claim of stored %s = %+v; want an error", tc.stored, c)
				}
			})
		}
	}
}

// TestCompleteRefusesNonUTF8HeaderName: a header name is a JSON object's
// name in the headers column, which holds text only. A name that is not
// valid UTF-8 (never an HTTP field name, which is ASCII) is refused before
// the database is used, rather than stored with U+FFFD in it, where two
// such names could become one and lose the other's values.
func TestCompleteRefusesNonUTF8HeaderName(t *testing.T) {
	eachDriver(t, testCompleteRefusesNonUTF8HeaderName[*sql.Tx], testCompleteRefusesNonUTF8HeaderName[pgx.Tx])
}

func testCompleteRefusesNonUTF8HeaderName[TTx any](t *testing.T, b *bundle[TTx]) {
	c := b.claim(t, req("k", "p"))
	bad := ledger.Outcome{Status: 200, Header: map[string][]string{"X-\xfe": {"1"}, "X-Ok": {"2"}}}
	err := b.l.Complete(b.ctx, c, bad)
	if !errors.Is(err, ledger.ErrInvalidRequest) || err.Error() != `ledger: invalid request: header name "X-\xfe" is not valid UTF-8` {
		t.Fatalf("Complete = %v, want ErrInvalidRequest naming the header", err)
	}
	if r := b.get(t, "k"); r.State != ledger.StateInFlight {
		t.Fatalf("record after a refused Complete: %v, want in flight", r.State)
	}
	good := ledger.Outcome{Status: 200, Header: map[string][]string{"X-Ok": {"2"}}}
	if err := b.l.Complete(b.ctx, c, good); err != nil {
		t.Fatalf("Complete after the refusal: %v; the claim should still hold", err)
	}

	// MutateOutcome completes through Complete: refused and rolled back.
	b.inTx(t, func(tx TTx) {
		_, err := ledger.MutateOutcome(b.ctx, b.l, tx, req("m", "p"), func(context.Context) (ledger.Outcome, error) {
			return bad, nil
		})
		if !errors.Is(err, ledger.ErrInvalidRequest) {
			t.Fatalf("MutateOutcome = %v, want ErrInvalidRequest", err)
		}
	})
	if _, err := b.l.Get(b.ctx, "tenant-1", "m"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("record after a refused MutateOutcome: %v, want ErrNotFound", err)
	}
}
