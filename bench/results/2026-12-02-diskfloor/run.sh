#!/usr/bin/env bash
# The SQLite purge at 5M records beside its disk floor (issue 25): each run
# its own fill, under the bench lock, 40 s phases; load average noted after.
#   go test -c -o /tmp/disk.test ./ledger/
set -u
R=$(cd "$(dirname "$0")" && pwd)
cd "$R/../../../ledger"
for v in "$@"; do
  case $v in
    ours) floor= ;;
    *) floor=$v ;;
  esac
  out="$R/$v-5m-40s.txt"
  [ -e "$out" ] && out="$R/$v-5m-40s-$(date +%H%M).txt"
  IDEMLEDGER_SCALE=5000000 IDEMLEDGER_SCALE_SECONDS=40 IDEMLEDGER_SCALE_FLOOR=$floor \
    flock /work/bench.lock /tmp/disk.test -test.run '^TestScaleSQLitePurge$' -test.v -test.timeout 30m > "$out" 2>&1
  { date -u +%T; uptime; } >> "$out"
done
