package idemhttp

import (
	"net/http"

	"github.com/idemledger/idemledger/hash"
)

// fingerprint is the default Options.Fingerprint: hash.Request over the
// method, the path with query as sent (RequestURI), the Content-Type field
// and the body. A JSON body enters in canonical form, so a retry that
// reorders members or respaces matches, unless canonical form would change
// a number's decimal value (9007199254740993), in which case its raw bytes
// enter and two different amounts never share a fingerprint.
func fingerprint(r *http.Request, body []byte) (hash.Digest, error) {
	return hash.Request(r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), body), nil
}
