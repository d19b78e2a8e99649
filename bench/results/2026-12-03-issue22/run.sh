#!/usr/bin/env bash
# Interleaved rounds of BenchmarkPostgresPaired: base, after, base, after, ... all under one hold of
# the bench lock, the load average before each round. Builds (the benchmark file of "after" copied
# into both, so that both have the decide-fp kind):
#   git worktree add --detach /tmp/base22 6829a7d && cp idemhttp/bench_paired_test.go /tmp/base22/idemhttp/
#   (cd /tmp/base22 && go test -c -o /tmp/i22/base.test ./idemhttp/)
#   go test -c -o /tmp/i22/after.test ./idemhttp/
set -u
export IDEMLEDGER_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
R=$(cd "$(dirname "$0")" && pwd)
N=${1:-8}
cd "$R/../../../idemhttp"
exec 9>/work/bench.lock
flock 9
for i in $(seq 1 "$N"); do
  for v in base after; do
    { date -u +%T; echo "$v"; uptime; } >> "$R/load.txt"
    /tmp/i22/$v.test -test.run '^$' -test.bench '^BenchmarkPostgresPaired$' \
      -test.benchtime 500x -test.count 1 >> "$R/paired-$v.txt"
  done
done
{ date -u +%T; uptime; } >> "$R/load.txt"
