"""Hash generated OpenCL/CUDA sources and rule outputs for the GEMV rules (baseline vs refactor)."""
import hashlib, json, sys
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompileOptions
from liftkit.ir.printer import show

out = {}

def h(s): return hashlib.sha256(s.encode()).hexdigest()[:16]

def sources(name, prog):
    out[name + "|text"] = h(show(prog))
    for d in ("opencl", "cuda"):
        cp = compile_program(prog, CompileOptions(dialect=d))
        for i, k in enumerate(cp.kernels):
            out[f"{name}|{d}|{i}"] = h(k.source + "\n" + repr(k.build_options))

# (a) bundled derivations using the rules: replay their steps
from liftkit.explore import bundled
from liftkit.explore.space import load_rule_space
from liftkit.programs import PROGRAMS
NAMES = ("gemv-t-groups", "gemv-row-groups", "gpu-gemv", "gemv-lane", "gemv-row-blocks", "gemv-column-blocks")
for d in bundled.load_all():
    if not any(n in d.text() for n in NAMES):
        continue
    spec = PROGRAMS[d.program]
    sp = load_rule_space(d.rules)
    prog = sp.replay(spec.program, d.steps)
    sources(f"bundled:{d.path.name}", prog)

# (b) blas codelet variants
from liftkit.blas import Kind, Variant
from liftkit.blas.codelets import derive, GEMV_GROUPS_SPACE
variants = {"N": [Variant.of("row-groups", lanes=l, g=g, w=w) for l, g, w in GEMV_GROUPS_SPACE["N"]]
                 + [Variant.of("row-groups", lanes=16, g=4, w=1)]
                 + [Variant.of("row-blocks", r=r, w=w) for r in (2, 4, 8) for w in (16, 8)],
            "T": [Variant.of("column-groups", lanes=l, g=g, w=w) for l, g, w in GEMV_GROUPS_SPACE["T"]]
                 + [Variant.of("column-groups", lanes=32, g=16, w=1)]
                 + [Variant.of("column-blocks", k=k, w=w) for k in (2, 4, 8) for w in (16, 8)]}
for dt in ("float32", "float64"):
    for lay, vs in variants.items():
        for v in vs:
            sources(f"blas:{dt}:{lay}:{v}", derive(Kind("gemv", dt, lay), v).final)

# (c) the search rules' choices and every built alternative at atax/gesummv (text only)
from liftkit.rewrite.rules import RULES_BY_NAME, normal_form
from liftkit.rewrite.core import Choice, apply_choice, typed_sites
from liftkit.rewrite.rules.gemv import GEMV_RULES
rules = dict(RULES_BY_NAME) | dict(GEMV_RULES)
names = ["gemv-t-groups", "gemv-row-groups", "gemv-row-blocks", "gemv-column-blocks", "gemv-lane-rows", "gemv-lane-columns"]
progs = {"atax": PROGRAMS["atax"].build(), "gesummv": PROGRAMS["gesummv"].build()}
for dt in ("float32", "float64"):
    for lay in ("N", "T"):
        progs[f"gemv-{dt}-{lay}"] = Kind("gemv", dt, lay).program()
for pn, p0 in list(progs.items()):
    for pv, p in (("raw", p0), ("nf", normal_form(p0))):
        for s in typed_sites(p):
            for rn in names:
                ch = rules[rn].choices(s)
                if not ch:
                    continue
                out[f"choices:{pn}:{pv}:{rn}:{s.path}"] = h(json.dumps(ch))
                for c in ch:
                    q = apply_choice(p, Choice(rn, s.path, c), rules)
                    out[f"apply:{pn}:{pv}:{rn}:{s.path}:{json.dumps(c, sort_keys=True)}"] = h(show(q))
json.dump(out, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print(len(out), "entries;", sum(1 for k in out if '|opencl|' in k or '|cuda|' in k), "kernel sources;",
      sum(1 for k in out if k.startswith('apply:')), "applications")
