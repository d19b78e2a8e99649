package idemfiber_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/idempotency"
	"github.com/valyala/fasthttp"

	"github.com/idemledger/idemledger/idemfiber"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/sqlite"
)

// BenchmarkReplay: a retry answered from its record, through the app's
// fasthttp handler with no network, by idemfiber on SQLite and on
// PostgreSQL (a read of the record, a fingerprint of the request) beside
// Fiber's own idempotency middleware, its peer (an in-memory map, with no
// fingerprint, no lease and nothing that outlives the process).
func BenchmarkReplay(b *testing.B) {
	const key = "8e03978e-40d5-43e8-bc93-6894a57f9324" // Fiber's middleware takes UUIDs only
	scope := func(fiber.Ctx) (string, error) { return "acme", nil }
	for _, tc := range []struct {
		name string
		mw   func(b *testing.B) fiber.Handler
	}{
		{"idemfiber/sqlite", func(b *testing.B) fiber.Handler {
			return idemfiber.New(open(b, testdb.SQLiteDB(b, sqlite.Options{})).l, idemfiber.Options{Scope: scope})
		}},
		{"idemfiber/postgres", func(b *testing.B) fiber.Handler {
			return idemfiber.New(open(b, testdb.PostgresDB(b)).l, idemfiber.Options{Scope: scope})
		}},
		{"fiber-idempotency/memory", func(*testing.B) fiber.Handler {
			// Its default field is X-Idempotency-Key.
			return idempotency.New(idempotency.Config{KeyHeader: "Idempotency-Key"})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			app := fiber.New()
			runs := 0
			app.Post("/orders", tc.mw(b), func(c fiber.Ctx) error {
				runs++
				return c.Status(fiber.StatusCreated).JSON(fiber.Map{"id": 1, "item": "book"})
			})
			h := app.Handler()
			var fctx fasthttp.RequestCtx
			send := func() {
				fctx.Request.Reset()
				fctx.Response.Reset()
				fctx.Request.Header.SetMethod(fiber.MethodPost)
				fctx.Request.SetRequestURI("/orders")
				fctx.Request.Header.SetContentType(fiber.MIMEApplicationJSON)
				fctx.Request.Header.Set("Idempotency-Key", key)
				fctx.Request.SetBodyString(`{"item":"book"}`)
				h(&fctx)
				if got := fctx.Response.StatusCode(); got != fiber.StatusCreated {
					b.Fatalf("status %d, want 201: %s", got, fctx.Response.Body())
				}
			}
			send() // the first request, which runs the handler
			for b.Loop() {
				send()
			}
			if runs != 1 {
				b.Errorf("the handler ran %d times, want 1: the retries were not replayed", runs)
			}
		})
	}
}
