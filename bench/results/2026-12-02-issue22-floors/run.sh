#!/usr/bin/env bash
# Six rounds of BenchmarkPostgresPaired of the floors22 build (commit 1125b28),
# each round under the bench lock on its own; load average before each round.
set -u
export IDEMLEDGER_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
R=$(cd "$(dirname "$0")" && pwd)
# go test -c -o /tmp/floors22-final.test ./idemhttp/   (at 1125b28)
cd "$R/../../../idemhttp"
for i in 1 2 3 4 5 6; do
  { date -u +%T; uptime; } >> "$R/load.txt"
  flock /work/bench.lock /tmp/floors22-final.test -test.run '^$' -test.bench '^BenchmarkPostgresPaired$' \
    -test.benchtime 500x -test.count 1 >> "$R/paired-floors.txt"
done
{ date -u +%T; uptime; } >> "$R/load.txt"
