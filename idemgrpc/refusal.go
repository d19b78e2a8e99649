package idemgrpc

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail of every
// refusal of the server interceptor.
const ErrorDomain = "idemledger"

// The reasons of the ErrorInfo details, stable for clients to branch on
// (see the package doc for the code that goes with each).
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

// refusal returns a status error with an ErrorInfo detail, and a RetryInfo
// detail when retry is positive.
func refusal(code codes.Code, reason, msg string, retry time.Duration) error {
	st := status.New(code, msg)
	info := &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
	var err error
	if retry > 0 {
		st, err = st.WithDetails(info, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	} else {
		st, err = st.WithDetails(info)
	}
	if err != nil {
		// WithDetails fails only for an OK status, never made here.
		return status.Error(code, msg)
	}
	return st.Err()
}

// retryDelay returns the RetryInfo delay of a status, if it has one.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay.IsValid() {
			return max(ri.RetryDelay.AsDuration(), 0), true
		}
	}
	return 0, false
}
