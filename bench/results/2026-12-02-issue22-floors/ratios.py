# Median (lowest-highest) of each metric over the rounds of a BenchmarkPostgresPaired output file:
#   python3 ratios.py paired-floors.txt replay/read replay/decide ...
import sys, re, statistics
# median (min-max) of each ratio metric per sub-benchmark, over the rounds in a file
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith('BenchmarkPostgresPaired/'): continue
    f = line.split()
    name = f[0].replace('BenchmarkPostgresPaired/','').replace('-2','')
    name = name.replace('driver=','').replace('/clients=',', ')
    for i in range(4, len(f)-1, 2):
        rows.setdefault(name, {}).setdefault(f[i+1], []).append(float(f[i]))
want = sys.argv[2:] 
for name, m in rows.items():
    out = [name + f" (n={len(next(iter(m.values())))})"]
    for k in want:
        v = sorted(m[k]); out.append(f"{k} {statistics.median(v):.2f} ({v[0]:.2f}–{v[-1]:.2f})")
    print(' | '.join(out))
