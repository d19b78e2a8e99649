# Per-round throughput ratios from the "<kind>-us" metrics of BenchmarkPostgresPaired output,
# median (lowest-highest) over the rounds of each file:
#   python3 ratios.py paired.txt
# "a × b" is b-us / a-us of the same round (above 1: a is faster than b).
import sys, statistics
pairs = [("replay", "read"), ("decide", "read"), ("decide-fp", "read"), ("replay", "decide"),
         ("replay", "decide-fp"), ("first", "bare-tx"), ("tx-first", "bare-tx"), ("tx-floor-row", "bare-tx"),
         ("tx-first", "tx-floor-row"), ("tx-replay", "replay"), ("tx-read", "replay"), ("tx-replay", "tx-read")]
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        if not line.startswith('BenchmarkPostgresPaired/'):
            continue
        f = line.split()
        name = f[0].replace('BenchmarkPostgresPaired/driver=', '').replace('-2', '').replace('/clients=', ', ')
        us = {f[i + 1][:-3]: float(f[i]) for i in range(4, len(f) - 1, 2) if f[i + 1].endswith('-us')}
        r = rows.setdefault(name, {})
        for a, b in pairs:
            r.setdefault(f"{a} × {b}", []).append(us[b] / us[a])
        for k in ("read", "decide", "decide-fp", "replay", "bare-tx", "tx-floor-row", "tx-first"):
            r.setdefault(k + " µs", []).append(us[k])
    print("==", path)
    for name, m in rows.items():
        out = [f"{name} (n={len(m['read µs'])})"]
        for k, v in m.items():
            v = sorted(v)
            fmt = "{:.0f}" if k.endswith("µs") else "{:.2f}"
            out.append(f"{k} " + fmt.format(statistics.median(v)) + " (" + fmt.format(v[0]) + "–" + fmt.format(v[-1]) + ")")
        print(" | ".join(out))
