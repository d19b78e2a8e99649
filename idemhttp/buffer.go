package idemhttp

import (
	"net/http"
)

// buffer is the http.ResponseWriter of TxHandler's handlers: it keeps the
// whole response, to be sent only once the transaction has committed. It
// has a header map of its own, so that a response that is thrown away
// leaves nothing (a Set-Cookie, say) on the real writer.
type buffer struct {
	live        http.Header // what the handler sees
	limit       int64
	wroteHeader bool
	status      int
	header      http.Header // the live map as it stood at WriteHeader
	body        []byte
	overflow    bool
}

func newBuffer(base http.Header, limit int64) *buffer {
	return &buffer{live: base.Clone(), limit: limit}
}

func (b *buffer) Header() http.Header { return b.live }

func (b *buffer) WriteHeader(code int) {
	if b.wroteHeader || (code >= 100 && code <= 199) {
		// Informational answers cannot go out ahead of a response that
		// is held back; a second WriteHeader is ignored as net/http does.
		return
	}
	b.wroteHeader = true
	b.status = code
	b.header = b.live.Clone()
	if b.header == nil {
		b.header = make(http.Header)
	}
}

func (b *buffer) Write(p []byte) (int, error) {
	if !b.wroteHeader {
		b.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(b.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if b.overflow {
		return len(p), nil
	}
	if int64(len(b.body))+int64(len(p)) > b.limit {
		// The response cannot be stored, and TxHandler answers 500
		// instead: no need to keep the bytes.
		b.overflow = true
		b.body = nil
		return len(p), nil
	}
	b.body = append(b.body, p...)
	return len(p), nil
}

func (b *buffer) finish() {
	if !b.wroteHeader {
		b.WriteHeader(http.StatusOK)
	}
}

func (b *buffer) tooLarge() bool { return b.overflow }

// outcomeHeader is the header to store: the allowed lines, with the
// Content-Type that net/http will sniff when the handler set none.
func (b *buffer) outcomeHeader(allow map[string]bool) http.Header {
	return storedHeader(b.header, allow, b.body)
}

// writeTo sends the buffered response, with the header as it stood at
// WriteHeader.
func (b *buffer) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for name := range h {
		if _, ok := b.header[name]; !ok {
			delete(h, name)
		}
	}
	for name, values := range b.header {
		h[name] = values
	}
	w.WriteHeader(b.status)
	if len(b.body) > 0 {
		_, _ = w.Write(b.body)
	}
}
