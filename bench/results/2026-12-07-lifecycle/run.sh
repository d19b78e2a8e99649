#!/bin/bash
# BENCHMARKS.md, "The public lifecycle, before and after": BenchmarkMiddleware built at b211a00
# and at HEAD, interleaved rounds, SQLite in process and over loopback HTTP. Run from the repository.
set -e
root=$(git rev-parse --show-toplevel)
git worktree add -f /tmp/b35/before b211a00 >/dev/null 2>&1 || true
(cd /tmp/b35/before && go test -c -o /tmp/b35/before.test ./idemhttp/)
(cd "$root" && go test -c -o /tmp/b35/after.test ./idemhttp/)
cd "$root/idemhttp"
for i in 1 2 3 4 5 6; do
  for v in before after; do
    flock /work/bench.lock /tmp/b35/$v.test -test.run '^$' -test.bench 'Middleware/sync=NORMAL/(inproc|http)/(bare|first|replay|tx-first|tx-replay)$' -test.benchtime 1500x -test.count 1 2>&1 | grep -E '^Benchmark' | sed "s/^/$v /"
  done
  echo "round $i load $(cut -d' ' -f1 /proc/loadavg)"
done
