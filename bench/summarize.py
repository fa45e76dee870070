#!/usr/bin/env python3
"""Prints the medians of a sluice-bench-host JSON file as a Markdown table.

usage: summarize.py RESULT.json [RESULT2.json ...]

RESULT.json comes from `sluice-bench-host --benchmark_out=RESULT.json
--benchmark_out_format=json`. For each benchmark the table shows the median over
the repetitions of its main figure (ns per operation, round-trip p50/p90 in us,
operations per second) and the smallest and largest repetition. With several
files, one column group per file.
"""
import json
import sys


def main_figures(bench):
    """(label, value) pairs that describe one benchmark repetition or aggregate."""
    if "ops_per_s" in bench:
        return [("Mops/s", bench["ops_per_s"] / 1e6), ("ns/op", bench["ns_per_op"])]
    if "p50_us" in bench:
        # real_time is the manual time per iteration: the mean round trip.
        return [("p50 us", bench["p50_us"]), ("p90 us", bench["p90_us"]),
                ("mean us", bench["real_time"])]
    if "ns_per_op" in bench:
        return [("ns/op", bench["ns_per_op"])]
    return [("time", bench["real_time"])]


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for bench in data["benchmarks"]:
        name = bench["run_name"].split("/min_time")[0]
        row = rows.setdefault(name, {"reps": []})
        if bench.get("run_type") == "aggregate":
            row[bench["aggregate_name"]] = bench
        else:
            row["reps"].append(bench)
    return data["context"], rows


def fmt(value):
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def main(paths):
    loaded = [load(p) for p in paths]
    for path, (context, _) in zip(paths, loaded):
        print(f"<!-- {path}: {context.get('date')}, load {context.get('load_avg')} -->")
    names = []
    for _, rows in loaded:
        names += [n for n in rows if n not in names]
    print("| benchmark | " + " | ".join("median (min-max)" for _ in paths) + " |")
    print("|---|" + "---|" * len(paths))
    for name in names:
        cells = []
        for _, rows in loaded:
            row = rows.get(name)
            if row is None or "median" not in row:
                cells.append("-")
                continue
            parts = []
            for i, (label, value) in enumerate(main_figures(row["median"])):
                reps = [main_figures(r)[i][1] for r in row["reps"]]
                spread = f" ({fmt(min(reps))}-{fmt(max(reps))})" if reps else ""
                parts.append(f"{label} {fmt(value)}{spread}")
            cells.append("; ".join(parts))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
