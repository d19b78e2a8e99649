package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The headers column holds Outcome.Header as a JSON object: each name
// (valid UTF-8: Complete refuses others) maps to the list of its values,
// in their order, or to null for a nil list. A value that is valid UTF-8
// is a JSON string. A value that is not (a field value may carry obs-text,
// bytes 0x80 to 0xFF: RFC 9110 Section 5.5) is the object {"b64": "..."},
// its bytes in standard base64 with padding (RFC 4648 Section 4), because
// a JSON string holds text only and encoding/json would replace each
// invalid byte with U+FFFD. A header whose values are all valid UTF-8 is
// therefore stored exactly as json.Marshal writes it, as the releases
// before the byte form did, and every record they stored reads back as it
// always has. A reader takes either form for any value (and a null in a
// list as the empty string, as encoding/json always read it); anything
// else is an error. Releases before the byte form fail to read a record
// that holds it ("stored headers").
//
// headerJSON is the headers column for out: nil for a nil Header (NULL),
// json.Marshal's bytes when every value is valid UTF-8, names sorted and
// each name's values in their order, and the same with the byte form for
// the values that are not valid UTF-8.
func headerJSON(out Outcome) ([]byte, error) {
	if out.Header == nil {
		return nil, nil
	}
	for _, values := range out.Header {
		for _, v := range values {
			if !utf8.ValidString(v) {
				return json.Marshal(byteForm(out.Header))
			}
		}
	}
	return json.Marshal(out.Header)
}

// byteForm is h with each value as a headerValue, which marshals to the
// byte form when the value is not valid UTF-8.
func byteForm(h map[string][]string) map[string][]headerValue {
	m := make(map[string][]headerValue, len(h))
	for name, values := range h {
		if values == nil {
			m[name] = nil
			continue
		}
		vs := make([]headerValue, len(values))
		for i, v := range values {
			vs[i] = headerValue(v)
		}
		m[name] = vs
	}
	return m
}

// decodeHeader reads the headers column: nil for the JSON null, which
// encoding/json reads so too. A column as headerJSON writes it for plain
// values (no escapes, no byte form) is read by decodePlain, which every
// replay meets and which is several times faster than encoding/json.
// Otherwise, without a '{' after the first byte there is no byte form,
// and encoding/json reads the column straight into the header, in half
// the time of the general path. FuzzStoredHeader checks that the three
// paths agree wherever the faster ones answer.
func decodeHeader(b []byte) (map[string][]string, error) {
	if h, ok := decodePlain(b); ok {
		return h, nil
	}
	if len(b) > 0 && bytes.IndexByte(b[1:], '{') < 0 {
		var h map[string][]string
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, err
		}
		return h, nil
	}
	return decodeByteForm(b)
}

// decodePlain reads the compact form json.Marshal writes for an
// map[string][]string whose names and values need no escape: null, or an object
// of names mapping to null or to arrays of strings, without whitespace.
// A string with a backslash, a control character or invalid UTF-8, and
// anything else it does not expect, makes it answer false, and the caller
// falls back to encoding/json; when it answers true, the header is the one
// json.Unmarshal reads (a later duplicate name replaces an earlier one).
func decodePlain(b []byte) (map[string][]string, bool) {
	if string(b) == "null" {
		return nil, true
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	h := make(map[string][]string)
	i := 1
	if b[i] == '}' {
		return h, i+1 == len(b)
	}
	for {
		name, n, ok := plainString(b, i)
		if !ok || n >= len(b) || b[n] != ':' {
			return nil, false
		}
		i = n + 1
		switch {
		case bytes.HasPrefix(b[i:], []byte("null")):
			h[name] = nil
			i += len("null")
		case i < len(b) && b[i] == '[':
			i++
			values := []string{}
			if i < len(b) && b[i] == ']' {
				i++
			} else {
				for {
					v, n, ok := plainString(b, i)
					if !ok || n >= len(b) {
						return nil, false
					}
					values = append(values, v)
					i = n + 1
					if b[n] == ']' {
						break
					}
					if b[n] != ',' {
						return nil, false
					}
				}
			}
			h[name] = values
		default:
			return nil, false
		}
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return h, i+1 == len(b)
		default:
			return nil, false
		}
	}
}

// plainString reads the JSON string that starts at b[i] when it holds no
// escape, no control character and only valid UTF-8; it returns the string
// and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return "", 0, false
	}
	s := b[i+1 : i+1+end]
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return "", 0, false
		}
	}
	if !utf8.Valid(s) {
		return "", 0, false
	}
	return string(s), i + end + 2, true
}

// decodeByteForm is decodeHeader for any column, with or without the byte
// form.
func decodeByteForm(b []byte) (map[string][]string, error) {
	var m map[string][]headerValue
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	h := make(map[string][]string, len(m))
	for name, vs := range m {
		if vs == nil {
			h[name] = nil
			continue
		}
		values := make([]string, len(vs))
		for i, v := range vs {
			values[i] = string(v)
		}
		h[name] = values
	}
	return h, nil
}

// headerValue is one field value in the headers column: a JSON string, or
// the byte form {"b64": "..."}.
type headerValue string

// MarshalJSON writes v as a JSON string when it is valid UTF-8, in the byte
// form otherwise.
func (v headerValue) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(v)) {
		return json.Marshal(string(v))
	}
	return json.Marshal(struct {
		B64 string `json:"b64"`
	}{base64.StdEncoding.EncodeToString([]byte(v))})
}

// UnmarshalJSON reads a JSON string as encoding/json does, null as
// encoding/json reads it into a string (no change: the empty string), and
// the byte form strictly: one member, named exactly "b64", whose string is
// standard base64 as EncodeToString writes it (padded, no line breaks, no
// stray bits). Anything else is an error.
func (v *headerValue) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = headerValue(s)
		return nil
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '{':
		s, err := b64Member(b)
		if err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || base64.StdEncoding.EncodeToString(raw) != s {
			return errors.New("a header value's b64 is not standard base64")
		}
		*v = headerValue(raw)
		return nil
	}
	return errors.New(`a header value is neither a string nor {"b64": string}`)
}

// b64Member returns the string of the object b when its only member is
// "b64" with a string value.
func b64Member(b []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	bad := errors.New(`a header value's object is not {"b64": string}`)
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return "", bad
	}
	if tok, err := d.Token(); err != nil || tok != "b64" {
		return "", bad
	}
	tok, err := d.Token()
	s, ok := tok.(string)
	if err != nil || !ok {
		return "", bad
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim('}') {
		return "", bad
	}
	return s, nil
}
