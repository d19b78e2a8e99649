package idemgrpc

import (
	"fmt"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/protorecord"
)

// ErrNotProto is wrapped by the error of Fingerprint, and answered
// INTERNAL by the server interceptor, when the request is not a protobuf
// message (a call made with another codec): it cannot be fingerprinted.
var ErrNotProto = protorecord.ErrNotProto

// Fingerprint returns the fingerprint of a unary call: the SHA-256 digest
// (hash.Bytes) of the tag "idemledger/grpc/v1" 0x00, then the full method
// name ("/package.Service/Method") and the request's deterministic protobuf
// encoding (proto.MarshalOptions{Deterministic: true}), each as an 8-byte
// big-endian length followed by its bytes, so that no two (method, message)
// pairs share an input. Deterministic encoding writes map entries in key
// order, so equal messages give equal fingerprints within one binary;
// unknown fields enter as received. idemconnect takes the same
// fingerprint of a Connect procedure, so both serve one ledger alike.
//
// It returns an error wrapping ErrNotProto when req is not a proto.Message,
// and the marshalling error (wrapped) when req cannot be encoded (a
// required field of a proto2 message is unset, say).
func Fingerprint(fullMethod string, req any) (hash.Digest, error) {
	d, err := protorecord.Fingerprint(fullMethod, req)
	if err != nil {
		return hash.Digest{}, fmt.Errorf("idemgrpc: %w", err)
	}
	return d, nil
}
