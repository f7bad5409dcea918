import sys, random, time, collections
from liftkit.explore.space import load_rule_space, MacroMove
from liftkit.programs import PROGRAMS
from liftkit.rewrite.core import typed_sites
from liftkit.types import LiftTypeError
space = load_rule_space(sys.argv[2]); p = space.prepare(PROGRAMS[sys.argv[1]].build())
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1); cost = collections.Counter(); n = collections.Counter()
for k in range(int(sys.argv[3])):
    sites = space.typing.sites(p)
    for r in space.all_rules:
        t = time.perf_counter()
        if isinstance(r, MacroMove):
            r._program = None; r.choices_in(p, sites, space.typing)
        else:
            for s in sites:
                try: r.choices(s)
                except LiftTypeError: pass
        cost[r.name] += time.perf_counter() - t
    cs = space.choices(p); rng.shuffle(cs)
    for c in cs:
        try: p = space.apply(p, c); break
        except LiftTypeError: pass
print(len(typed_sites(p)), "sites at the end")
for name, c in cost.most_common(15): print(f"{c:7.3f} {name}")
