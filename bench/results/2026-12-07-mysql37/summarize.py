#!/usr/bin/env python3
"""Medians (lowest-highest) of the per-round ratios to plain in before-after.txt,
and the medians of the CPU per op (server threads of the variant's
connections, the rest of the server, the client) and redo per op."""
import re, sys, statistics
from collections import defaultdict
rows = defaultdict(list)
pat = re.compile(r'^(\w+) clients=(\d+) round=\d+ (\S+)\s+(\d+) ops/s\s+x([\d.]+)\s+conn\s+(\d+)\s+rest\s+(-?\d+)\s+cli\s+(\d+) us/op\s+redo\s+(\d+) B/op\s+trips ([\d.]+)')
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        v, c, name = m.group(1), int(m.group(2)), m.group(3)
        rows[(c, name, v)].append([float(x) for x in m.groups()[3:]])
for key in sorted(rows, key=lambda k: (-k[0], k[1], k[2])):
    r = rows[key]
    ratios = sorted(x[1] for x in r)
    med = lambda i: statistics.median(x[i] for x in r)
    print(f"clients={key[0]:2d} {key[2]:6s} {key[1]:11s} x{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f}) n={len(r)}  ops/s {med(0):.0f}  cpu/op: conn {med(2):.0f} rest {med(3):.0f} cli {med(4):.0f} total {med(2)+med(3)+med(4):.0f} us  redo {med(5):.0f} B  trips {med(6):.1f}")
