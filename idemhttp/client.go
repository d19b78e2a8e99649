package idemhttp

import (
	"net/http"

	"github.com/idemledger/idemledger/idemclient"
)

// The client side moved to package idemclient, which links neither the
// ledger nor a database; these names stay for the programs that use them
// from here.

// Transport is [idemclient.Transport].
type Transport = idemclient.Transport

// Attempt is [idemclient.Attempt].
type Attempt = idemclient.Attempt

// TransportError is [idemclient.TransportError].
type TransportError = idemclient.TransportError

// Default limits of Transport (idemclient's).
const (
	DefaultMaxAttempts    = idemclient.DefaultMaxAttempts
	DefaultMaxElapsed     = idemclient.DefaultMaxElapsed
	DefaultInitialBackoff = idemclient.DefaultInitialBackoff
	DefaultMaxBackoff     = idemclient.DefaultMaxBackoff
)

// DefaultRetryStatuses is [idemclient.DefaultRetryStatuses].
var DefaultRetryStatuses = idemclient.DefaultRetryStatuses

// ErrAttemptTimeout is [idemclient.ErrAttemptTimeout].
var ErrAttemptTimeout = idemclient.ErrAttemptTimeout

// NewKey is [idemclient.NewKey]: a fresh random key.
func NewKey() (string, error) { return idemclient.NewKey() }

// GenerateKey is [idemclient.GenerateKey].
func GenerateKey() string { return idemclient.GenerateKey() }

// SetKey is [idemclient.SetKey]: it writes key into h as an sf-string.
func SetKey(h http.Header, key string) error { return idemclient.SetKey(h, key) }
