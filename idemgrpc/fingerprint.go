package idemgrpc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/idemledger/idemledger/hash"
)

// fingerprintTag starts the input of every gRPC fingerprint of layout
// version 1; a later layout gets a new tag, and an HTTP request fingerprint
// (hash.Request) has another one, so no two schemes share a digest.
const fingerprintTag = "idemledger/grpc/v1\x00"

// ErrNotProto is wrapped by the error of Fingerprint, and answered
// INTERNAL by the server interceptor, when the request is not a protobuf
// message (a call made with another codec): it cannot be fingerprinted.
var ErrNotProto = errors.New("idemgrpc: request is not a protobuf message")

// Fingerprint returns the fingerprint of a unary call: the SHA-256 digest
// (hash.Bytes) of the tag "idemledger/grpc/v1" 0x00, then the full method
// name ("/package.Service/Method") and the request's deterministic protobuf
// encoding (proto.MarshalOptions{Deterministic: true}), each as an 8-byte
// big-endian length followed by its bytes, so that no two (method, message)
// pairs share an input. Deterministic encoding writes map entries in key
// order, so equal messages give equal fingerprints within one binary;
// unknown fields enter as received.
//
// It returns an error wrapping ErrNotProto when req is not a proto.Message,
// and the marshalling error (wrapped) when req cannot be encoded (a
// required field of a proto2 message is unset, say).
func Fingerprint(fullMethod string, req any) (hash.Digest, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return hash.Digest{}, fmt.Errorf("%w: %T", ErrNotProto, req)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return hash.Digest{}, fmt.Errorf("idemgrpc: fingerprint: %w", err)
	}
	buf := make([]byte, 0, len(fingerprintTag)+16+len(fullMethod)+len(body))
	buf = append(buf, fingerprintTag...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(fullMethod)))
	buf = append(buf, fullMethod...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
	buf = append(buf, body...)
	return hash.Bytes(buf), nil
}
