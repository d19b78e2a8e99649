package idemhttp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/iotest"
)

// TestReadBody: the body is read whole up to MaxBodyBytes, whatever the
// reader's pace and whether its length was declared, and one byte more is
// refused with *http.MaxBytesError.
func TestReadBody(t *testing.T) {
	const max = 1000
	cfg := &config{maxBody: max}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"data with EOF", iotest.DataErrReader},
		{"a byte at a time", iotest.OneByteReader},
		{"half at a time", iotest.HalfReader},
	}
	for _, size := range []int{0, 1, 511, 512, 513, max - 1, max, max + 1, 3 * max} {
		for _, declared := range []bool{true, false} {
			for _, rd := range readers {
				name := strconv.Itoa(size) + " bytes, declared " + strconv.FormatBool(declared) + ", " + rd.name
				want := bytes.Repeat([]byte("x"), size)
				r := &http.Request{Body: io.NopCloser(rd.wrap(bytes.NewReader(want))), ContentLength: -1}
				if declared {
					r.ContentLength = int64(size)
				}
				got, err := cfg.readBody(r)
				var tooBig *http.MaxBytesError
				switch {
				case size > max && (!errors.As(err, &tooBig) || tooBig.Limit != max):
					t.Errorf("%s: got %d bytes, error %v; want *http.MaxBytesError with limit %d", name, len(got), err, max)
				case size <= max && (err != nil || !bytes.Equal(got, want)):
					t.Errorf("%s: got %d bytes, error %v; want the %d bytes", name, len(got), err, size)
				}
			}
		}
	}
	// A body that fails part way is an error, not a short body.
	failing := &http.Request{Body: io.NopCloser(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(io.ErrUnexpectedEOF))), ContentLength: 10}
	if got, err := cfg.readBody(failing); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("failing body: got %q, error %v; want io.ErrUnexpectedEOF", got, err)
	}
}
