// Package idemclient is the client side of idempotency keys, usable on its
// own: Transport, an http.RoundTripper that gives unsafe requests a key and
// retries them safely with it (in flight, busy, dropped connections; never
// a replayed answer), [NewKey], and [SetKey], which writes a key as the
// draft-ietf-httpapi-idempotency-key-header wants it. It links neither
// the ledger nor any database: a program that only calls a protected
// service imports this package alone. Package idemhttp, the server side,
// keeps the same names as aliases.
package idemclient
