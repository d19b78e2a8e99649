package ledger

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/postgres"
)

// BenchmarkPostgresClaimComplete is lease mode on PostgreSQL through
// database/sql, with 1 and 8 clients: Claim and Complete of a new key,
// two autocommit statements, each under its lease's deadline (and so with
// its lock_timeout) as the ledger runs them. The server's clock decides,
// as in production.
func BenchmarkPostgresClaimComplete(b *testing.B) {
	ctx := context.Background()
	out := Outcome{Status: 201, Body: []byte(`{"id":1}`)}
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			db := pgBenchDB(b, clients)
			l, _ := New(postgres.New(db), Options{})
			parallel(b, clients, func(i int) error {
				key := fmt.Sprint("charge-", i)
				c, err := l.Claim(ctx, Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))})
				if err != nil {
					return err
				}
				return l.Complete(ctx, c, out)
			})
		})
	}
}
