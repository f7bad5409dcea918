"""Cheap rejections of a candidate before it is compiled (seed 002 §6.1: only sensible candidates
are worth a compile and a run).

Each filter is a small named function taking a `FilterContext` and returning a reason (a short
sentence) or None. They estimate from the program's types at the real sizes; they are estimates,
and the runtime's own checks (kernel local memory, work-group limits) still catch the rest after
compiling, as runtime errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping, Optional, Sequence

from liftkit.arith import ArithError, ArithExpr
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Lambda
from liftkit.ir.typecheck import is_low_level
from liftkit.rewrite.core import Site, typed_sites
from liftkit.types import ArrayType, LiftTypeError


@dataclass(frozen=True)
class DeviceLimits:
    """What the filters need to know about a device (a plain record, so tests can make one)."""

    is_gpu: bool
    local_mem_size: int
    max_work_group_size: int
    compute_units: Optional[int] = None

    @classmethod
    def from_device(cls, device: Any) -> "DeviceLimits":
        cu = getattr(device, "multiprocessors", None)  # a CUDA device's SMs
        if getattr(device, "cl_device", None) is not None:
            try:
                cu = int(device.cl_device.max_compute_units)
            except Exception:  # noqa: BLE001 - a driver that does not report it: no filter
                cu = None
        return cls(bool(device.is_gpu), int(device.local_mem_size),
                   int(device.max_work_group_size), cu)


@dataclass(frozen=True)
class FilterLimits:
    """Thresholds: private arrays larger than this many bytes per work-item spill on GPUs (the
    default is 256 floats); on a GPU every compute unit should get this many work-groups."""

    max_private_bytes: int = 256 * 4
    min_groups_per_compute_unit: float = 1.0
    glb_group_size: int = 256  # assumed work-group size of mapGlb kernels (the driver chooses)


@dataclass
class FilterContext:
    """A candidate low-level program at the real sizes, for the filters."""

    program: Lambda
    sizes: Mapping[str, int]
    device: DeviceLimits
    limits: FilterLimits = field(default_factory=FilterLimits)

    @cached_property
    def sites(self) -> list[Site]:
        return typed_sites(self.program)

    @cached_property
    def by_path(self) -> dict[tuple[int, ...], Site]:
        return {s.path: s for s in self.sites}

    def value(self, e: Any) -> Optional[int]:
        """An arithmetic expression at the real sizes; None when it depends on variables bound
        inside the program (e.g. iteration counts)."""
        if isinstance(e, int):
            return e
        try:
            return int(e.eval(self.sizes))
        except (ArithError, ZeroDivisionError, TypeError, ValueError):
            return None

    def enclosing_calls(self, site: Site) -> list[Site]:
        """Calls whose pattern's function contains `site`, innermost first."""
        out = []
        for k in range(len(site.path) - 1, 0, -1):
            outer = self.by_path.get(site.path[:k])
            if outer is not None and site.path[k] == 0 and isinstance(outer.f, P.Pattern):
                out.append(outer)
        return out

    def multiplicity(self, site: Site, stop: tuple[type, ...]) -> Optional[int]:
        """How many copies of this call's output exist at once: the product of the lengths of
        the maps around it, up to (not including) the nearest map of a `stop` kind."""
        n = 1
        for outer in self.enclosing_calls(site):
            if isinstance(outer.f, stop):
                break
            if isinstance(outer.f, P.AbstractMap) and outer.arg_types:
                length = _length(outer.arg_types[0])
                v = self.value(length) if length is not None else None
                if v is None:
                    return None
                n *= v
        return n

    def sites_of(self, *kinds: type) -> list[Site]:
        return [s for s in self.sites if isinstance(s.f, kinds)]


Filter = Callable[[FilterContext], Optional[str]]


def _length(t: Any) -> Optional[ArithExpr]:
    return t.length if isinstance(t, ArrayType) else None


def _bytes(ctx: FilterContext, site: Site, space: str) -> Optional[int]:
    from liftkit.codegen.memory import bytes_of

    try:
        return ctx.value(bytes_of(site.type, space))  # type: ignore[arg-type]
    except (LiftTypeError, ArithError):
        return None


def _extents(ctx: FilterContext, kind: type) -> dict[int, int]:
    """Per dimension, the largest input length of a `kind` map (its iteration count)."""
    out: dict[int, int] = {}
    for s in ctx.sites_of(kind):
        length = _length(s.arg_types[0]) if s.arg_types else None
        v = ctx.value(length) if length is not None else None
        if v is not None:
            d = getattr(s.f, "dim", 0)
            out[d] = max(out.get(d, 0), v)
    return out


# ---------------------------------------------------------------------------------------------
# the filters


def still_high_level(ctx: FilterContext) -> Optional[str]:
    """Not a candidate: the code generator has no implementation for map, reduce, partRed."""
    if not is_low_level(ctx.program):
        return "still high-level (map, reduce, partRed or reorder remain)"
    return None


def sizes_not_divisible(ctx: FilterContext) -> Optional[str]:
    """A split, asVector or reorderStride whose factor does not divide its input at these sizes
    (the runtime would refuse to launch), or a stencil's tiles that would leave windows out."""
    from liftkit.codegen.constraints import divisibility_checks

    for d in divisibility_checks(ctx.program):
        length, by = ctx.value(d.length), ctx.value(d.by)
        if length is None or by is None:
            continue
        if by <= 0 or length % by:
            return f"{d.what} does not divide {d.length} = {length}"
    from liftkit.rewrite.rules.stencil import tiling_exact

    return tiling_exact(ctx.program, ctx.sizes)


def work_group_too_large(ctx: FilterContext) -> Optional[str]:
    """mapLcl iteration counts give the work-group size; the device caps it."""
    local = _extents(ctx, P.MapLcl)
    total = math.prod(local.values()) if local else 1
    if total > ctx.device.max_work_group_size:
        return (f"work-groups of {total} work-items; the device allows "
                f"{ctx.device.max_work_group_size}")
    return None


def local_memory_too_large(ctx: FilterContext) -> Optional[str]:
    """toLocal outputs of one work-group (times the maps inside the work-group around them)
    must fit in the device's local memory."""
    total = 0
    for s in ctx.sites_of(P.ToLocal):
        b, m = _bytes(ctx, s, "local"), ctx.multiplicity(s, (P.MapWrg, P.MapGlb))
        if b is None or m is None:
            continue
        total += b * m
    if total > ctx.device.local_mem_size:
        return f"{total} bytes of local memory per work-group; the device has {ctx.device.local_mem_size}"
    return None


def private_memory_too_large(ctx: FilterContext) -> Optional[str]:
    """toPrivate arrays of one work-item (times the sequential maps around them) beyond the
    threshold spill to slow memory on GPUs and blow up compile times everywhere."""
    total = 0
    for s in ctx.sites_of(P.ToPrivate):
        b, m = _bytes(ctx, s, "private"), ctx.multiplicity(s, (P.ParallelMap,))
        if b is None or m is None:
            continue
        total += _shared_out(ctx, s, b) * m
    if total > ctx.limits.max_private_bytes:
        return f"{total} bytes of private memory per work-item (limit {ctx.limits.max_private_bytes})"
    return None


def _shared_out(ctx: FilterContext, site: Site, total: int) -> int:
    """The bytes of toPrivate(mapLcl(d1)(mapLcl(d2)(…))) one work-item holds: the leading
    mapLcl dimensions are shared out among the work-items (the code generator keeps only each
    work-item's part: Generator.thread_dims), e.g. the register blocks of a tiled MM."""
    from liftkit.ir.nodes import FunCall, Lambda, unwrap_eta

    f: object = unwrap_eta(site.f.f)  # type: ignore[attr-defined]
    t, dims = site.type, set()
    while isinstance(f, P.MapLcl) and isinstance(t, ArrayType) and f.dim not in dims:
        n = ctx.value(t.length)
        if not n:
            break
        total, t = -(-total // n), t.elem
        dims.add(f.dim)
        g: object = unwrap_eta(f.f)
        if isinstance(g, Lambda):
            body = g.body if len(g.params) == 1 else None
            g = body.f if isinstance(body, FunCall) and body.args == g.params else None
        f = g
    return total


def too_few_work_items(ctx: FilterContext) -> Optional[str]:
    """On a GPU, a kernel with fewer work-groups than compute units leaves the device idle; the
    papers' CPU versions deliberately use little parallelism, so CPUs are not filtered."""
    cu = ctx.device.compute_units
    if not ctx.device.is_gpu or not cu:
        return None
    need = math.ceil(ctx.limits.min_groups_per_compute_unit * cu)
    wrg = _extents(ctx, P.MapWrg)
    glb = _extents(ctx, P.MapGlb)
    groups = math.prod(wrg.values()) if wrg else 0
    if glb:
        size = max(1, min(ctx.limits.glb_group_size, ctx.device.max_work_group_size))
        groups = max(groups, math.ceil(math.prod(glb.values()) / size))
    if groups < need:
        what = f"{groups} work-group(s)" if groups else "a single work-item (no parallel map)"
        return f"{what} for {cu} compute units"
    return None


DEFAULT_FILTERS: tuple[Filter, ...] = (still_high_level, sizes_not_divisible, work_group_too_large,
                                       local_memory_too_large, private_memory_too_large,
                                       too_few_work_items)


def first_rejection(ctx: FilterContext, filters: Sequence[Filter] = DEFAULT_FILTERS) -> Optional[str]:
    """`name: reason` of the first filter that rejects the candidate, or None."""
    for f in filters:
        reason = f(ctx)
        if reason:
            return f"{f.__name__}: {reason}"
    return None
