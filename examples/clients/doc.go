// Package clients proves, one test per client, what the common retrying
// HTTP clients do against a server protected by idemhttp, and the settings
// docs/clients.md's table recommends for each: stripe-go, hashicorp's
// go-retryablehttp, curl, and net/http's own resend of a request that
// carries an Idempotency-Key. (idemhttp.Transport, idemgrpc's client
// interceptor, grpc-go's retry policy and idemconnect's client interceptor
// are tested in their own packages.)
//
// The package has no API: the tests are its content.
package clients
