#!/bin/sh
# Server CPU per claim statement (BENCHMARKS.md, issue 22, "Replays against a plain read").
# Setup, once: a scratch schema with migrations 1-5 and one completed record ('s', 'replay'):
#   P='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&options=-csearch_path%3Dtxh_speed'
#   psql "$P" -c 'CREATE SCHEMA txh_speed'; cat schema/postgres/*.up.sql | psql "$P"
#   psql "$P" -c "INSERT INTO idempotency_ledger (scope,key,fingerprint,state,fence,status,headers,body,created_at,completed_at,expires_at,kind)
#     VALUES ('s','replay','\xaaaa…aa' (32 bytes),'completed',1,201,'{\"Content-Type\":[\"application/json\"]}',
#     '{\"id\":12345,\"status\":\"created\",\"amount\":1000}',0,0,4102444800000,'http')"
# servercpu.go.txt is the harness (built as /tmp/txh/speed); claim-old.sql is the Claim query
# before migration 5 (4dd42a6), claim-new.sql after, as sqlc generated them; get.sql reads the
# row's 15 columns and the clock (ledger.Lookup's), plain.sql its status, headers and body
# (BenchmarkPostgresPaired's read).
cd /tmp/txh
date -u; uptime
./speed 40 1000 claim-old.sql:genreplay claim-new.sql:genreplay get.pgb:plain plain.pgb:plain
./speed 10 500 claim-old.sql:genfirst claim-new.sql:genfirst
uptime
