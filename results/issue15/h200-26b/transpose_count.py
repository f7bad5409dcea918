"""The transposes counted: per tiles-t variant its work-group, tile, resident blocks per
multiprocessor, bytes per row segment a warp reads, the SASS instructions per element (NVRTC's
sm_90 cubin: its .text bytes / 16, each thread's tile copied once, its loops unrolled), and at
the rate run 1 measured on the H200 (tune.log, GB/s counting bytes read and written) the
instructions the multiprocessors issue per cycle (132 SMs at 1.98 GHz; warp instructions).

    python3 transpose_count.py run1/tune.log
"""

from __future__ import annotations

import re
import struct
import sys
from typing import Optional

from liftkit.backends.cuda.nvrtc import compile_cuda
from liftkit.blas.codelets import ITEMSIZE, Kind, Variant, derive
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompileOptions

SMS, CLOCK, THREADS, SHARED = 132, 1.98e9, 2048, 228 * 1024  # GH100 (H100 and H200 alike)
TRIAL = re.compile(r"transpose/(\w+)/- (large|huge) tiles-t\(k=(\d+),r=(\d+)\): ([\d.]+) GB/s")


def sass_instructions(kind: Kind, v: Variant) -> Optional[int]:
    """The kernel's SASS instructions (16 bytes each on sm_90) from the cubin's .text sections;
    None where its work-items loop (a work-group over the code generator's 256 work-items is
    cut to 256, each looping over several columns: the static count is not what runs)."""
    k = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda")).kernels[0]
    if re.search(r"l_id_\d+ \+= ", k.source):
        return None
    d = compile_cuda(k.source, "sm_90", k.build_options).cubin
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    size, num, names = struct.unpack_from("<HHH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * size) for i in range(num)]
    base = secs[names][4]
    total = 0
    for s in secs:
        name = d[base + s[0]:d.index(b"\0", base + s[0])]
        if name.startswith(b".text"):
            total += s[5]
    return total // 16


def main(log: str) -> None:
    rates: dict[tuple[str, int, int, str], float] = {}
    for line in open(log, encoding="utf-8"):
        m = TRIAL.search(line)
        if m:
            dt, cls, k, r, rate = m.groups()
            rates[(dt, int(r), int(k), cls)] = float(rate)
    print("| dtype | r | k | work-items | tile | blocks/SM | row segment | SASS/element "
          "| GB/s 4096² | GB/s 8192² | warp instr./cycle/SM at 8192² |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dt in ("float32", "float64"):
        size = ITEMSIZE[dt]
        for r, k in ((32, 8), (32, 4), (32, 2), (16, 2), (64, 16), (64, 8)):
            kind, v = Kind("transpose", dt), Variant.of("tiles-t", r=r, k=k)
            items, tile = min(256, r * r // k), r * r * size
            blocks = min(THREADS // items, 32, SHARED // (tile + 1024))
            n = sass_instructions(kind, v)
            big = rates.get((dt, r, k, "huge"), 0.0)
            per_elem = "– (loops)" if n is None else f"{n / k:.1f}"
            issue = "–" if n is None else \
                f"{big * 1e9 / (2 * size) * n / k / (SMS * CLOCK * 32):.2f}"
            print(f"| {dt} | {r} | {k} | {items} | {tile // 1024} KB | {blocks} | {r * size} B "
                  f"| {per_elem} | {rates.get((dt, r, k, 'large'), 0):,.0f} | {big:,.0f} "
                  f"| {issue} |")


if __name__ == "__main__":
    main(sys.argv[1])
