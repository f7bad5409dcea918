import sys
from liftkit import dsl as D
from liftkit.ir.nodes import Lambda, Param
from liftkit.ir.typecheck import check_program
from liftkit.types import float32
M, N, K = D.size("M"), D.size("N"), D.size("K")
def by_hand(cls, tm, tn, tk, warps, stages):
    A, B = Param("A", float32[K][M]), Param("B", float32[N][K])
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))
    body = D.join << D.mapWrg(1)(lambda ar: D.map(D.join) << D.transpose << D.mapWrg(0)(
        lambda bc: D.join << cls(warps, stages, lambda p: p, 0.0) << D.zip(ar, bc))
        << tiles(tn) << D.transpose << B) << tiles(tm) << A
    return Lambda((A, B), body)
out = []
for cname in ("reduceWgmmaAsyncTF32Z", "reduceWgmmaTmaTF32Z", "reduceWgmmaPairTF32", "reduceWgmmaTmaPairTF32Z", "reduceWgmmaTF32", "reduceWgmmaTF32Z", "reduceWgmmaAsyncTF32", "reduceWgmmaPairTF32Z"):
    cls = getattr(D, cname)
    for s in range(0, 11):
        for p in ((256, 128, 32, 8, s), (128, 128, 32, 8, s), (512, 128, 32, 8, s), (128, 96, 32, 4, s)):
            try:
                check_program(by_hand(cls, *p)); out.append(f"{cname} {p} ok")
            except Exception as x:
                out.append(f"{cname} {p} {type(x).__name__}: {x}")
open(sys.argv[1], "w").write("\n".join(out))
print(len(out), sum(" ok" in l for l in out))
