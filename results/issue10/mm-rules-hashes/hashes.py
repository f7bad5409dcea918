"""Hash generated OpenCL/CUDA sources and rule outputs for the MM rules (baseline vs refactor)."""
import hashlib, json, sys
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompileOptions
from liftkit.ir.printer import show

out = {}


def h(s): return hashlib.sha256(s.encode()).hexdigest()[:16]


def sources(name, prog, dialects=("opencl", "cuda")):
    out[name + "|text"] = h(show(prog))
    for d in dialects:
        try:
            cp = compile_program(prog, CompileOptions(dialect=d))
        except Exception as e:  # noqa: BLE001 - a program one dialect refuses: hash the refusal
            out[f"{name}|{d}|error"] = h(type(e).__name__ + str(e))
            continue
        for i, k in enumerate(cp.kernels):
            out[f"{name}|{d}|{i}"] = h(k.source + "\n" + repr(k.build_options))


# (a) bundled derivations using an mm rule: replay their steps
from liftkit.explore import bundled
from liftkit.explore.space import load_rule_space
from liftkit.programs import PROGRAMS
for d in bundled.load_all():
    if not any(f"mm-{n}" in d.text() for n in ("local-tiles", "tile-2d", "tiles", "private-blocks")):
        continue
    spec = PROGRAMS[d.program]
    prog = load_rule_space(d.rules).replay(spec.program, d.steps)
    sources(f"bundled:{d.path.parent.name}/{d.path.name}", prog)

# (b) every mm rule's choices and applications on MM programs (test_mm_rules.py's shapes), the
# tiled program, the staged (scalar/vector) programs and the loop kernels
sys.path.insert(0, "tests/rewrite")
from test_mm_rules import RULES, mm_program, mm_program_of  # noqa: E402
from liftkit.dsl import size
from liftkit.rewrite import Choice, apply_choice, enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.types import SCALARS
MM = ["mm-local-tiles", "mm-tile-2d", "mm-tiles-lower", "mm-tiles-stage-local", "mm-tiles-vectorize",
      "mm-tiles-blocks", "mm-tiles-unroll", "mm-private-blocks"]
rules = [RULES[n] for n in MM]
progs = {"mm-64x64x16": normal_form(mm_program(64, 64, 16)),
         "mm-sym": normal_form(mm_program(size("M"), size("N"), size("K"))),
         "mm-double-NT": normal_form(mm_program_of(SCALARS["double"], "mult", "NT", size("M"), size("N"), size("K"))),
         "mm-cdouble-NN": normal_form(mm_program_of(SCALARS["cdouble"], "multConj", "NN", 32, 32, 16))}
seen = 0
for pn, p in list(progs.items()):
    todo = [(pn, p, 0)]
    while todo:
        name, q, depth = todo.pop(0)
        for c in enumerate_choices(q, rules):
            key = f"{name} > {c.rule}{c.path}{json.dumps(dict(c.params), sort_keys=True)}"
            r = apply_choice(q, c, RULES)
            out["apply:" + key] = h(show(r))
            seen += 1
            # follow the small steps a few levels (first few choices), compile the low-level ones
            if depth < 4 and c.rule in ("mm-tile-2d", "mm-tiles-stage-local", "mm-tiles-vectorize",
                                        "mm-tiles-blocks", "mm-tiles-lower") and seen % 3 == 0:
                todo.append((key, r, depth + 1))
            if c.rule in ("mm-tiles-blocks", "mm-tiles-unroll", "mm-local-tiles") and seen % 4 == 0:
                sources("kernel:" + key, r, ("opencl",))
json.dump(out, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print(len(out), "entries;", sum(1 for k in out if '|opencl|' in k or '|cuda|' in k), "kernel sources;",
      sum(1 for k in out if k.startswith('apply:')), "applications")
