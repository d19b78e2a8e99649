# Per-round throughput ratios from the "<kind>-us" metrics of BenchmarkPostgresPaired and
# BenchmarkSQLitePaired output, median (lowest-highest) over the rounds of each file:
#   python3 ratios.py base.txt after.txt
# "a × b" is b-us / a-us of the same round (above 1: a is faster than b). "http-floor × read"
# bounds "replay × read" from above: no replay over HTTP is faster than constants written.
import sys, statistics
pairs = [("replay", "read"), ("http-floor", "read"), ("replay", "http-floor"),
         ("replay-off", "decide-fp"), ("claim-fp", "decide-fp"), ("replay-off", "claim-fp"),
         ("tx-replay", "replay"), ("first", "bare-tx"), ("tx-first", "bare-tx"),
         ("first", "first-off"), ("tx-first", "tx-first-off")]
times = ("http-floor", "read", "decide-fp", "claim-fp", "replay", "replay-off", "tx-replay", "first", "bare-tx")
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        if not line.startswith('Benchmark') or 'Paired/' not in line:
            continue
        f = line.split()
        name = f[0].replace('BenchmarkPostgresPaired/driver=', '').replace('BenchmarkSQLitePaired/', 'sqlite/')
        name = name.replace('-2', '').replace('/clients=', ', ')
        us = {f[i + 1][:-3]: float(f[i]) for i in range(4, len(f) - 1, 2) if f[i + 1].endswith('-us')}
        r = rows.setdefault(name, {})
        r.setdefault('n', []).append(1)
        for a, b in pairs:
            if a in us and b in us:
                r.setdefault(f"{a} × {b}", []).append(us[b] / us[a])
        for k in times:
            if k in us:
                r.setdefault(k + " µs", []).append(us[k])
    print("==", path)
    for name, m in rows.items():
        print(f"{name} (n={len(m.pop('n'))})")
        for k, v in m.items():
            med = statistics.median(v)
            if k.endswith("µs"):
                print(f"  {k} {med:.0f} ({min(v):.0f}–{max(v):.0f})")
            else:
                print(f"  {k} {med:.2f} ({min(v):.2f}–{max(v):.2f})")
