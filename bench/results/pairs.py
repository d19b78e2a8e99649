#!/usr/bin/env python3
"""Markdown tables of ratios from interleaved benchmark rounds.

Usage (from bench/results): python3 pairs.py {ledger-sqlite|idemhttp|ledger-postgres} < raw.txt

The input is N runs of `-test.count 1` appended one after the other (each
starts with its own "goos:" header), so the k-th sample of every benchmark
comes from round k. Each ratio is the median of the N per-round ratios of
a benchmark to its baseline from the same round, which cancels load that
drifts between rounds; absolute figures are medians with (min-max).
"""
import re
import statistics
import sys

def parse(f):
    rounds, cur = [], None
    for line in f:
        if line.startswith("goos:"):
            cur = {}
            rounds.append(cur)
            continue
        m = re.match(r"^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$", line)
        if not m or cur is None:
            continue
        vals = {}
        f2 = m.group(4).split()
        for v, unit in zip(f2[0::2], f2[1::2]):
            vals[unit] = float(v)
        cur[m.group(1)] = vals
    return rounds

def med(xs):
    return statistics.median(xs)

def fmt(x, unit=""):
    if x >= 100:
        return f"{x:,.0f}{unit}"
    if x >= 10:
        return f"{x:.1f}{unit}"
    return f"{x:.2f}{unit}"

def us(ns):
    return fmt(ns / 1000)

def series(rounds, name, unit):
    return [r[name][unit] for r in rounds if name in r and unit in r[name]]

def ratio(rounds, num, den, unit):
    """Median over rounds of rounds[k][num][unit] / rounds[k][den][unit]."""
    xs = [r[num][unit] / r[den][unit] for r in rounds
          if num in r and den in r and unit in r[num] and r[den].get(unit)]
    return med(xs), min(xs), max(xs)

def rng(xs, f=us):
    return f"{f(med(xs))} ({f(min(xs))}–{f(max(xs))})"

def rfmt(t):
    return f"{t[0]:.2f} ({t[1]:.2f}–{t[2]:.2f})"

def ledger_sqlite(rounds):
    print(f"{len(rounds)} rounds.\n")
    for sync in ("FULL", "NORMAL"):
        base = f"BenchmarkMutate/sync={sync}/plain"
        rows = [("plain (BEGIN, INSERT, COMMIT)", base)]
        for s in ("", "-nodb"):
            tag = " without Config.DB" if s else ""
            rows += [(f"Mutate, first execution{tag}", f"BenchmarkMutate/sync={sync}/first{s}"),
                     (f"Mutate, replay{tag}", f"BenchmarkMutate/sync={sync}/replay{s}"),
                     (f"Claim + Complete (lease mode){tag}", f"BenchmarkClaimComplete/sync={sync}{s}")]
        print(f"synchronous={sync}\n")
        print("| operation | µs/op (median, min–max) | × plain throughput | CPU µs/op | × plain (CPU) | allocs/op |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, name in rows:
            ns = series(rounds, name, "ns/op")
            cpu = series(rounds, name, "cpu-ns/op")
            al = series(rounds, name, "allocs/op")
            w = ratio(rounds, base, name, "ns/op")
            c = ratio(rounds, base, name, "cpu-ns/op")
            print(f"| {label} | {rng(ns)} | {rfmt(w)} | {us(med(cpu))} | {rfmt(c)} | {med(al):.0f} |")
        print()
        for s in ("", "-nodb"):
            first, replay = f"BenchmarkMutate/sync={sync}/first{s}", f"BenchmarkMutate/sync={sync}/replay{s}"
            print(f"replay{s} vs first{s}: {rfmt(ratio(rounds, first, replay, 'ns/op'))}× the throughput by wall clock, "
                  f"{rfmt(ratio(rounds, first, replay, 'cpu-ns/op'))}× by CPU time\n")
    name = "BenchmarkPurge"
    print("Purge, 100,000 expired rows, batches of 1,000, synchronous=FULL\n")
    print("| rows/s (median, min–max) | longest batch, ms (median, max) | CPU µs per row | s per Purge |")
    print("|---:|---:|---:|---:|")
    rps = series(rounds, name, "rows/s")
    lb = series(rounds, name, "ms/longest-batch")
    cr = series(rounds, name, "cpu-ns/row")
    ns = series(rounds, name, "ns/op")
    print(f"| {rng(rps, lambda x: fmt(x))} | {fmt(med(lb))} ({fmt(max(lb))}) | {fmt(med(cr)/1000)} | {fmt(med(ns)/1e9)} |")

def idemhttp(rounds):
    print(f"{len(rounds)} rounds. Ratios are times (lower is better).\n")
    for sync in ("FULL", "NORMAL"):
        for via in ("inproc", "http"):
            p = f"BenchmarkMiddleware/sync={sync}/{via}/"
            print(f"synchronous={sync}, {via}\n")
            print("| handler | µs/op (median, min–max) | × bare | × bare-tx | CPU µs/op | × bare (CPU) | × bare-tx (CPU) | allocs/op |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            for c in ("bare", "first", "replay", "bare-tx", "tx-first", "tx-replay"):
                name = p + c
                ns = series(rounds, name, "ns/op")
                cpu = series(rounds, name, "cpu-ns/op")
                al = series(rounds, name, "allocs/op")
                cols = [rfmt(ratio(rounds, name, p + b, u)) for u in ("ns/op",) for b in ("bare", "bare-tx")]
                ccols = [rfmt(ratio(rounds, name, p + b, "cpu-ns/op")) for b in ("bare", "bare-tx")]
                print(f"| {c} | {rng(ns)} | {cols[0]} | {cols[1]} | {us(med(cpu))} | {ccols[0]} | {ccols[1]} | {med(al):.0f} |")
            print()

def ledger_postgres(rounds):
    print(f"{len(rounds)} rounds.\n")
    print("| clients | transaction | ops/s (median, min–max) | × plain throughput | client CPU µs/op | server CPU µs/op | × plain (CPU, client + server) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rounds:
        for v in r.values():
            v["total-cpu-ns/op"] = v.get("cpu-ns/op", 0) + v.get("server-cpu-ns/op", 0)
    for n in (1, 8, 32):
        p = f"BenchmarkPostgresMutate/clients={n}/"
        for c in ("plain", "first", "replay"):
            name = p + c
            ops = series(rounds, name, "ops/s")
            w = ratio(rounds, name, p + "plain", "ops/s")
            cc = series(rounds, name, "cpu-ns/op")
            sc = series(rounds, name, "server-cpu-ns/op")
            t = ratio(rounds, p + "plain", name, "total-cpu-ns/op")
            print(f"| {n} | {c} | {rng(ops, lambda x: fmt(x))} | {rfmt(w)} | {us(med(cc))} | {us(med(sc))} | {rfmt(t)} |")
    print()
    for n in (1, 8, 32):
        p = f"BenchmarkPostgresMutate/clients={n}/"
        print(f"clients={n}: replay vs first: {rfmt(ratio(rounds, p + 'replay', p + 'first', 'ops/s'))}× the throughput by wall clock, "
              f"{rfmt(ratio(rounds, p + 'first', p + 'replay', 'total-cpu-ns/op'))}× by CPU time (client + server)\n")

{"ledger-sqlite": ledger_sqlite, "idemhttp": idemhttp, "ledger-postgres": ledger_postgres}[sys.argv[1]](parse(sys.stdin))
