# Per-round throughput ratios from the "<kind>-us" metrics of BenchmarkPostgresPaired and
# BenchmarkSQLitePaired output, median (lowest-highest) over the rounds of each file:
#   python3 ratios.py paired.txt
# "a × b" is b-us / a-us of the same round (above 1: a is faster than b).
import sys, statistics
pairs = [("replay", "read"), ("replay", "http-floor"), ("read", "http-floor"), ("replay-off", "read"),
         ("replay-off", "decide-fp"), ("decide-fp", "read"), ("replay", "replay-off"),
         ("tx-replay", "replay"), ("tx-replay-off", "replay-off"),
         ("first", "first-off"), ("tx-first", "tx-first-off"), ("first", "bare-tx"), ("tx-first", "bare-tx")]
times = ("http-floor", "read", "decide-fp", "replay", "replay-off", "tx-replay", "first", "first-off")
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
        for a, b in pairs:
            if a in us and b in us:
                r.setdefault(f"{a} × {b}", []).append(us[b] / us[a])
        for k in times:
            if k in us:
                r.setdefault(k + " µs", []).append(us[k])
    print("==", path)
    for name, m in rows.items():
        out = [f"{name} (n={len(m['read µs'])})"]
        for k, v in m.items():
            v = sorted(v)
            fmt = "{:.0f}" if k.endswith("µs") else "{:.2f}"
            out.append(f"{k} " + fmt.format(statistics.median(v)) + " (" + fmt.format(v[0]) + "–" + fmt.format(v[-1]) + ")")
        print("\n  ".join(out))
