// Package idemgin runs idemledger's HTTP middleware in a Gin engine.
//
// It is a Go module of its own (github.com/idemledger/idemledger/idemgin),
// so that Gin stays out of the main module's go.mod.
//
// Wrap turns a net/http middleware, idemhttp.Middleware's result, into a
// gin.HandlerFunc. The contract is idemhttp's, not a second implementation
// of it: the same answers (400 for a bad key, 409 with Retry-After while
// the first request runs, 422 for a key reused with another request, 503
// when the ledger is unreachable), the same replay of the stored status,
// allowed headers and body with Idempotent-Replayed: true, the same release
// of the key when a handler panics or answers a status that is not stored.
// See package idemhttp for all of it.
//
//	mw := idemhttp.Middleware(l, idemhttp.Options{
//		Scope: func(r *http.Request) (string, error) {
//			c, _ := idemgin.Context(r)
//			return c.GetString("tenant"), nil
//		},
//	})
//	r := gin.New()
//	r.Use(gin.Recovery(), auth, idemgin.Wrap(mw))
//
// The handlers after Wrap in the chain run inside the middleware: they see
// the request whose body the middleware read (the same bytes), and write
// through a gin.ResponseWriter that the middleware records. When the
// middleware answers by itself (a refusal or a replay), the rest of the
// chain is aborted. Those handlers reach the request's claim through
// c.Request.Context(), as net/http handlers do through r.Context():
// idemhttp.Commit marks the commit point, idemhttp.Step runs a recorded
// step (see idemhttp). Context gives the Options.Scope function the
// *gin.Context, so the scope can come from what an earlier middleware put
// there with c.Set.
//
// Gin leaves http.Request.Pattern empty; Wrap sets it, on the request the
// middleware and the handlers after it see, to the Gin route the request
// matched, as net/http writes a pattern: "POST /payments/:id" (Pattern).
// The middleware's observers (ledger.Observer) then report a route with
// few values instead of the raw path. A pattern set before Gin, by a
// ServeMux in front of the engine, is kept.
//
// A request that matched no route passes through Wrap unprotected: Gin
// runs the r.Use middleware, Wrap among them, in the chain that answers
// 404 (or 405 with HandleMethodNotAllowed), and Wrap leaves it alone when
// c.FullPath() is empty, so no key is claimed, nothing is stored or
// replayed and the observers hear nothing; NoRoute and NoMethod handlers
// run unprotected too. As with Stripe, an answer is kept only once an
// endpoint started: in a rolling deploy, a POST to a route only the new
// version has, answered 404 by an old server, must not be answered 404 by
// the new servers for the record's lifetime.
//
// Put gin.Recovery before Wrap: a handler's panic releases the key and
// goes on, and Recovery answers it.
package idemgin
