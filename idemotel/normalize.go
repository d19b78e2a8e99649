package idemotel

import (
	"strconv"
	"strings"

	"github.com/idemledger/idemledger/ledger"
)

// httpMethod returns the http.request.method value of m: m itself when it
// is one of the methods the semantic conventions know (RFC 9110's, PATCH
// and QUERY), matched case-sensitively, [Other] for any other method, and
// "" (no attribute) when m is empty. The method comes from the client, so
// passing it through unchecked would let anyone grow the number of series.
func httpMethod(m string) string {
	switch m {
	case "":
		return ""
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "DELETE":
		return "DELETE"
	case "HEAD":
		return "HEAD"
	case "OPTIONS":
		return "OPTIONS"
	case "CONNECT":
		return "CONNECT"
	case "TRACE":
		return "TRACE"
	case "QUERY":
		return "QUERY"
	}
	return Other
}

// httpRoute returns the http.route value of an event's Route: the route
// with the method of a net/http ServeMux pattern ("POST /orders/{id}")
// removed, since http.request.method carries it and http.route is the path
// template alone.
func httpRoute(r string) string {
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '/':
			return r // the path began: no method
		case ' ', '\t':
			return strings.TrimLeft(r[i:], " \t")
		}
	}
	return r
}

// grpcCodes are the names of gRPC's status codes, as the semantic
// conventions record them in rpc.response.status_code.
var grpcCodes = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// grpcCode returns the rpc.response.status_code value of a gRPC event's
// Status, and whether the event has one: has is Event.HasStatus. An event
// of a layer that does not set HasStatus is read as before it existed: a
// stored or replayed event always carries an outcome, so its 0 is OK,
// while any other event's 0 means none.
func grpcCode(kind ledger.EventKind, status int, has bool) (string, bool) {
	if status == 0 && !has && kind != ledger.EventStored && kind != ledger.EventReplayed {
		return "", false
	}
	if status >= 0 && status < len(grpcCodes) {
		return grpcCodes[status], true
	}
	return strconv.Itoa(status), true
}
