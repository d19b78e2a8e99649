package idemhttp_test

import (
	"fmt"
	"net/http"

	"github.com/idemledger/idemledger/idemclient"
	"github.com/idemledger/idemledger/idemhttp"
)

// The server reads back what the client wrote: the key, without the
// sf-string's quotes and escapes. A bare key with a space is one key; a
// bare comma is refused, saying what to do.
func ExampleParseKey() {
	h := http.Header{}
	_ = idemclient.SetKey(h, `order-17/"retry"`)
	key, err := idemhttp.ParseKey(h, idemhttp.KeyRules{Strict: true})
	fmt.Println(key, err)

	key, err = idemhttp.ParseKey(http.Header{"Idempotency-Key": {"order 42"}}, idemhttp.KeyRules{})
	fmt.Printf("%q %v\n", key, err)

	_, err = idemhttp.ParseKey(http.Header{"Idempotency-Key": {"order,42"}}, idemhttp.KeyRules{})
	fmt.Println(err)
	// Output:
	// order-17/"retry" <nil>
	// "order 42" <nil>
	// invalid Idempotency-Key: it holds a comma (offset 5) outside quotes, which is what a proxy makes of two Idempotency-Key lines; send such a key quoted, as an RFC 9651 string: "..."
}
