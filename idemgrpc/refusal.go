package idemgrpc

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idemledger/idemledger/internal/protorecord"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail of every
// refusal of the server interceptor.
const ErrorDomain = protorecord.Domain

// The reasons of the ErrorInfo details, stable for clients to branch on
// (see the package doc for the code that goes with each); idemconnect
// uses the same.
const (
	ReasonKeyMissing       = protorecord.ReasonKeyMissing
	ReasonKeyInvalid       = protorecord.ReasonKeyInvalid
	ReasonScope            = protorecord.ReasonScope
	ReasonInFlight         = protorecord.ReasonInFlight
	ReasonKeyReused        = protorecord.ReasonKeyReused
	ReasonStoreBusy        = protorecord.ReasonStoreBusy
	ReasonStoreUnavailable = protorecord.ReasonStoreUnavailable
	ReasonStoredOutcome    = protorecord.ReasonStoredOutcome
	ReasonOutcomeTooLarge  = protorecord.ReasonOutcomeTooLarge
	ReasonOutcomeNotStored = protorecord.ReasonOutcomeNotStored
	ReasonNotProto         = protorecord.ReasonNotProto
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
