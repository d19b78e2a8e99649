#!/usr/bin/env bash
# golden.sh computes the golden digests of request_test.go and derive_test.go
# from the byte layouts documented on hash.Request and hash.DeriveKey, with
# printf and sha256sum only, so that the goldens do not come from the code
# under test. Run: bash hash/testdata/golden.sh
set -euo pipefail
export LC_ALL=C

# field writes an 8-byte big-endian length, then the bytes of $1.
field() {
	local n
	n=$(printf '%s' "$1" | wc -c)
	printf "\\x00\\x00\\x00\\x00\\x$(printf %02x $((n >> 24 & 255)))\\x$(printf %02x $((n >> 16 & 255)))\\x$(printf %02x $((n >> 8 & 255)))\\x$(printf %02x $((n & 255)))"
	printf '%s' "$1"
}

# request METHOD TARGET ESSENCE FORM BODY (all already in their final form).
request() {
	{ printf 'idemledger/request/v1\0'; field "$1"; field "$2"; field "$3"; field "$4"; field "$5"; } | sha256sum | cut -d' ' -f1
}

# derive PART...
derive() {
	{ printf 'idemledger/derive-key/v1\0'; for p in "$@"; do field "$p"; done; } | sha256sum | cut -d' ' -f1
}

echo "request json:        $(request POST '/v1/payments?currency=eur&x=1' application/json canonical '{"a":1.5,"b":[true,null]}')"
echo "request inexact:     $(request POST /v1/payments application/json raw '{"amount":9007199254740993}')"
echo "request exact:       $(request POST /v1/payments application/json canonical '{"amount":9007199254740992}')"
echo "request suffix:      $(request PATCH /v1/items/7 application/merge-patch+json canonical '{"name":"é"}')"
echo "request text:        $(request PUT /notes/1 text/plain raw 'hello {"b":1, "a":2}')"
echo "request bad json:    $(request POST /v1/payments application/json raw '{"a":1,}')"
echo "request empty:       $(request GET / '' raw '')"
echo "request nonchar:     $(request POST /v1/notes application/json canonical $'{"a":"\xef\xbf\xbf","b":1}')"
echo "derive two parts:    $(derive msg-123 charge-card)"
echo "derive ab c:         $(derive ab c)"
echo "derive a bc:         $(derive a bc)"
echo "derive none:         $(derive)"
echo "derive one empty:    $(derive '')"
