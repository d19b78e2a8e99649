package idemfiber_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/idemledger/idemledger/idemfiber"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// A Fiber route that runs at most once per Idempotency-Key: the retry is
// answered from the ledger, with Idempotent-Replayed: true, and the
// handler marks its commit point once the card is charged.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "idemfiber")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	d := sqlite.New(db)
	if err := schema.Migrate(context.Background(), d); err != nil {
		panic(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	idem := idemfiber.New(l, idemfiber.Options{
		// The scope comes from what the authentication handler found.
		Scope: func(c fiber.Ctx) (string, error) {
			user, _ := c.Locals("user").(string)
			return user, nil
		},
	})
	app := fiber.New()
	app.Use(recover.New(), func(c fiber.Ctx) error {
		c.Locals("user", "alice")
		return c.Next()
	})
	charges := 0
	app.Post("/charges", idem, func(c fiber.Ctx) error {
		charges++ // the card is charged: running again would charge it twice
		if !idemfiber.Commit(c) {
			// The lease was lost: another run may own the key.
			return fiber.ErrServiceUnavailable
		}
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"charge": charges})
	})

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":100}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "charge-42")
		resp, err := app.Test(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"))
	}
	// Output:
	// 201 {"charge":1} replayed=""
	// 201 {"charge":1} replayed="true"
}
