"""H8: hashes of every generated kernel source and of the codelet tables' answers (before/after
a refactor: they must be identical). usage: python hashes.py OUT.txt [--quick]"""
import hashlib, json, sys, time, traceback
from types import SimpleNamespace

import liftkit
from liftkit.blas import codelets as cd
from liftkit.blas import tune as tu
from liftkit.blas import programs as bp
from liftkit.codegen import CompileOptions, compile_program

print("liftkit from", liftkit.__file__, file=sys.stderr)
out = []
H = lambda s: hashlib.sha256(s.encode()).hexdigest()[:16]


def rec(*parts):
    out.append(" | ".join(str(p) for p in parts))


def err(e):
    return f"{type(e).__name__}: {e}"


H100 = {"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132,
        "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
        "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR": 2048,
        "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
        "CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK": 1024}
from liftkit.backends.cuda.occupancy import SMLimits
limits = SMLimits(132, 65536, 233472, 2048, 32, 1024)

ALL_KINDS = tu.kinds() + [cd.Kind("mm", c, l) for c in bp.COMPLEX for l in bp.COMPLEX_LAYOUTS
                          if l not in ("NN", "NT", "TN")] \
    + [cd.Kind("gemv", c, l) for c in bp.COMPLEX for l in "RC"]
DEVS = (("gpu", "cuda"), ("cpu", "opencl"), ("gpu", "opencl"))
to_derive = {}  # (kind, variant) -> set of backends

# 1. tables: codelets_for order, spaces, space_at, defaults, multiples (cheap)
for op in cd.OPS + ("cembed", "cprep"):
    for be in (None, "opencl", "cuda"):
        rec("codelets_for", op, be, [c.name for c in cd.codelets_for(op, be)])
for name, c in cd.CODELETS.items():
    rec("codelet", name, c.ops, H(c.summary), c.backends, c.dtypes, c.layouts,
        sorted(c.rules()) if c.rules() else {}, c.space("gpu"), c.space("cpu"))
for k in ALL_KINDS:
    for dev, be in DEVS:
        sp = cd.space(k, dev, be)
        rec("space", k, dev, be, [str(v) for v in sp])
        for v in sp:
            if be == "cuda" or dev == "cpu":
                to_derive.setdefault((k, v), set()).add(be)
        for cls in tu.classes_of(k, tu.CLASSES):
            sz = tu.sizes_for(k, cls, dev)
            if be == "cuda":
                sa = cd.space_at(k, dev, be, sz, limits)
                rec("space_at", k, cls, [str(v) for v in sa[len(sp):]])
                for v in sa[len(sp):]:
                    to_derive.setdefault((k, v), set()).add(be)
                rec("split_tail", k, cls, [str(v) for v in cd.split_tail_space(k, sz, limits)])
            for s in (sz, {kk: vv + 1 for kk, vv in sz.items()}, {kk: vv * 3 // 2 + 7 for kk, vv in sz.items()}):
                dv = cd.default_variant(k, dev, s, be)
                rec("default", k, dev, be, s, dv)
                to_derive.setdefault((k, dv), set()).add(be)
        rec("default0", k, dev, be, cd.default_variant(k, dev, None, be))
for key, v in cd.CUDA_DEFAULTS.items():
    rec("CUDA_DEFAULTS", key, v)
    k = cd.Kind(*key)
    to_derive.setdefault((k, v), set()).add("cuda")
for name in ("DEFAULT_TILES", "DEFAULT_ROWS", "DEFAULT_COLUMNS", "DEFAULT_MAX_PADDING", "MM_WIDTH",
             "TILES_ASYNC_SPACE", "SPLIT_PARTS", "SPLIT_BOUND", "GEMV_GROUPS_SPACE", "GEMV_SPLIT_SPACE",
             "MMA_SPACE", "MMA_K8_AHEAD", "MMA_GROUPS", "EDGE_FORMS", "EDGE_CODELETS", "OPS", "MAP1",
             "REDUCTIONS", "BODY"):
    rec("const", name, repr(getattr(cd, name)))
rec("footprints", [cd.tiles_async_footprint(*p) for p in cd.TILES_ASYNC_SPACE])

# 2. profiles: every entry's variant, its edge forms, fit_choice at sizes
import glob, os
pdir = os.path.join(os.path.dirname(cd.__file__), "profiles")
for f in sorted(glob.glob(os.path.join(pdir, "*.json"))):
    d = json.load(open(f))
    gpu = "CUDA" in d["device"]["label"] or d["device"]["type"] == "gpu"
    for e in d["entries"]:
        k = cd.Kind(e["op"], e["dtype"], e["layout"])
        v = cd.Variant.from_json(e["variant"])
        be = "cuda" if "CUDA" in d["device"]["label"] else "opencl"
        to_derive.setdefault((k, v), set()).add(be)
        for ef in cd.edge_forms(v):
            to_derive.setdefault((k, ef), set()).add(be)
            rec("edge", k, v, ef, cd.edge_lossy(v, ef))
        rec("edge_form", v, cd.edge_form(v))
        for s in (e["sizes"], {kk: vv + 1 for kk, vv in e["sizes"].items()},
                  {kk: vv + 64 for kk, vv in e["sizes"].items()}, {kk: 4097 for kk in e["sizes"]}):
            try:
                rec("fit", k, v, s, cd.fit_choice(k, v, s))
            except Exception as x:  # noqa
                rec("fit", k, v, s, err(x))
rec("lookup", cd.lookup_variant(cd.Kind("mm", "float32", "NN"), "tiles(tm=64,tn=64)"),
    cd.lookup_variant(cd.Kind("mm", "float32", "NN"), ""), cd.variant_key(cd.Kind("mm", "float32", "NN"), cd.Variant.of("glb")))
rec("pad", cd.pad_to(1000, 64), cd.padded_sizes({"M": 1000, "N": 7}, {"M": 64}),
    cd.padding_ratio({"M": 1000, "N": 7}, {"M": 64, "N": 4}))

# bad variants: error lines
bad = [("mm", "float32", "NN", cd.Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4)),
       ("mm", "float64", "NT", cd.Variant.of("edge-tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)),
       ("mm", "complex64", "NN", cd.Variant.of("tiles", tm=64, tn=64, tk=16, rm=8, rn=8, w=4)),
       ("mm", "float32", "NN", cd.Variant.of("nope")), ("gemv", "float32", "N", cd.Variant.of("mma")),
       ("mm", "float32", "NN", cd.Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2, split=3)),
       ("mm", "float32", "NN", cd.Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2, split=3, slots=9, group=4)),
       ("mm", "float64", "NN", cd.Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2, kparts=2)),
       ("mm", "float32", "NN", cd.Variant.of("real")), ("mm", "float32", "NT", cd.Variant.of("nn"))]
for op, dt, lay, v in bad:
    k = cd.Kind(op, dt, lay)
    for fn in (cd.derive, cd.multiples, cd.get_codelet):
        try:
            r = fn(k, v) if fn is not cd.get_codelet else fn(v, k).name
            rec("bad", fn.__name__, k, v, "ok", r if fn is not cd.derive else "derived")
        except Exception as x:  # noqa
            rec("bad", fn.__name__, k, v, err(x))

# 3. derive + compile every collected variant
quick = "--quick" in sys.argv
t0 = time.time()
n_src = 0
items = sorted(to_derive.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1])))
print(len(items), "variants to derive", file=sys.stderr)
for i, ((k, v), bes) in enumerate(items):
    if quick and i % 10:
        continue
    try:
        c = cd.get_codelet(v, k)
    except Exception as x:  # noqa
        rec("derive", k, v, err(x)); continue
    if c.strategy.__name__ == "_plan_only":
        rec("plan", k, v, cd.multiples(k, v)); continue
    try:
        d = cd.derive(k, v)
    except Exception as x:  # noqa
        rec("derive", k, v, err(x)); continue
    try:
        m = cd.multiples(k, v)
    except Exception as x:  # noqa
        m = err(x)
    rec("steps", k, v, H(";".join(str(s.choice) for s in d.steps)), m)
    for be in ("cuda", "opencl"):
        if be not in c.backends:
            continue
        try:
            comp = compile_program(d.final, CompileOptions(dialect=be))
            src = "\n".join(kk.source for kk in comp.kernels)
            rec("src", be, k, v, H(src)); n_src += 1
        except Exception as x:  # noqa
            rec("src", be, k, v, err(x)[:200])
    if i % 25 == 0:
        print(i, f"{time.time() - t0:.0f}s", file=sys.stderr)

# 4. tensor-core tilings (TMA / wgmma / DMMA), fixed lists
from liftkit.rewrite.rules.cuda import tensor_core_mm
TMA = ((128, 256, 32, 8), (256, 128, 32, 8), (128, 256, 64, 8), (256, 128, 64, 8), (128, 128, 32, 8),
       (64, 256, 32, 8), (256, 64, 32, 4), (128, 128, 64, 4))
calls = []
for tm, tn, tk, w in TMA:
    for s in (4, 3, 2):
        for g in (0, 8):
            calls.append(("tf32z", tm, tn, tk, w, s, dict(wgmma=True, copy="tma", group=g)))
        calls.append(("tf32z", tm, tn, tk, w, s, dict(wgmma=True, copy="tma-pair")))
for tm, tn, tk, w, s in ((256, 128, 32, 8, 4), (128, 128, 32, 4, 4), (128, 256, 32, 8, 3), (64, 128, 32, 4, 4),
                         (256, 128, 64, 8, 3), (128, 64, 32, 4, 4)):
    for kind in ("tf32", "tf32z"):
        for copy in ("cp.async", "pair", "registers"):
            calls.append((kind, tm, tn, tk, w, s, dict(wgmma=True, copy=copy)))
for tm, tn, tk, w, s, lines in cd.MMA_SPACE:
    calls.append(("f64", tm, tn, tk, w, s, dict(lines=bool(lines))))
    if lines and tk >= 16 and s >= 2:
        for ik, ahead in ((8, 0), (8, 1), (8, 2)):
            calls.append(("f64", tm, tn, tk, w, s, dict(lines=True, ik=ik, ahead=ahead)))
for kind in ("tf32", "bf16"):
    calls.append((kind, 128, 64, 32, 4, 2, {}))
for kind, *p, kw in calls:
    try:
        d = tensor_core_mm(kind, *p, **kw)
        comp = compile_program(d.final, CompileOptions(dialect="cuda"))
        rec("tc", kind, p, sorted(kw.items()), H("\n".join(kk.source for kk in comp.kernels))); n_src += 1
    except Exception as x:  # noqa
        rec("tc", kind, p, sorted(kw.items()), err(x)[:300])

# 5. wgmma pattern tile checks (error lines)
from liftkit import dsl as D
from liftkit.ir.nodes import Lambda, Param
from liftkit.ir.patterns import cuda as pc
from liftkit.types import float32
from liftkit.ir.typecheck import check_program
M, N, K = D.size("M"), D.size("N"), D.size("K")


def by_hand(cls, tm, tn, tk, warps, stages):
    A, B = Param("A", float32[K][M]), Param("B", float32[N][K])
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))
    body = D.join << D.mapWrg(1)(lambda ar: D.map(D.join) << D.transpose << D.mapWrg(0)(
        lambda bc: D.join << cls(warps, stages, lambda p: p, 0.0) << D.zip(ar, bc))
        << tiles(tn) << D.transpose << B) << tiles(tm) << A
    return Lambda((A, B), body)


for cname in ("reduceWgmmaAsyncTF32Z", "reduceWgmmaTmaTF32Z", "reduceWgmmaPairTF32",
              "reduceWgmmaTmaPairTF32Z", "reduceWgmmaTF32"):
    cls = getattr(D, cname)
    for p in ((256, 128, 32, 8, 4), (128, 256, 32, 8, 4), (128, 512, 32, 8, 4), (512, 128, 32, 8, 4),
              (256, 128, 32, 8, 2), (128, 256, 32, 8, 9), (256, 128, 32, 6, 4), (260, 128, 32, 8, 4),
              (256, 128, 24, 8, 4), (256, 192, 32, 8, 4), (12, 128, 32, 8, 4), (256, 64, 32, 4, 4)):
        try:
            check_program(by_hand(cls, *p))
            rec("pattern", cname, p, "ok")
        except Exception as x:  # noqa
            rec("pattern", cname, p, err(x)[:400])

open(sys.argv[1], "w").write("\n".join(out) + "\n")
print(len(out), "lines,", n_src, "sources hashed", file=sys.stderr)
