package idemhttp

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/idemledger/idemledger/ledger"
)

// A TxHandler may sit under a Middleware, for instance one route of a
// ServeMux that the middleware wraps as a whole. The middleware then holds
// a lease-mode claim on the request's key while the TxHandler runs, and a
// TxHandler claiming the same key would find that claim and answer 409 to
// every request. So the middleware marks the request with the key it
// holds, and a TxHandler of the same ledger that sees its own scope and key
// marked records its transaction under a key derived from it instead. The
// route keeps exactly once for its database effects: a retry that the
// middleware lets through again (its completion was lost and its lease ran
// out) reaches the TxHandler, which replays its own record instead of
// running the handler a second time.

// underMiddleware reports whether a Middleware of l holds req's scope and
// key for r.
func underMiddleware[TTx any](r *http.Request, l *ledger.Ledger[TTx], req ledger.Request) bool {
	h := heldFrom(r.Context())
	return h != nil && h.run != nil && h.l == any(l) && h.req.Scope == req.Scope && h.req.Key == req.Key
}

// nestedPrefix begins the keys that a TxHandler under a Middleware records
// its transactions under.
const nestedPrefix = "idemhttp-tx:"

// nestedKey derives the key of a TxHandler's record under a Middleware that
// holds key: printable ASCII of fixed length (55 bytes) whatever key's
// length, so always a valid key, and never key itself. Only a client that
// sends such a string as its own key, in its own scope, could meet it.
func nestedKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return nestedPrefix + base64.RawURLEncoding.EncodeToString(sum[:])
}
