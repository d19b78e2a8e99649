#!/bin/bash
. /work/wt/env.sh
cd /work/wt/replay37/idemhttp
out=../bench/results/2026-12-07-replay37
for i in 1 2 3; do
  for which in base after; do
    uptime >> $out/load.txt
    flock /work/bench.lock /tmp/replay37-$which.test -test.run '^$' -test.bench '^Benchmark(Postgres|SQLite)Paired$' \
      -test.benchtime 500x -test.count 1 >> $out/$which.txt
  done
done
uptime >> $out/load.txt
echo finished >> $out/load.txt
