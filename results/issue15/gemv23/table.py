"""The tables of results/issue15/gemv23/README.md from a run's gemv.jsonl: per kind the best
kernel, the profile's choice and cuBLAS, and every variant's kernel ratio.

    python3 results/issue15/gemv23/table.py results/issue15/gemv23/run1/gemv.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(paths: list[str]) -> None:
    by: dict[tuple[str, str, int], list[dict]] = defaultdict(list)
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            if "kernel_us" in r:
                by[(r["dtype"], r["layout"], r["size"])].append(r)
    print("| dtype | op | n | cuBLAS call / kernel µs | profile's choice (first row) | call µs | × cuBLAS | "
          "best kernel | kernel µs | × cuBLAS kernel | GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (dt, lay, n), rows in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        first = rows[0]
        best = min(rows, key=lambda r: r["kernel_us"])
        print(f"| {dt} | {lay} | {n} | {first['ref_call_us']:.1f} / {first['ref_kernel_us']:.1f} | "
              f"{first['variant']} | {first['call_us']:.1f} | {first['ref_call_us'] / first['call_us']:.3f} | "
              f"{best['variant']} | {best['kernel_us']:.1f} | "
              f"{best['ref_kernel_us'] / best['kernel_us']:.3f} | {best['gbs_kernel']:.0f} |")
    print()
    for (dt, lay, n), rows in sorted(by.items()):
        cells = ", ".join(f"{r['variant'].replace('column-groups', 'cg').replace('group-rows', 'gr').replace('row-groups', 'rg')} "
                          f"{r['ref_kernel_us'] / r['kernel_us']:.3f}" for r in rows)
        print(f"- {dt} {lay} {n}: {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
