"""Each data-layout pattern as a view: how its result is read, and, where the pattern is a
bijection the code generator can invert, how its argument is written into the destination its
consumer chose (a join in front of a destination makes the argument write through a split view)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from liftkit.codegen import views as V
from liftkit.codegen.dialect import OPENCL, Dialect
from liftkit.codegen.views import Arith, CodegenError, View
from liftkit.ir import patterns as P
from liftkit.types import ArrayType, Type


def read_view(p: P.Pattern, args: Sequence[View], rt: Type, ar: Arith,
              apply_layout: Optional[Callable] = None, dialect: Dialect = OPENCL) -> View:
    """The view of p's result over its arguments' views (`apply_layout(g, view)` applies a
    layout-only function, for map(g)); `dialect` spells a pad's constant."""
    x = args[0]
    if isinstance(p, P.Map):
        assert apply_layout is not None
        g = p.f
        return V.ElementwiseView(x, lambda v: apply_layout(g, v), rt)
    if isinstance(p, P.Split):
        return V.SplitView(x, p.n, rt)
    if isinstance(p, P.Join):
        inner = V.array_view_type(V.array_view_type(x.type).elem)
        return V.JoinView(x, inner.length, rt)
    if isinstance(p, P.Zip):
        return V.ZipView(tuple(args), rt)
    if isinstance(p, P.Tuple):
        return V.TupleView(tuple(args), rt)
    if isinstance(p, (P.Unzip, P.Id, P.Reorder)):
        return V.SameView(x, rt)
    if isinstance(p, P.Streamed):
        return V.StreamedView(x, rt)
    if isinstance(p, P.Get):
        return V.GetView(x, p.index(), rt)
    if isinstance(p, P.Gather):
        return V.IndexMapView(x, V.gather_fn(p.f, V.array_view_type(x.type).length), rt)
    if isinstance(p, P.ReorderStride):
        return V.IndexMapView(x, V.reorder_stride_fn(p.s, V.array_view_type(x.type).length), rt)
    if isinstance(p, P.Transpose):
        return V.TransposeView(x, rt)
    if isinstance(p, P.Slide):
        return V.SlideView(x, p.step, rt)
    if isinstance(p, P.Pad):
        xt = V.array_view_type(x.type)
        const = None
        if p.boundary.value is not None:
            from liftkit.codegen.emit import literal_c

            const = V.ValueView(literal_c(p.boundary.value.value, p.boundary.value.type, dialect),
                                p.boundary.value.type)
        return V.PadView(x, p.left, xt.length, p.boundary, const, rt)
    if isinstance(p, P.Crop):
        return V.CropView(x, p.left, rt)
    if isinstance(p, P.AsVector):
        return V.AsVectorView(x, p.width(), rt)
    if isinstance(p, P.AsScalar):
        elem = V.array_view_type(x.type).elem
        return V.AsScalarView(x, V.vector_width(elem), rt)
    if isinstance(p, P.Scatter):
        raise CodegenError("scatter must be applied to the result of a computation (it decides where "
                           "that computation writes); reading through scatter is not supported")
    raise CodegenError(f"no view for pattern {p.name}")


def write_views(p: P.Pattern, dest: View, arg_types: Sequence[Type], ar: Arith,
                invert: Optional[Callable] = None) -> Optional[list[View]]:
    """Destinations for p's arguments so that writing them fills `dest` with p's result, or None
    when p cannot be inverted this way (the arguments then get their own memory).
    `invert(g, dest, arg_type)` inverts a layout-only function (for map(g))."""
    if isinstance(p, P.Map):
        if invert is None:
            return None
        g, elem_t = p.f, _arr(arg_types[0]).elem
        probe = invert(g, dest.access(_probe_var()), elem_t)
        if probe is None:
            return None
        return [V.ElementwiseView(dest, lambda d: invert(g, d, elem_t), arg_types[0])]
    if isinstance(p, P.Join):
        inner = _arr(arg_types[0]).elem
        return [V.SplitView(dest, _arr(inner).length, arg_types[0])]
    if isinstance(p, P.Split):
        return [V.JoinView(dest, p.n, arg_types[0])]
    if isinstance(p, P.Transpose):
        return [V.TransposeView(dest, arg_types[0])]
    if isinstance(p, (P.Id, P.Reorder, P.Unzip, P.Streamed)):
        return [V.SameView(dest, arg_types[0])]
    if isinstance(p, P.Scatter):
        return [V.IndexMapView(dest, V.gather_fn(p.f, _arr(arg_types[0]).length), arg_types[0])]
    if isinstance(p, P.ReorderStride):
        n = _arr(arg_types[0]).length
        return [V.IndexMapView(dest, V.reorder_stride_fn(n // p.s, n), arg_types[0])]
    if isinstance(p, P.AsScalar):
        w = V.vector_width(_arr(arg_types[0]).elem)
        return [V.AsVectorView(dest, w, arg_types[0])]
    if isinstance(p, P.AsVector):
        return [V.AsScalarView(dest, p.width(), arg_types[0])]
    if isinstance(p, (P.Zip, P.Tuple)):
        return [V.GetView(dest, k, t) for k, t in enumerate(arg_types)]
    if isinstance(p, P.Crop):  # the dropped cells' stores guarded away
        return [V.GuardView(dest, p.left, _arr(dest.type).length, arg_types[0])]
    return None


def _probe_var():  # type: ignore[no-untyped-def]
    from liftkit.arith import Var

    return Var("probe", 0, 1)


def _arr(t: Type) -> ArrayType:
    return V.array_view_type(t)
