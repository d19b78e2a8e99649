package bench

import (
	"bytes"
	"encoding/json"

	jsoncanonicalizer "github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"

	"github.com/idemledger/idemledger/canonical"
)

// Impl is one implementation under test, wrapped to the shape of
// canonical.Transform: JSON text in, a fresh slice out, src untouched.
type Impl struct {
	// Name is the sub-benchmark name.
	Name string
	// Transform returns the canonical form of src, or an error.
	Transform func(src []byte) ([]byte, error)
	// Floor marks encoding/json.Compact: it only drops whitespace, it does
	// not canonicalize, and it is there as the speed no canonicalizer can
	// be expected to pass.
	Floor bool
}

// Peers returns the other Go canonicalizers and the Compact floor.
func Peers() []Impl {
	return []Impl{
		{Name: "jsontext", Transform: viaJSONText},
		{Name: "cyberphone", Transform: jsoncanonicalizer.Transform},
		{Name: "gowebpki", Transform: jcs.Transform},
		{Name: "compact", Transform: viaCompact, Floor: true},
	}
}

// viaJSONText runs jsontext.Value.Canonicalize (RFC 8785 mode of
// github.com/go-json-experiment/json). It rewrites its receiver in place, so
// it gets a copy: like the others it must leave src alone and hand back a
// slice the caller owns. The copy is one allocation and one memmove.
func viaJSONText(src []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(src))
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	return v, nil
}

// viaCompact is encoding/json.Compact into a buffer already of the input's
// size, so that it measures the work and not the buffer's growth.
func viaCompact(src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, len(src)))
	if err := json.Compact(buf, src); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Ours returns idemledger's canonical.Transform, the subject of the
// benchmarks.
func Ours() Impl {
	return Impl{Name: "idemledger", Transform: canonical.Transform}
}

// Implementations returns everything measured, ours first, then the peers
// and the floor.
func Implementations() []Impl {
	return append([]Impl{Ours()}, Peers()...)
}
