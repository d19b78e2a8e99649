// Package protorecord is what idemgrpc and idemconnect share of a
// protobuf call: its fingerprint, and the ledger record of its answer (a
// response message or a google.rpc.Status). Both integrations use the same
// layouts, so a record written through one replays through the other: a
// connect-go server and a grpc-go server on one ledger answer a key alike.
//
// It is a module of its own, so that the main module's go.mod does not
// list protobuf.
package protorecord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// fingerprintTag starts the input of every fingerprint of layout version
// 1; a later layout gets a new tag, and an HTTP request fingerprint
// (hash.Request) has another one, so no two schemes share a digest.
const fingerprintTag = "idemledger/grpc/v1\x00"

// ErrNotProto is wrapped by Fingerprint's and Encode's errors when a
// message is not a protobuf message.
var ErrNotProto = errors.New("not a protobuf message")

// ErrStoredOutcome is wrapped by Decode's errors: the record holds no
// answer of this layout (an HTTP answer, a ledger.Mutate value), or one
// whose response type the resolver does not know.
var ErrStoredOutcome = errors.New("stored outcome is not a protobuf call's answer")

// deterministic writes map entries in key order, so that equal messages
// encode alike within one binary.
var deterministic = proto.MarshalOptions{Deterministic: true}

// Fingerprint returns the fingerprint of a unary call: the SHA-256 digest
// (hash.Bytes) of the tag "idemledger/grpc/v1" 0x00, then the procedure
// ("/package.Service/Method") and the request's deterministic protobuf
// encoding, each as an 8-byte big-endian length followed by its bytes.
func Fingerprint(procedure string, req any) (hash.Digest, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return hash.Digest{}, fmt.Errorf("%w: %T", ErrNotProto, req)
	}
	body, err := deterministic.Marshal(m)
	if err != nil {
		return hash.Digest{}, fmt.Errorf("fingerprint: %w", err)
	}
	buf := make([]byte, 0, len(fingerprintTag)+16+len(procedure)+len(body))
	buf = append(buf, fingerprintTag...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(procedure)))
	buf = append(buf, procedure...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
	buf = append(buf, body...)
	return hash.Bytes(buf), nil
}

// Kind is the ledger.Outcome.Kind of the records of this layout: Status
// is the gRPC code (0 for OK), and Body is, for OK, a google.protobuf.Any
// holding the response and otherwise a google.rpc.Status, both in
// deterministic encoding. A later layout gets another kind.
const Kind = "grpc"

// legacyHeader marks the records of this layout completed before schema
// version 3, which have no kind: a header with the value legacyVersion. The
// name is idemgrpc's, which wrote the first such records.
const (
	legacyHeader  = "Idemgrpc-Outcome"
	legacyVersion = "1"
)

// typeURLPrefix is the usual prefix of a google.protobuf.Any type URL.
const typeURLPrefix = "type.googleapis.com/"

// EncodeResponse is the record of a successful call's response.
func EncodeResponse(resp any) (ledger.Outcome, error) {
	m, ok := resp.(proto.Message)
	if !ok {
		return ledger.Outcome{}, fmt.Errorf("%w: response %T", ErrNotProto, resp)
	}
	value, err := deterministic.Marshal(m)
	if err == nil {
		name := string(m.ProtoReflect().Descriptor().FullName())
		var body []byte
		if body, err = deterministic.Marshal(&anypb.Any{TypeUrl: typeURLPrefix + name, Value: value}); err == nil {
			return ledger.Outcome{Kind: Kind, Body: body}, nil
		}
	}
	return ledger.Outcome{}, fmt.Errorf("encoding the outcome: %w", err)
}

// EncodeStatus is the record of a failed call's status; st.Code is not 0.
func EncodeStatus(st *spb.Status) (ledger.Outcome, error) {
	body, err := deterministic.Marshal(st)
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("encoding the outcome: %w", err)
	}
	return ledger.Outcome{Kind: Kind, Status: int(st.Code), Body: body}, nil
}

// Decode reads a record back: the response (made from the type types finds
// for its type URL), or the status of a failed call. Errors wrap
// ErrStoredOutcome.
func Decode(out ledger.Outcome, types protoregistry.MessageTypeResolver) (proto.Message, *spb.Status, error) {
	if out.Kind == "" {
		if v := http.Header(out.Header).Values(legacyHeader); len(v) != 1 || v[0] != legacyVersion {
			return nil, nil, fmt.Errorf("%w: %w", ErrStoredOutcome, &ledger.KindError{Want: Kind})
		}
	} else if out.Kind != Kind {
		return nil, nil, fmt.Errorf("%w: %w", ErrStoredOutcome, &ledger.KindError{Kind: out.Kind, Want: Kind})
	}
	if out.Status == 0 {
		var a anypb.Any
		if err := proto.Unmarshal(out.Body, &a); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrStoredOutcome, err)
		}
		mt, err := types.FindMessageByURL(a.TypeUrl)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: response type %q: %w", ErrStoredOutcome, a.TypeUrl, err)
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(a.Value, m); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrStoredOutcome, err)
		}
		return m, nil, nil
	}
	var st spb.Status
	if err := proto.Unmarshal(out.Body, &st); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrStoredOutcome, err)
	}
	if st.Code != int32(out.Status) || st.Code == 0 {
		return nil, nil, fmt.Errorf("%w: status %d with code %d", ErrStoredOutcome, out.Status, st.Code)
	}
	return nil, &st, nil
}
