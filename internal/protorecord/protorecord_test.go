package protorecord

import (
	"errors"
	"net/http"
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idemledger/idemledger/ledger"
)

// TestDecodeKinds: Decode reads the records of kind "grpc" that Encode*
// write, and records without a kind that carry the Idemgrpc-Outcome mark
// (written before schema version 3); anything else is refused with
// ErrStoredOutcome and a *ledger.KindError naming both kinds.
func TestDecodeKinds(t *testing.T) {
	resp, err := EncodeResponse(wrapperspb.String("made"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Kind != "grpc" || resp.Status != 0 || resp.Header != nil {
		t.Fatalf("EncodeResponse = %+v; want kind grpc, status 0, no header", resp)
	}
	failed, err := EncodeStatus(&spb.Status{Code: 5, Message: "no such order"})
	if err != nil {
		t.Fatal(err)
	}
	if failed.Kind != "grpc" || failed.Status != 5 || failed.Header != nil {
		t.Fatalf("EncodeStatus = %+v; want kind grpc, status 5, no header", failed)
	}
	legacy := func(out ledger.Outcome) ledger.Outcome {
		out.Kind, out.Header = "", http.Header{"Idemgrpc-Outcome": {"1"}}
		return out
	}
	tests := []struct {
		name    string
		out     ledger.Outcome
		resp    string // the StringValue replayed; "" for none
		code    int32  // the status replayed; 0 for none
		err     string
		errKind *ledger.KindError
	}{
		{"response", resp, "made", 0, "", nil},
		{"status", failed, "", 5, "", nil},
		{"response before kinds", legacy(resp), "made", 0, "", nil},
		{"status before kinds", legacy(failed), "", 5, "", nil},
		{"http", ledger.Outcome{Kind: "http", Status: 200, Body: resp.Body}, "", 0,
			`stored outcome is not a protobuf call's answer: stored outcome is of kind "http", not "grpc": the key was used by another kind of operation`,
			&ledger.KindError{Kind: "http", Want: "grpc"}},
		{"no kind, no mark", ledger.Outcome{Body: resp.Body}, "", 0,
			`stored outcome is not a protobuf call's answer: stored outcome is of kind "", not "grpc": the key was used by another kind of operation`,
			&ledger.KindError{Want: "grpc"}},
		{"mark of another version", ledger.Outcome{Header: http.Header{"Idemgrpc-Outcome": {"2"}}, Body: resp.Body}, "", 0,
			`stored outcome is not a protobuf call's answer: stored outcome is of kind "", not "grpc": the key was used by another kind of operation`,
			&ledger.KindError{Want: "grpc"}},
	}
	for _, tt := range tests {
		m, st, err := Decode(tt.out, protoregistry.GlobalTypes)
		if tt.err != "" {
			var ke *ledger.KindError
			if err == nil || err.Error() != tt.err || !errors.Is(err, ErrStoredOutcome) || !errors.As(err, &ke) || *ke != *tt.errKind {
				t.Errorf("%s: Decode = %v, %v, %v\nwant %s", tt.name, m, st, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Decode: %v", tt.name, err)
			continue
		}
		if tt.resp != "" {
			if sv, ok := m.(*wrapperspb.StringValue); !ok || sv.GetValue() != tt.resp || st != nil {
				t.Errorf("%s: Decode = %v, %v; want the response %q", tt.name, m, st, tt.resp)
			}
			continue
		}
		if m != nil || st == nil || st.Code != tt.code || !proto.Equal(st, &spb.Status{Code: 5, Message: "no such order"}) {
			t.Errorf("%s: Decode = %v, %v; want the status of code %d", tt.name, m, st, tt.code)
		}
	}
}
