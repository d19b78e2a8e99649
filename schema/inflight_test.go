package schema_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
)

// TestPostgresInFlightStatementsByKey: the statements that name a key in
// flight (Complete, Release, MarkCommitted, Extend, Abandon) read a few
// pages however many claims were completed since the table's last VACUUM
// (migration 6). With migration 4's index of in-flight rows, keyed by claim
// time, the planner read them through that index, judging it by the few
// rows in flight, and each scanned every entry the completed claims had
// left in it: here 20,000 entries, about a hundred pages.
//
// Each statement runs as the driver sends it (its text and arguments
// recorded by a pgx tracer), then again under EXPLAIN (ANALYZE, BUFFERS) in
// a transaction rolled back, with a custom plan and with the generic plan
// that a prepared statement settles on.
func TestPostgresInFlightStatementsByKey(t *testing.T) {
	for _, name := range []string{testdb.Postgres, testdb.PgxV5} {
		t.Run("driver="+name, func(t *testing.T) {
			db, dsn := testdb.PostgresDSN(t)
			ctx := context.Background()
			for _, q := range []string{
				// VACUUM would remove the entries this test is about.
				`ALTER TABLE idempotency_ledger SET (autovacuum_enabled = false)`,
				`INSERT INTO idempotency_ledger (scope, key, fingerprint, state, lease_token, lease_expires_at, fence, created_at, expires_at)
				 SELECT 'done', 'key-' || i, decode(repeat('ab', 32), 'hex'), 'in_flight', 'token', 1000, 1, i, 4102444800000
				 FROM generate_series(1, 20000) AS i`,
				`UPDATE idempotency_ledger SET state = 'completed', lease_token = NULL, lease_expires_at = NULL, status = 200, completed_at = 2000
				 WHERE scope = 'done'`,
				`ANALYZE idempotency_ledger`,
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}

			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			trace := &testdb.Statements{}
			cfg.ConnConfig.Tracer = trace
			var ex driver.Executor
			if name == testdb.PgxV5 {
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				ex = pgxv5.New(pool).DB()
			} else {
				sdb := stdlib.OpenDB(*cfg.ConnConfig)
				defer sdb.Close()
				ex = postgres.New(sdb).DB()
			}

			// Two leases: one extended, marked and completed, one released
			// and one abandoned.
			for _, key := range []string{"a", "b", "c"} {
				if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_ledger (scope, key, fingerprint, state, lease_token, lease_expires_at, fence, created_at, expires_at)
					VALUES ('live', $1, decode(repeat('ab', 32), 'hex'), 'in_flight', 'token', 4102444800000, 1, 3000, 4102444800000)`, key); err != nil {
					t.Fatal(err)
				}
			}
			lease := func(key string) driver.LeaseParams {
				return driver.LeaseParams{Scope: "live", Key: key, Token: "token", Fence: 1}
			}
			if _, ok, err := ex.Extend(ctx, driver.ExtendParams{LeaseParams: lease("a"), LeaseMillis: 60000}); !ok || err != nil {
				t.Fatalf("Extend = %v, %v", ok, err)
			}
			if ok, err := ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: lease("a")}); !ok || err != nil {
				t.Fatalf("MarkCommitted = %v, %v", ok, err)
			}
			if res, err := ex.Complete(ctx, driver.CompleteParams{LeaseParams: lease("a"), Status: 201, Body: []byte("{}"), TTLMillis: 60000}); !res.OK || err != nil {
				t.Fatalf("Complete = %+v, %v", res, err)
			}
			if ok, err := ex.Release(ctx, driver.ReleaseParams{LeaseParams: lease("b"), LeaseMillis: 60000}); !ok || err != nil {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			if err := ex.Abandon(ctx, lease("c")); err != nil {
				t.Fatalf("Abandon = %v", err)
			}

			// The last statement of each sqlc query name ("-- name:
			// Complete :execrows" opens its text).
			sent := make(map[string]testdb.Statement)
			for _, st := range trace.Take() {
				if rest, ok := strings.CutPrefix(st.SQL, "-- name: "); ok {
					name, _, _ := strings.Cut(rest, " ")
					sent[name] = st
				}
			}

			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, stmt := range []string{"Extend", "MarkCommitted", "Complete", "Release", "Abandon"} {
				r, ok := sent[stmt]
				if !ok {
					t.Errorf("%s: not sent; statements seen: %v", stmt, slices.Collect(maps.Keys(sent)))
					continue
				}
				for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
					blocks, plan := explainBlocks(t, conn, mode, r)
					// An index descent, the heap page, and a write's index
					// entries take a dozen; the old index took about 100.
					if blocks > 30 {
						t.Errorf("%s, %s: %d buffers read; want at most 30. Plan:\n%s", stmt, mode, blocks, plan)
					}
				}
			}
		})
	}
}

// explainBlocks runs s under EXPLAIN (ANALYZE, BUFFERS) with plan_cache_mode
// set to mode, in a transaction it rolls back, and returns the shared
// buffers the plan touched (hit and read) and the plan in text.
//
// s is prepared (PREPARE) and run by EXPLAIN EXECUTE, its arguments
// written as literals of the parameters' types: that is where
// plan_cache_mode decides between a custom and the generic plan, as for
// the drivers' prepared statements. An EXPLAIN of the statement itself
// with bound arguments is planned with their values (they are constants
// to the planner), a custom plan whatever the mode.
func explainBlocks(t *testing.T, conn *pgx.Conn, mode string, s testdb.Statement) (int, string) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	// The parameters' types as the server infers them (what the driver's
	// own Parse got), and each argument as a literal of its type.
	// pgx's database/sql driver passes its result formats as a first
	// argument, an option to pgx rather than a parameter.
	var params []any
	for _, a := range s.Args {
		switch a.(type) {
		case pgx.QueryResultFormats, pgx.QueryResultFormatsByOID, pgx.QueryExecMode:
		default:
			params = append(params, a)
		}
	}
	sd, err := tx.Conn().Prepare(ctx, "", s.SQL)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if len(sd.ParamOIDs) != len(params) {
		t.Fatalf("%d parameters, %d arguments: %#v", len(sd.ParamOIDs), len(params), params)
	}
	types := make([]string, len(sd.ParamOIDs))
	args := make([]string, len(params))
	for i, oid := range sd.ParamOIDs {
		if err := tx.QueryRow(ctx, "SELECT format_type($1::oid, NULL)", oid).Scan(&types[i]); err != nil {
			t.Fatal(err)
		}
		var lit string
		if err := tx.QueryRow(ctx, "SELECT quote_nullable($1::"+types[i]+")", params[i]).Scan(&lit); err != nil {
			t.Fatalf("argument %d (%T): %v", i+1, params[i], err)
		}
		args[i] = lit + "::" + types[i]
	}
	prepare, execute := "PREPARE idemledger_explain AS ", "EXECUTE idemledger_explain"
	if len(types) > 0 {
		prepare = "PREPARE idemledger_explain (" + strings.Join(types, ", ") + ") AS "
		execute += " (" + strings.Join(args, ", ") + ")"
	}
	if _, err := tx.Exec(ctx, prepare+s.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("PREPARE: %v", err)
	}
	// A prepared statement outlives the transaction: deallocated here, on
	// the error paths too.
	defer conn.Exec(ctx, "DEALLOCATE idemledger_explain", pgx.QueryExecModeSimpleProtocol)
	var out []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+execute, pgx.QueryExecModeSimpleProtocol).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	var plans []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	return plans[0].Plan.Hit + plans[0].Plan.Read, string(out)
}
