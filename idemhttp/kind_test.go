package idemhttp

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// TestReplayKinds: the middleware replays what idemhttp stores (kind
// "http"; kind "http.not_stored" as 410), reads records without a kind as
// releases before schema version 3 wrote them (a response, or a marker
// carried by the Idemhttp-Not-Stored header), and refuses every other kind
// with 500 stored-outcome, without the replay marker, and without running
// the handler. A header of that
// old marker's name in a response of kind "http" is the handler's own.
func TestReplayKinds(t *testing.T) {
	const gone = `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed ` +
		`with status 200, but its answer was too large to keep, so it cannot be sent again","code":"outcome-not-stored"}` + "\n"
	const goneHijack = `{"type":"about:blank","title":"Gone","status":410,"detail":"the request with this idempotency key completed ` +
		`with status 101, but its answer could not be kept, so it cannot be sent again","code":"outcome-not-stored"}` + "\n"
	const refused = `{"type":"about:blank","title":"Internal Server Error","status":500,` +
		`"detail":"the answer stored for this idempotency key cannot be replayed over HTTP","code":"stored-outcome"}` + "\n"
	tests := []struct {
		name   string
		stored ledger.Outcome
		status int
		header http.Header // the fields of the answer checked, besides the replay marker
		body   string
	}{
		{"response", ledger.Outcome{Kind: KindResponse, Status: 201, Header: http.Header{"A": {"b"}}, Body: []byte("made")},
			201, http.Header{"A": {"b"}}, "made"},
		{"handler's header", ledger.Outcome{Kind: KindResponse, Status: 200, Header: http.Header{"Idemhttp-Not-Stored": {"x"}}, Body: []byte("mine")},
			200, http.Header{"Idemhttp-Not-Stored": {"x"}}, "mine"},
		{"not stored", ledger.Outcome{Kind: KindNotStored, Status: 200, Body: []byte("oversized")}, 410, nil, gone},
		{"response before kinds", ledger.Outcome{Status: 202, Header: http.Header{"A": {"c"}}, Body: []byte("old")},
			202, http.Header{"A": {"c"}}, "old"},
		{"marker before kinds", ledger.Outcome{Status: 200, Header: http.Header{"Idemhttp-Not-Stored": {"oversized"}}}, 410, nil, gone},
		{"hijack marker before kinds", ledger.Outcome{Status: 101, Header: http.Header{"Idemhttp-Not-Stored": {"hijack"}}}, 410, nil, goneHijack},
		{"mutate value", ledger.Outcome{Kind: ledger.KindValue, Body: []byte(`{"id":1}`)}, 500, nil, refused},
		{"grpc", ledger.Outcome{Kind: "grpc", Body: []byte{0x0a, 0x00}}, 500, nil, refused},
		{"other kind with a status", ledger.Outcome{Kind: "csv", Status: 200, Body: []byte("a,b")}, 500, nil, refused},
	}
	eachEngine(t, func(t *testing.T, e string) {
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ran")
		})
		for _, tt := range tests {
			req := ledger.Request{Scope: testScope, Key: tt.name,
				Fingerprint: hash.Request("POST", "/", "application/json", []byte("{}"))}
			c, err := b.l.Claim(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.l.Complete(context.Background(), c, tt.stored); err != nil {
				t.Fatal(err)
			}
			a := b.do(t, "POST", "/", "{}", tt.name)
			// A refusal carries no replay marker: no answer is replayed.
			replayed := map[bool]string{true: "true"}[tt.status != 500]
			if a.status != tt.status || a.body != tt.body || a.header.Get(DefaultReplayHeader) != replayed {
				t.Errorf("%s: %d %q (replay marker %q); want %d %q (%q)", tt.name, a.status, a.body, a.header.Get(DefaultReplayHeader), tt.status, tt.body, replayed)
			}
			for name, want := range tt.header {
				if got := a.header[name]; len(got) != len(want) || got[0] != want[0] {
					t.Errorf("%s: %s = %q, want %q", tt.name, name, got, want)
				}
			}
		}
		if n := b.calls.Load(); n != 0 {
			t.Errorf("the handler ran %d times, want 0", n)
		}
	})
}
