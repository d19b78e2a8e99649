#!/usr/bin/env bash
# Interleaved rounds of BenchmarkPostgresPaired: the fork point (base, 4226bd6) and
# branch replay22 (after), alternating, all under one hold of the bench lock (other
# helpers' scale tests held it for 10 minutes at a time, between which single rounds
# would have been spread over an hour); load average before each round. Builds:
#   go test -c -o /tmp/r22/base.test ./idemhttp/        (at 4226bd6, before the branch's first commit)
#   go test -c -o /tmp/r22/after.test ./idemhttp/       (at branch replay22)
set -u
export IDEMLEDGER_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
R=$(cd "$(dirname "$0")" && pwd)
N=${1:-8}
AFTER=${2:-after}
cd "$R/../../../idemhttp"
exec 9>/work/bench.lock
flock 9
for i in $(seq 1 "$N"); do
  for v in base "$AFTER"; do
    { date -u +%T; echo "$v"; uptime; } >> "$R/load.txt"
    /tmp/r22/$v.test -test.run '^$' -test.bench '^BenchmarkPostgresPaired$' \
      -test.benchtime 500x -test.count 1 >> "$R/paired-$v.txt"
  done
done
{ date -u +%T; uptime; } >> "$R/load.txt"
