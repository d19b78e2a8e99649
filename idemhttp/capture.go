package idemhttp

import (
	"bufio"
	"net"
	"net/http"
	"strings"
)

// capture is the http.ResponseWriter the handler sees. It writes through to
// the real writer, so the client gets the response as the handler makes it,
// and keeps a copy of what a replay needs: the final status, the allowed
// header lines as they stood when the header was sent, and the body up to a
// limit.
//
// It implements Flush and Hijack itself, rather than leaving them to
// http.ResponseController's Unwrap walk, because it has to know that they
// happened: a flushed or hijacked response is not stored.
type capture struct {
	w     http.ResponseWriter
	allow map[string]bool // canonical header names that may be stored
	limit int64           // body bytes kept at most

	wroteHeader bool
	status      int
	sent        http.Header // the header map as it stood at WriteHeader
	body        []byte
	overflow    bool // the body grew past limit; body was dropped
	flushed     bool
	hijacked    bool
	trailers    bool // trailers were announced: a replay could not send them
}

func newCapture(w http.ResponseWriter, allow map[string]bool, limit int64) *capture {
	return &capture{w: w, allow: allow, limit: limit}
}

func (c *capture) Header() http.Header { return c.w.Header() }

func (c *capture) WriteHeader(code int) {
	if c.hijacked {
		// Let net/http log its complaint about the hijacked connection.
		c.w.WriteHeader(code)
		return
	}
	if !c.wroteHeader && code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// An informational response (103 Early Hints...) goes out ahead of
		// the final one and is not part of the outcome.
		c.w.WriteHeader(code)
		return
	}
	if !c.wroteHeader {
		c.wroteHeader = true
		c.status = code
		c.snapshot()
	}
	c.w.WriteHeader(code)
}

// snapshot copies the header map as it is now: what net/http sends is the
// map at the time of WriteHeader.
func (c *capture) snapshot() {
	c.sent = c.w.Header().Clone()
	if c.sent == nil {
		c.sent = make(http.Header)
	}
	for name := range c.sent {
		if name == "Trailer" || strings.HasPrefix(name, http.TrailerPrefix) {
			c.trailers = true
		}
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if !c.wroteHeader && !c.hijacked {
		c.WriteHeader(http.StatusOK)
	}
	n, err := c.w.Write(p)
	if !c.overflow && bodyAllowed(c.status) {
		// The handler's output is recorded whole even when the client has
		// gone (n < len(p)): the outcome is what the handler produced, and a
		// retry from the same client must get all of it.
		if int64(len(c.body))+int64(len(p)) > c.limit {
			c.overflow = true
			c.body = nil
		} else {
			c.body = append(c.body, p...)
		}
	}
	return n, err
}

// Flush implements [http.Flusher]. A flushed response is not stored: the
// handler is streaming, and a replay of the bytes would not be the same
// exchange.
func (c *capture) Flush() {
	_ = c.FlushError()
}

// FlushError is what [http.ResponseController.Flush] calls first.
func (c *capture) FlushError() error {
	if !c.wroteHeader && !c.hijacked {
		c.WriteHeader(http.StatusOK)
	}
	c.flushed = true
	return http.NewResponseController(c.w).Flush()
}

// Hijack implements [http.Hijacker]. A hijacked connection is the handler's;
// nothing about it is stored.
func (c *capture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.w).Hijack()
	if err == nil {
		c.hijacked = true
	}
	return conn, rw, err
}

// Unwrap lets [http.ResponseController] reach the real writer for the
// methods capture does not intercept (deadlines, full duplex).
func (c *capture) Unwrap() http.ResponseWriter { return c.w }

// finish is called when the handler has returned normally. A handler that
// wrote nothing gets a 200 with the header map as it stands now, which is
// what net/http sends then.
func (c *capture) finish() {
	if !c.wroteHeader && !c.hijacked {
		c.wroteHeader = true
		c.status = http.StatusOK
		c.snapshot()
	}
	// Trailers may also be set, undeclared, after the header went out.
	for name := range c.w.Header() {
		if strings.HasPrefix(name, http.TrailerPrefix) {
			c.trailers = true
		}
	}
}

// storable reports whether the response can be replayed faithfully.
// A 101 Switching Protocols is not: the connection became something else.
func (c *capture) storable() bool {
	return !c.flushed && !c.hijacked && !c.overflow && !c.trailers && c.status >= 200
}

// outcomeHeader is the header to store.
func (c *capture) outcomeHeader() http.Header {
	return storedHeader(c.sent, c.allow, c.body)
}

// storedHeader returns the lines of sent (the header map as it went out)
// that allow names. When the handler wrote a body without a Content-Type,
// net/http sniffed one for the client (without touching the handler's map);
// the same sniff here keeps the replay equal. A Content-Type key with no
// values, the documented way to stop sniffing, stops it here too, and the
// replay does likewise.
func storedHeader(sent http.Header, allow map[string]bool, body []byte) http.Header {
	h := make(http.Header)
	for name, values := range sent {
		if allow[name] && len(values) > 0 {
			h[name] = append([]string(nil), values...)
		}
	}
	if _, typed := sent["Content-Type"]; !typed && len(body) > 0 && allow["Content-Type"] {
		h.Set("Content-Type", http.DetectContentType(body))
	}
	return h
}

// bodyAllowed reports whether status may carry a body (RFC 9110 Sections
// 15.2, 15.3.5 and 15.4.5).
func bodyAllowed(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
}
