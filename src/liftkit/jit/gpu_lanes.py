"""Lanes sharing a reduction loop in GPU kernels (CUDA): which loop of a parallel loop's body a
group of a warp's lanes can share (:func:`lane_plan`), and which loops may defer their index
checks to their end (:func:`deferrable`); ``gpu_codegen.KernelWriter`` writes the code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import types as T
from . import vrir as V
from .errors import JitError
from .passes.walk import nodes


def deferrable(st: V.For) -> bool:
    """A loop whose body only assigns scalars (a reduction such as spmv's
    ``s += data[k] * x[indices[k]]``), with no check but index checks: a failed index
    check can wait for the loop's end. Nothing the body does is seen outside the
    work-item, which stops there with the first failure recorded, so the error is the
    same; meanwhile a failing load is not made (it reads 0) and the loop has no early
    exit, so the GPU keeps loads of several iterations in flight."""
    for x in st.body:
        if not (isinstance(x, V.Assign) and isinstance(x.target, V.Name)):
            return False
    for n in nodes(st.body):
        if isinstance(n, V.BinOp) and n.op in ("floordiv", "mod", "pow") or \
                isinstance(n, (V.Select, V.Logical)):
            return False
    return True


MAX_LANES = 32  # a warp (lanes forced by ``passes={"lanes": n}``)
# The launch-time choice: about LANE_WORK iterations of the shared loop per lane, at most
# AUTO_LANES lanes. The launch has one thread per iteration of the parallel loop, so a group
# of g lanes takes g iterations one after another: on the H100 (results/issue14/lanes-pressure)
# spmv at 12 and at 48 nonzeros per row was fastest with 8 lanes (0.78 and 0.82 ms against
# 0.96 and 0.97 with none); 32 lanes, each row's loads coalesced best, lost to the longer chain
# (1.54 and 1.03 ms).
LANE_WORK = 2
AUTO_LANES = 8


@dataclass(frozen=True)
class LanePlan:
    """A parallel loop whose iteration is mostly one reduction loop over contiguous elements
    (spmv's ``for k in range(indptr[i], indptr[i + 1]): s += data[k] * x[indices[k]]``): on
    CUDA a group of lanes of a warp shares each iteration, taking the loop's iterations in
    turn, so neighbouring lanes read neighbouring elements (one work-item per iteration reads
    them a row apart); the partial sums meet through warp shuffles. ``fixed`` lanes, or a
    count chosen per launch from ``hint`` (array, axis): the loop's length, estimated as that
    axis's extent (divided by the parallel loop's count for a 1-D array: CSR's data)."""
    loop: V.For
    accumulators: tuple[str, ...]
    hint: tuple[str, int, int]  # (array, axis, ndim)
    fixed: int = 0

    def estimate(self, w: Any) -> str:
        a, axis, ndim = self.hint
        ext = f"{w.ident(a)}_n{axis}"
        return f"{ext} / (lk_c0 > 0L ? lk_c0 : 1L)" if ndim == 1 else ext


def _unit_axis(t: T.ArrayType) -> int | None:
    return t.ndim - 1 if t.layout == "C" else 0 if t.layout == "F" else None


def lane_plan(s: V.ParFor, dialect: str, lanes: "bool | int | None") -> LanePlan | None:
    """The reduction loop lanes can share in ``s`` (see :class:`LanePlan`), if any: CUDA only
    (warp shuffles); a 1-D parallel loop whose body is statements without stores, one loop
    summing (``acc = acc + e``, integers or floats; other scalars it assigns are set before
    they are read in each iteration and unused after it) whose index checks wait for its end
    (``deferrable``), then anything the loop's variable and scalars do not reach.
    The loop must index some array with its bare variable along the contiguous axis, and no
    array with the parallel loop's variable there (pagerank's ``MT[j, i]``: neighbouring
    work-items already read neighbours). Floating-point sums are added in another order (a
    tree over the lanes), as ``np.sum``'s pairwise summation does; ``lanes=False`` keeps the
    sequential order."""
    if lanes is not None and not isinstance(lanes, bool) and (
            not isinstance(lanes, int) or lanes < 0 or lanes & (lanes - 1) or lanes > MAX_LANES):
        raise JitError(f"passes['lanes'] must be True, False or a power of two up to "
                       f"{MAX_LANES}, not {lanes!r}")
    if lanes is False or lanes in (0, 1) and lanes is not True or dialect != "cuda" or \
            len(s.vars) != 1:
        return None
    fixed = 0 if lanes is None or lanes is True else int(lanes)
    for at, st in enumerate(s.body):
        if isinstance(st, V.For):
            break
        if any(isinstance(n, V.Assign) and not isinstance(n.target, V.Name) for n in nodes(st)):
            return None  # every lane runs these: no stores
    else:
        return None
    loop, after = s.body[at], s.body[at + 1:]
    if not (isinstance(loop.step, V.Const) and loop.step.value > 0) or \
            not deferrable(loop):
        return None
    if isinstance(loop.start, V.Const) and isinstance(loop.stop, V.Const) and \
            (loop.stop.value - loop.start.value) // loop.step.value < 2 * LANE_WORK:
        return None
    later = {n.name for n in nodes(after) if isinstance(n, V.Name)}
    if loop.var in later:
        return None
    accs: list[str] = []
    assigned = {st.target.name for st in loop.body}
    seen: set[str] = set()  # scalars assigned so far in an iteration
    for st in loop.body:
        t, v = st.target.name, st.value
        names = [n.name for n in nodes(v) if isinstance(n, V.Name)]
        if isinstance(v, V.BinOp) and v.op == "add" and t not in seen and \
                any(isinstance(o, V.Name) and o.name == t for o in (v.left, v.right)) and \
                names.count(t) == 1 and isinstance(st.target.type, T.ScalarType) and \
                st.target.type.name in ("int32", "int64", "float32", "float64"):
            accs.append(t)
            names.remove(t)
        elif t in later or t in accs:
            return None  # needed after the loop, or a sum assigned otherwise
        if any(r in assigned and r not in seen or r in accs for r in names):
            return None  # carried from one iteration to the next, or a sum read
        seen.add(t)
    bounds = {n.name for n in nodes((loop.start, loop.stop, loop.step)) if isinstance(n, V.Name)}
    if not accs or bounds & set(accs):
        return None  # no sum, or one the bounds read (each lane's sum starts from zero)
    hint = None
    for n in nodes(loop.body):
        if isinstance(n, V.Index) and isinstance(n.array, V.Name) and \
                isinstance(n.array.type, T.ArrayType) and len(n.indices) == n.array.type.ndim:
            ax = _unit_axis(n.array.type)
            ix = n.indices[ax] if ax is not None else None
            if isinstance(ix, V.Name) and ix.name == s.vars[0]:
                return None
            if isinstance(ix, V.Name) and ix.name == loop.var and hint is None:
                hint = (n.array.name, ax, n.array.type.ndim)
    if hint is None:
        return None
    return LanePlan(loop, tuple(accs), hint, fixed)
