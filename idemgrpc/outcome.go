package idemgrpc

import (
	"errors"
	"fmt"
	"net/http"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/idemledger/idemledger/ledger"
)

// outcomeHeader marks the records this package stores, with the version of
// their layout: a ledger.Outcome whose Status is the gRPC code and whose
// Body is, for OK, a google.protobuf.Any holding the response (its type URL
// and its bytes) and otherwise a google.rpc.Status (code, message,
// details), both in deterministic protobuf encoding. A record without the
// mark (an HTTP answer, a ledger.Mutate value) is not replayed.
const outcomeHeader = "Idemgrpc-Outcome"

const outcomeVersion = "1"

// typeURLPrefix is the usual prefix of a google.protobuf.Any type URL.
const typeURLPrefix = "type.googleapis.com/"

var deterministic = proto.MarshalOptions{Deterministic: true}

// errStoredOutcome is wrapped by decodeOutcome's errors.
var errStoredOutcome = errors.New("idemgrpc: stored outcome is not a gRPC answer")

// encodeOutcome makes the ledger outcome of a handler's answer: resp when
// st is OK, st otherwise.
func encodeOutcome(resp any, st *status.Status) (ledger.Outcome, error) {
	out := ledger.Outcome{Status: int(st.Code()), Header: http.Header{outcomeHeader: {outcomeVersion}}}
	var err error
	if st.Code() == codes.OK {
		m, ok := resp.(proto.Message)
		if !ok {
			return ledger.Outcome{}, fmt.Errorf("%w: response %T", ErrNotProto, resp)
		}
		var value []byte
		if value, err = deterministic.Marshal(m); err == nil {
			name := string(m.ProtoReflect().Descriptor().FullName())
			out.Body, err = deterministic.Marshal(&anypb.Any{TypeUrl: typeURLPrefix + name, Value: value})
		}
	} else {
		out.Body, err = deterministic.Marshal(st.Proto())
	}
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("idemgrpc: encoding the outcome: %w", err)
	}
	return out, nil
}

// decodeOutcome reads a stored outcome back: the response message (made
// from the type resolver finds for its type URL) or the status error.
func decodeOutcome(out ledger.Outcome, types protoregistry.MessageTypeResolver) (any, error) {
	if v := out.Header.Values(outcomeHeader); len(v) != 1 || v[0] != outcomeVersion {
		return nil, fmt.Errorf("%w: no %s mark", errStoredOutcome, outcomeHeader)
	}
	if out.Status == int(codes.OK) {
		var a anypb.Any
		if err := proto.Unmarshal(out.Body, &a); err != nil {
			return nil, fmt.Errorf("%w: %w", errStoredOutcome, err)
		}
		mt, err := types.FindMessageByURL(a.TypeUrl)
		if err != nil {
			return nil, fmt.Errorf("%w: response type %q: %w", errStoredOutcome, a.TypeUrl, err)
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(a.Value, m); err != nil {
			return nil, fmt.Errorf("%w: %w", errStoredOutcome, err)
		}
		return m, nil
	}
	var sp spb.Status
	if err := proto.Unmarshal(out.Body, &sp); err != nil {
		return nil, fmt.Errorf("%w: %w", errStoredOutcome, err)
	}
	if sp.Code != int32(out.Status) || sp.Code == int32(codes.OK) {
		return nil, fmt.Errorf("%w: status %d with code %d", errStoredOutcome, out.Status, sp.Code)
	}
	return nil, status.FromProto(&sp).Err()
}
