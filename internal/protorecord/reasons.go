package protorecord

// Domain is the domain of the google.rpc.ErrorInfo detail of every refusal
// of idemgrpc's and idemconnect's server interceptors.
const Domain = "idemledger"

// The reasons of the ErrorInfo details, the same in both integrations so
// that a client branches alike on either.
const (
	ReasonKeyMissing       = "IDEMPOTENCY_KEY_MISSING"
	ReasonKeyInvalid       = "IDEMPOTENCY_KEY_INVALID"
	ReasonScope            = "IDEMPOTENCY_SCOPE"
	ReasonInFlight         = "IDEMPOTENCY_KEY_IN_FLIGHT"
	ReasonKeyReused        = "IDEMPOTENCY_KEY_REUSED"
	ReasonStoreBusy        = "IDEMPOTENCY_STORE_BUSY"
	ReasonStoreUnavailable = "IDEMPOTENCY_STORE_UNAVAILABLE"
	ReasonStoredOutcome    = "IDEMPOTENCY_STORED_OUTCOME"
	ReasonOutcomeTooLarge  = "IDEMPOTENCY_OUTCOME_TOO_LARGE"
	ReasonOutcomeNotStored = "IDEMPOTENCY_OUTCOME_NOT_STORED"
	ReasonNotProto         = "IDEMPOTENCY_NOT_PROTO"
)
