package idemfiber

import (
	"bytes"
	"net/http"
	"net/url"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/idemhttp"
)

// WriteProblem is the default Options.Refuse: it answers ref.Status with
// the RFC 9457 problem document that idemhttp.WriteProblem writes for
// ref, byte for byte (application/problem+json, with the extension member
// "code" holding ref.Code), so that a client of a Fiber service and of a
// net/http service that share a ledger reads one format.
func WriteProblem(c fiber.Ctx, ref idemhttp.Refusal) error {
	rec := &recorder{header: make(http.Header)}
	r := &http.Request{Method: c.Method(), URL: &url.URL{Path: c.Path()}, Header: make(http.Header)}
	idemhttp.WriteProblem(rec, r, ref)
	for name, values := range rec.header {
		if name == "Content-Length" {
			continue // fasthttp counts the body itself
		}
		c.Response().Header.Del(name)
		for _, v := range values {
			c.Response().Header.Add(name, v)
		}
	}
	c.Status(rec.status)
	return c.Send(rec.body.Bytes())
}

// recorder is an http.ResponseWriter that keeps what is written to it, to
// send it through Fiber.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
