package idemgin

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
)

// unwritten is writer.size before the header is sent.
const unwritten = -1

// writer is the gin.ResponseWriter of the handlers inside the middleware:
// it writes to the middleware's http.ResponseWriter, and keeps Gin's
// habits, which its handlers rely on. The status set by WriteHeader is
// only sent with the first byte of the body, WriteHeaderNow or Flush (so
// Gin's renderers may still set Content-Type after c.Status), and Status,
// Size and Written report what was sent.
type writer struct {
	http.ResponseWriter
	status int
	size   int
}

var _ gin.ResponseWriter = (*writer)(nil)

func (w *writer) WriteHeader(code int) {
	if code > 0 && !w.Written() {
		w.status = code
	}
}

func (w *writer) WriteHeaderNow() {
	if !w.Written() {
		w.size = 0
		w.ResponseWriter.WriteHeader(w.status)
	}
}

func (w *writer) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

func (w *writer) WriteString(s string) (int, error) {
	w.WriteHeaderNow()
	n, err := io.WriteString(w.ResponseWriter, s)
	w.size += n
	return n, err
}

func (w *writer) Status() int   { return w.status }
func (w *writer) Size() int     { return w.size }
func (w *writer) Written() bool { return w.size != unwritten }

// Flush sends the header and flushes through the middleware's writer, which
// learns of it (idemhttp then does not store the answer).
func (w *writer) Flush() {
	w.WriteHeaderNow()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over through the middleware's writer, which
// learns of it (idemhttp then releases the key).
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// CloseNotify is for gin.ResponseWriter (http.CloseNotifier is
// deprecated): it forwards when the middleware's writer has it, and
// otherwise returns a channel that never fires; use the request's context.
func (w *writer) CloseNotify() <-chan bool {
	if cn, ok := w.ResponseWriter.(http.CloseNotifier); ok {
		return cn.CloseNotify()
	}
	return make(chan bool)
}

func (w *writer) Pusher() http.Pusher {
	p, _ := w.ResponseWriter.(http.Pusher)
	return p
}

// Unwrap returns the middleware's writer, for http.ResponseController.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
