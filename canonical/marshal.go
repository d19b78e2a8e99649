package canonical

import (
	"encoding/json"
	"fmt"
)

// Marshal returns the canonical form of v: exactly Transform(json.Marshal(v)),
// so struct tags, MarshalJSON methods and the rest of encoding/json's rules
// apply. An error from [json.Marshal] is returned wrapped; so is a
// *[SyntaxError] when Transform refuses its output (a [json.RawMessage] or a
// MarshalJSON method can produce duplicate names), with Offset counted in
// that output.
func Marshal(v any) ([]byte, error) {
	return Options{}.Marshal(v)
}

// Marshal is the package-level Marshal with the limits of o.
func (o Options) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical: marshal: %w", err)
	}
	out, err := o.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("canonical: marshal: %w", err)
	}
	return out, nil
}
