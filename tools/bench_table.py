"""Prints criterion results as a markdown table: group/id, mean time, throughput.

Run after `cargo bench ...`:  python3 tools/bench_table.py [GROUP ...]
Reads target/criterion/<group>/<id>/new/estimates.json (mean point estimate) and
benchmark.json (throughput, when set).
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "target" / "criterion"


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    groups = sys.argv[1:]
    print("| benchmark | mean time | per second |")
    print("|---|---|---|")
    for est in sorted(ROOT.glob("*/*/new/estimates.json")):
        bench_dir = est.parent.parent
        group = bench_dir.parent.name
        if groups and group not in groups:
            continue
        mean = json.loads(est.read_text())["mean"]["point_estimate"]
        meta = json.loads((est.parent / "benchmark.json").read_text())
        tp = meta.get("throughput") or {}
        elems = tp.get("Elements") or tp.get("Bytes")
        rate = f"{elems / (mean * 1e-9):,.0f}" if elems else ""
        print(f"| `{meta['group_id']}/{meta.get('function_id') or meta.get('value_str')}` | {fmt_time(mean)} | {rate} |")


if __name__ == "__main__":
    main()
