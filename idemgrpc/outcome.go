package idemgrpc

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemledger/idemledger/internal/protorecord"
	"github.com/idemledger/idemledger/ledger"
)

// encodeOutcome makes the ledger outcome of a handler's answer: resp when
// st is OK, st otherwise (see package protorecord for the layout).
func encodeOutcome(resp any, st *status.Status) (ledger.Outcome, error) {
	if st.Code() == codes.OK {
		return protorecord.EncodeResponse(resp)
	}
	return protorecord.EncodeStatus(st.Proto())
}

// decodeOutcome reads a stored outcome back: the response message (made
// from the type resolver finds for its type URL) or the status error.
// Errors wrap protorecord.ErrStoredOutcome.
func decodeOutcome(out ledger.Outcome, types protoregistry.MessageTypeResolver) (any, error) {
	m, st, err := protorecord.Decode(out, types)
	switch {
	case err != nil:
		return nil, err
	case st != nil:
		return nil, status.FromProto(st).Err()
	}
	return m, nil
}
