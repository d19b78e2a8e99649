#!/bin/sh
# Base (main af65270) and after, interleaved, four rounds each: every round
# runs BenchmarkPostgresPaired and BenchmarkSQLitePaired once per binary.
#   go test -c -o /tmp/replay-base.test ./idemhttp/   # at af65270
#   go test -c -o /tmp/replay-after.test ./idemhttp/  # at ea768e1 (migration 9 and the mark that renews the lease)
#   (cd idemhttp && sh ../bench/results/2026-12-08-replay-path/run.sh)
out=../bench/results/2026-12-08-replay-path
for i in 1 2 3 4; do for w in base after; do
  uptime >> $out/load.txt
  flock /work/bench.lock /tmp/replay-$w.test -test.run '^$' -test.bench '^Benchmark(Postgres|SQLite)Paired$' \
    -test.benchtime 500x -test.count 1 >> $out/$w.txt
done; done
