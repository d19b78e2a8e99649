package idemhttp

import (
	"io"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/idemledger/idemledger/ledger"
)

// TestReplayKeepsHeaderBytes: a header value with obs-text (RFC 9110
// Section 5.5: bytes 0x80 to 0xFF, which net/http sends as they are) is
// replayed byte for byte by both forms, on both engines, over a real
// server; so are its valid UTF-8 neighbours and the order of the values.
func TestReplayKeepsHeaderBytes(t *testing.T) {
	want := http.Header{
		"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""},
		"X-Raw":               {"\x80", "caf\u00e9", "", "a\xbfb", "\xff"},
	}
	for _, pr := range protections {
		t.Run(pr.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, e string) {
				db := openSQL(t, e)
				l, err := ledger.New(sqlDriver(e, db), ledger.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var runs atomic.Int32
				opts := Options{
					Scope:         func(*http.Request) (string, error) { return testScope, nil },
					ReplayHeaders: []string{"Content-Disposition", "X-Raw"},
				}
				srv := serve(t, pr.wrap(l, db, opts, func(w http.ResponseWriter, r *http.Request) {
					runs.Add(1)
					io.ReadAll(r.Body)
					for name, values := range want {
						w.Header()[name] = values
					}
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(http.StatusCreated)
					io.WriteString(w, "file")
				}))
				h := http.Header{HeaderName: {`"obs-text"`}, "Content-Type": {"application/json"}}
				first := send(t, srv, "POST", "/files", `{}`, h)
				replay := send(t, srv, "POST", "/files", `{}`, h)
				for i, a := range []answer{first, replay} {
					got := http.Header{"Content-Disposition": a.header.Values("Content-Disposition"), "X-Raw": a.header.Values("X-Raw")}
					if a.status != http.StatusCreated || a.body != "file" || !reflect.DeepEqual(got, want) {
						t.Errorf("answer %d: %d %q, header %q\nwant 201 %q, header %q", i+1, a.status, a.body, got, "file", want)
					}
				}
				if first.header.Get(DefaultReplayHeader) != "" || replay.header.Get(DefaultReplayHeader) != "true" || runs.Load() != 1 {
					t.Errorf("replay marker %q then %q, %d runs; want none, then true, 1 run",
						first.header.Get(DefaultReplayHeader), replay.header.Get(DefaultReplayHeader), runs.Load())
				}
			})
		})
	}
}
