package idemconnect

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// Ledger is what the interceptor needs of a ledger: the lifecycle's
// lease-mode operations ([lifecycle.Ledger]) and the longest key. A
// *[ledger.Ledger] of any driver implements it. An implementation must be
// safe for concurrent use.
type Ledger interface {
	lifecycle.Ledger
	// MaxKeyLength is the longest key Claim accepts, in bytes.
	MaxKeyLength() int
}

// HeaderName is the request header that carries the idempotency key, on
// every protocol (the gRPC metadata key idempotency-key is this header).
const HeaderName = "Idempotency-Key"

// ReplayedHeader is set to "true" on a replayed answer: in the response
// header, or in the metadata of a replayed error.
const ReplayedHeader = "Idempotent-Replayed"

// FailurePolicy says what the interceptor does when the ledger cannot be
// reached.
type FailurePolicy int

const (
	// FailClosed refuses the call with unavailable (the default).
	FailClosed FailurePolicy = iota
	// FailOpen runs the procedure unprotected, nothing stored. A ledger
	// that is not migrated (ledger.ErrNotMigrated) is refused all the same.
	FailOpen
)

// Defaults of Options.
const (
	// DefaultMaxOutcomeBytes is the default of Options.MaxOutcomeBytes.
	DefaultMaxOutcomeBytes = 4 << 20
	// DefaultInFlightRetryAfter is the default of
	// Options.InFlightRetryAfter.
	DefaultInFlightRetryAfter = time.Second
)

// Options configure NewInterceptor. Only Scope is required; every other
// zero value means the default in its comment.
type Options struct {
	// Scope returns the owner of the call's keys (a user, a tenant, an API
	// key ID) from the call's context and request header; keys of two
	// scopes never meet. An error that is a *connect.Error is answered as
	// it is (unauthenticated, say); any other, or a scope the ledger
	// refuses (ledger.CheckScope), with invalid_argument. Required.
	Scope func(ctx context.Context, procedure string, header http.Header) (string, error)

	// Procedures reports whether a procedure ("/package.Service/Method")
	// is protected. Default: every unary procedure.
	Procedures func(procedure string) bool

	// Required refuses a protected call without a key with
	// invalid_argument. By default it runs unprotected.
	Required bool

	// ShouldStore reports whether an answer with this code (0 for
	// success) is stored and replayed; when it reports false the key is
	// released, so a retry runs the procedure again. Default StoreDefault.
	// After Commit, every answer is stored.
	ShouldStore func(connect.Code) bool

	// MaxOutcomeBytes bounds the encoded answer stored, in bytes. A larger
	// one is still sent, and a marker stored instead: retries get
	// data_loss rather than a second run. Default DefaultMaxOutcomeBytes.
	MaxOutcomeBytes int

	// FailurePolicy says what happens when the ledger cannot be reached.
	// Default FailClosed.
	FailurePolicy FailurePolicy

	// Types resolves the type URL of a stored response on replay. Default
	// protoregistry.GlobalTypes, where generated code registers every
	// message.
	Types protoregistry.MessageTypeResolver

	// InFlightRetryAfter caps the delay of an in-flight refusal's RetryInfo
	// and Retry-After, which is otherwise the rest of the first call's
	// lease. Default DefaultInFlightRetryAfter (1 s).
	InFlightRetryAfter time.Duration

	// Wait is how long a call whose key is in flight waits for the first
	// call's answer before it is refused with unavailable
	// (ReasonInFlight): it gets the first answer the moment it is stored,
	// or runs itself when the first call releases the key, and never
	// waits past its own deadline. Zero or negative (the default) refuses
	// at once, so that a client with a short deadline hears "come back"
	// instead of deadline_exceeded.
	Wait time.Duration

	// Recover lets a retry run the procedure again after an earlier call
	// passed its commit point (Commit) and vanished without storing an
	// answer, once that call's lease ran out; the procedure learns it from
	// Recovered. Without it such retries get data_loss.
	Recover bool

	// Observer receives the events of protected calls (see the package
	// doc). Default nil: no events.
	Observer ledger.Observer
}

// StoreDefault is the default Options.ShouldStore: it stores success and
// the codes a retry would only repeat (invalid_argument, not_found,
// already_exists, permission_denied, failed_precondition, out_of_range,
// unimplemented, unauthenticated), and releases the key for the transient
// ones, as idemgrpc.StoreDefault does.
func StoreDefault(c connect.Code) bool {
	switch c {
	case 0, connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeAlreadyExists,
		connect.CodePermissionDenied, connect.CodeFailedPrecondition, connect.CodeOutOfRange,
		connect.CodeUnimplemented, connect.CodeUnauthenticated:
		return true
	}
	return false
}

func (o Options) withDefaults() Options {
	if o.Procedures == nil {
		o.Procedures = func(string) bool { return true }
	}
	if o.ShouldStore == nil {
		o.ShouldStore = StoreDefault
	}
	if o.MaxOutcomeBytes == 0 {
		o.MaxOutcomeBytes = DefaultMaxOutcomeBytes
	}
	if o.Types == nil {
		o.Types = protoregistry.GlobalTypes
	}
	if o.InFlightRetryAfter == 0 {
		o.InFlightRetryAfter = DefaultInFlightRetryAfter
	}
	return o
}
