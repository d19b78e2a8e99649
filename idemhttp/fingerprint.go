package idemhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"mime"
	"net/http"
	"strings"

	"github.com/idemledger/idemledger/hash"
)

// fingerprint is the default Options.Fingerprint.
//
// Stand-in until hash.Request lands: method, target, media type essence and
// raw body, each length-prefixed under a version tag.
func fingerprint(r *http.Request, body []byte) (hash.Digest, error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	} else {
		ct = strings.ToLower(strings.TrimSpace(ct))
	}
	h := sha256.New()
	var n [8]byte
	for _, f := range [][]byte{[]byte("idemhttp-fp-0"), []byte(r.Method), []byte(r.URL.RequestURI()), []byte(ct), body} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	var d hash.Digest
	h.Sum(d[:0])
	return d, nil
}
