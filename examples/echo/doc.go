// Package echoexample shows, in tested examples, idemledger's HTTP
// middleware in an Echo application: echo.WrapMiddleware turns
// idemhttp.Middleware's result into Echo middleware, with idemhttp's
// contract unchanged (400, 409 with Retry-After, 422, 503; the stored
// status, allowed headers and body replayed with Idempotent-Replayed:
// true).
//
// One thing needs care. An Echo handler may return an error instead of
// writing a response (echo.NewHTTPError(400, ...)); Echo writes it with its
// HTTPErrorHandler only after the whole middleware chain has returned, so
// after idemhttp has finished recording: the client gets the 400, but the
// middleware saw no answer and stores an empty 200 for the retries. Write
// errors inside the wrapped chain: put a middleware right after
// echo.WrapMiddleware that hands the handler's error to c.Error and
// returns nil (errorsInside in the example). Then a 4xx error is stored
// and replayed like any answer, and a 5xx error releases the key so that a
// retry runs again.
//
// The package has no API: the examples are its content.
package echoexample
