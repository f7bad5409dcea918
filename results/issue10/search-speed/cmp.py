"""Print choices along a fixed pseudo-random walk (compare old vs new engine)."""
import sys, random, time
from liftkit.explore.space import load_rule_space
from liftkit.programs import PROGRAMS
prog_name, rules, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
space = load_rule_space(rules)
spec = PROGRAMS[prog_name]
p = space.prepare(spec.build())
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
t = time.time(); out = []
for k in range(steps):
    cs = space.choices(p)
    out.append(len(cs))
    for c in cs: print(k, c)
    if not cs: break
    rng.shuffle(cs)
    for c in cs:
        try:
            p = space.apply(p, c); print("applied", c); break
        except Exception as e:
            print("fail", c, type(e).__name__)
print("counts", out, "time", round(time.time()-t, 2), file=sys.stderr)
