package idemgrpc

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemledger/idemledger/ledger"
)

// MetadataKey is the metadata name that carries the idempotency key.
const MetadataKey = "idempotency-key"

// ReplayedKey is the header metadata that the server interceptor sets,
// with the value "true", on every replayed answer.
const ReplayedKey = "idempotent-replayed"

// PushbackKey is the trailer metadata that the server interceptor sets on
// its in-flight answer: the milliseconds to wait before a retry, as gRPC's
// retry design reads it (gRFC A6, "Pushback"), so that grpc-go's own retry
// policy waits as long as the RetryInfo detail says.
const PushbackKey = "grpc-retry-pushback-ms"

// Defaults of ServerOptions.
const (
	// DefaultMaxOutcomeBytes is the default of
	// ServerOptions.MaxOutcomeBytes: 4 MiB, the largest message a gRPC
	// client receives by default.
	DefaultMaxOutcomeBytes = 4 << 20
	// DefaultInFlightRetryAfter is the default of
	// ServerOptions.InFlightRetryAfter.
	DefaultInFlightRetryAfter = time.Second
)

// FailurePolicy says what the server interceptor does when the ledger
// cannot be reached.
type FailurePolicy int

const (
	// FailClosed refuses the call with UNAVAILABLE
	// (IDEMPOTENCY_STORE_UNAVAILABLE); the handler does not run. The
	// default.
	FailClosed FailurePolicy = iota
	// FailOpen runs the handler without protection: a retry may run it
	// again. Each such call is reported as a store unavailable event. A
	// ledger whose table is missing (ledger.ErrNotMigrated) is refused as
	// with FailClosed: that is a deployment error, not an outage.
	FailOpen
)

// ServerOptions configure UnaryServerInterceptor. Only Scope is required;
// every other zero value means the default in its comment. They are read
// once, when the interceptor is made.
type ServerOptions struct {
	// Scope returns the owner of the call's keys (a user, a tenant, an API
	// key ID) from the call's context (its metadata, its peer, values put
	// there by an authentication interceptor that runs before this one);
	// keys of two scopes never meet. It is called only for a protected
	// call that carries a key. An error that holds a gRPC status
	// (status.FromError) is answered with it, UNAUTHENTICATED for
	// instance; any other error, or a scope the ledger refuses
	// (ledger.CheckScope), with INVALID_ARGUMENT. Required.
	Scope func(ctx context.Context, fullMethod string) (string, error)

	// Methods reports whether a method ("/package.Service/Method") is
	// protected. Default: every unary method. Calls of other methods pass
	// through, key or no key.
	Methods func(fullMethod string) bool

	// Required refuses a protected call without a key with
	// INVALID_ARGUMENT. By default it runs unprotected.
	Required bool

	// Recover lets a retry run the handler again after an earlier call
	// passed its commit point (Commit) and vanished without storing an
	// answer (its process died), once that call's lease has run out. The
	// handler learns it from Recovered and must look its effect up rather
	// than make it again. Without Recover such retries get DATA_LOSS
	// (ReasonOutcomeNotStored).
	Recover bool

	// ShouldStore reports whether an answer with this code is stored and
	// replayed; when it reports false the key is released, so a retry runs
	// the handler again. Default StoreDefault. After Commit, every answer
	// is stored.
	ShouldStore func(codes.Code) bool

	// MaxOutcomeBytes bounds the encoded answer stored, in bytes. A larger
	// one is still sent to the client, and a marker is stored instead, so
	// that retries get DATA_LOSS rather than a second run. Default
	// DefaultMaxOutcomeBytes (4 MiB).
	MaxOutcomeBytes int

	// FailurePolicy says what happens when the ledger cannot be reached.
	// Default FailClosed. A busy store (ledger.ErrRetryable) is always
	// refused.
	FailurePolicy FailurePolicy

	// Types resolves the type URL of a stored response to its message
	// type on replay. Default protoregistry.GlobalTypes, where generated
	// code registers every message.
	Types protoregistry.MessageTypeResolver

	// InFlightRetryAfter caps the RetryInfo delay of an in-flight refusal,
	// which is otherwise the rest of the first call's lease: most handlers
	// finish long before their lease runs out. Default
	// DefaultInFlightRetryAfter (1 s).
	//
	// A client's budget counts attempts as well as time: ClientOptions'
	// defaults (MaxAttempts 5) give up about 4 s after the first attempt
	// against the default delay, however long MaxElapsed is, while a call
	// whose server crashed holds its key for the whole lease. The package
	// documentation's Client section says what to raise to outlast it.
	InFlightRetryAfter time.Duration

	// Wait is how long a call whose key is in flight waits for the first
	// call's answer before it is refused with UNAVAILABLE
	// (ReasonInFlight): it gets the first answer the moment it is stored,
	// or runs itself when the first call releases the key, and never
	// waits past its own deadline. Zero or negative (the default) refuses
	// at once, so that a client with a short deadline hears "come back"
	// instead of DEADLINE_EXCEEDED.
	Wait time.Duration

	// Observer receives the events of protected calls (claimed, stored,
	// replayed, in flight, key reused, released, lease lost, store busy,
	// store unavailable), synchronously, on the call's goroutine or the
	// heartbeat's; the package doc says which event comes when and with
	// what. Events never hold the key or the scope. ledger.LogObserver
	// logs them with slog; ledger.Observers feeds several observers.
	// Default nil: no events.
	Observer ledger.Observer
}

// StoreDefault is the default ServerOptions.ShouldStore: it stores OK and
// the codes a retry would only repeat (INVALID_ARGUMENT, NOT_FOUND,
// ALREADY_EXISTS, PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE,
// UNIMPLEMENTED, UNAUTHENTICATED), and releases the key for the transient
// ones (CANCELLED, UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
// ABORTED, INTERNAL, UNAVAILABLE, DATA_LOSS).
func StoreDefault(c codes.Code) bool {
	switch c {
	case codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
		codes.PermissionDenied, codes.FailedPrecondition, codes.OutOfRange,
		codes.Unimplemented, codes.Unauthenticated:
		return true
	}
	return false
}

type serverConfig struct {
	ServerOptions
	maxKey int // the ledger's MaxKeyLength
}

func newServerConfig(o ServerOptions, maxKey int) *serverConfig {
	c := &serverConfig{ServerOptions: o, maxKey: maxKey}
	if c.Methods == nil {
		c.Methods = func(string) bool { return true }
	}
	if c.maxKey <= 0 {
		c.maxKey = ledger.DefaultMaxKeyLength
	}
	if c.ShouldStore == nil {
		c.ShouldStore = StoreDefault
	}
	if c.MaxOutcomeBytes <= 0 {
		c.MaxOutcomeBytes = DefaultMaxOutcomeBytes
	}
	if c.Types == nil {
		c.Types = protoregistry.GlobalTypes
	}
	if c.InFlightRetryAfter <= 0 {
		c.InFlightRetryAfter = DefaultInFlightRetryAfter
	}
	return c
}
