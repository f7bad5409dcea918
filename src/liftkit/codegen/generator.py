"""Code generation for one kernel (seed 000 §5): a walk over the IR in destination-passing
style.

`gen(expr, dest)` emits the code computing `expr` and returns a view of its value. When a
consumer already owns the memory the value must end up in (a map's output element, the kernel's
output), it passes that memory as `dest`, and data-layout patterns between the two turn it into
the matching write view (a join before the destination becomes a split view of it). Otherwise a
computation allocates memory in the address space of Algorithm 1 and returns a view of it, and a
data-layout pattern returns a view of its argument's view: no copies. The statements are the
same for OpenCL C and CUDA C; spellings come from the emitter's `Dialect`.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst, prove_eq, prove_le
from liftkit.codegen import views as V
from liftkit.codegen.cast import Barrier, Block, For, If, Line, Stmt
from liftkit.codegen.dialect import OPENCL, Dialect
from liftkit.codegen.emit import Emitter, literal_c, space_of_view
from liftkit.codegen.kernel import CompileOptions
from liftkit.codegen.memory import Memory, Space, ctype, element_count, infer_space, storage_elem
from liftkit.codegen.quirks import NO_VECTORIZE_PRAGMA, SERIAL_SUB_REDUCTIONS, may_subtract
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Param, UserFun, unwrap_eta, walk
from liftkit.ir.typecheck import TypeChecker, layout_only
from liftkit.types import ArrayType, TupleType, Type, VectorType


@dataclass(frozen=True)
class Scope:
    """An enclosing map: which kind, its loop variable and length."""

    kind: str  # "glb" | "wrg" | "lcl" | "seq"
    dim: int
    var: ArithExpr
    length: ArithExpr


@dataclass(frozen=True)
class Ctx:
    scopes: tuple[Scope, ...] = ()
    write_to: Optional[Space] = None
    enclosing: tuple[P.Pattern, ...] = ()

    def inside(self, p: P.Pattern, scope: Optional[Scope] = None) -> "Ctx":
        return replace(self, enclosing=self.enclosing + (p,),
                       scopes=self.scopes + ((scope,) if scope else ()))


@dataclass(frozen=True)
class Arg:
    """A not-yet-generated argument: generate it (optionally into a destination), or ask its type."""

    gen: Callable[[Optional[View]], View]
    type: Callable[[], Type]
    space: Callable[[], Optional[Space]]


@dataclass
class GlobalTemp:
    """A global buffer the host must allocate for a temporary computed inside the kernel."""

    memory: Memory
    type: Type
    zeroed: bool = False  # zero-filled by the host, left zero by the kernel (Buffer.zeroed)


class Generator:
    def __init__(self, options: CompileOptions, em: Emitter, local_size: Optional[tuple[int, ...]],
                 no_barrier: set[int], final_maps: set[int]) -> None:
        self.opt = options
        self.em = em
        self.local_size = local_size
        self.no_barrier = no_barrier
        self.final_maps = final_maps
        self.temps: list[GlobalTemp] = []
        # names of the variables of exactly-once mapLcl loops (each work-item's own index) by
        # dimension: what private memory written under a mapLcl may be read with
        self.thread_ids: dict[str, int] = {}
        # fences of the barriers a sequential loop of one mapLcl call holds back until it ends
        self.deferred_fences: Optional[set[str]] = None
        # one block per work-group (a CUDA pattern's `whole_grid`): mapWrg runs as an `if`, no
        # grid-stride loop (ptxas keeps setmaxnreg's register counts only outside loops)
        self.whole_grid = False

    # -- helpers -----------------------------------------------------------------------------
    def type_env(self, env: dict[Param, View]) -> dict[Param, Type]:
        return {p: v.type for p, v in env.items()}

    def space_env(self, env: dict[Param, View]) -> dict[object, Space]:
        return {p: (space_of_view(v) or "global") for p, v in env.items()}

    def result_type(self, f: FunDecl, arg_types: Sequence[Type], env: dict[Param, View], ctx: Ctx) -> Type:
        return TypeChecker().apply(f, arg_types, self.type_env(env), ctx.enclosing)

    def expr_arg(self, e: Expr, env: dict[Param, View], ctx: Ctx) -> Arg:
        return Arg(lambda dest: self.gen(e, env, ctx, dest),
                   lambda: TypeChecker().expr(e, self.type_env(env), ctx.enclosing),
                   lambda: infer_space(Lambda((), e), [], ctx.write_to, self.space_env(env)))

    @staticmethod
    def view_arg(v: View, g: "Generator") -> Arg:
        return Arg(lambda dest: g.finish_value(v, dest), lambda: v.type, lambda: space_of_view(v))

    def finish_value(self, view: View, dest: Optional[View], why: str = "") -> View:
        """Return a view, or write its (single) value into dest."""
        if dest is None:
            return view
        if isinstance(view.type, ArrayType):
            raise CodegenError(why or f"an array ({view.type}) is passed through unchanged where it "
                               "must be stored: copy it with a map of id (e.g. mapSeq(id))")
        self.em.store(dest, self.em.load(view))
        return dest

    # -- expressions -------------------------------------------------------------------------
    def gen(self, e: Expr, env: dict[Param, View], ctx: Ctx, dest: Optional[View]) -> View:
        if isinstance(e, Param):
            if e not in env:
                raise CodegenError(f"parameter {e.name} has no value here")
            return self.finish_value(env[e], dest)
        if isinstance(e, Literal):
            self.em.note_type(e.type)
            view = constant_view(e, self.em.dialect)
            if view is None:  # an array literal whose elements differ: a const array
                view = V.MemoryView(self.em.constant_array(e.value, e.type), e.type)  # type: ignore[arg-type]
            return self.finish_value(view, dest)
        assert isinstance(e, FunCall)
        args = [self.expr_arg(a, env, ctx) for a in e.args]
        return self.call(e.f, args, env, ctx, dest, id(e))

    def gen_independent(self, gens: Sequence[Callable[[], View]], ctx: Ctx) -> list[View]:
        """Generate computations none of which reads another's result (a call's arguments,
        the components of a tuple): the barriers that end each merge into one after the last
        (two tiles copied into local memory side by side need one barrier, not two)."""
        merge = (self.opt.eliminate_barriers and len(gens) > 1
                 and not any(s.kind == "lcl" for s in ctx.scopes))
        views, held = [], set()
        for g in gens:
            block, since = self.em.block, len(self.em.block.stmts)
            views.append(g())
            if merge and self.em.block is block:
                held |= self.em.take_trailing_barrier(since)
        if held:
            self.em.barrier(held)
        return views

    def apply(self, f: FunDecl, views: Sequence[View], env: dict[Param, View], ctx: Ctx,
              dest: Optional[View], node: Optional[int] = None) -> View:
        return self.call(f, [self.view_arg(v, self) for v in views], env, ctx, dest, node)

    def call(self, f: FunDecl, args: Sequence[Arg], env: dict[Param, View], ctx: Ctx,
             dest: Optional[View], node: Optional[int]) -> View:
        if isinstance(f, Lambda):
            env2 = dict(env)  # a let: the arguments are independent computations
            views = self.gen_independent([lambda a=a: a.gen(None) for a in args], ctx)
            env2.update(zip(f.params, views))
            return self.gen(f.body, env2, ctx, dest)
        if isinstance(f, UserFun):
            return self.user_fun(f, [a.gen(None) for a in args], dest)
        if isinstance(f, P.CudaPattern):  # patterns beyond OpenCL: codegen/cuda_patterns.py
            from liftkit.codegen.cuda_patterns import generate

            return generate(self, f, args, env, ctx, dest)
        if isinstance(f, P.LastWrg):
            from liftkit.codegen.last_wrg import gen_last_wrg

            return gen_last_wrg(self, f, args, env, ctx, dest)
        if isinstance(f, P.WrgItems):  # the kernel built for its work-groups' n work-items
            if self.em.dialect.occupancy is not None:
                self.em.kernel_attributes.append(self.em.dialect.occupancy(f.count(), 1))
            return self.call(f.f, args, env, ctx, dest, node)
        if isinstance(f, P.AddressSpaceWrapper):
            return self.call(f.f, args, env, replace(ctx.inside(f), write_to=f.space), dest, node)  # type: ignore[arg-type]
        if isinstance(f, (P.ParallelMap, P.MapSeq, P.MapSeqUnroll)):
            return self.gen_map(f, args[0], env, ctx, dest, node)
        if isinstance(f, P.MapVec):
            return self.gen_map_vec(f, args[0], env, ctx, dest)
        if isinstance(f, (P.ReduceSeq, P.ReduceSeqUnroll)):
            return self.gen_reduce(f, args, env, ctx, dest)
        if isinstance(f, P.Iterate):
            return self.gen_iterate(f, args[0], env, ctx, dest)
        if isinstance(f, P.At):
            return self.gen_at(args, dest)
        if isinstance(f, P.Map) and layout_only(f.f):
            return self.gen_layout(f, args, env, ctx, dest)
        if isinstance(f, (P.Map, P.Reduce, P.PartRed)):
            raise CodegenError(f"{f.name} is a high-level pattern: lower it first (e.g. map -> mapGlb "
                               "or mapSeq, reduce -> reduceSeq); the rewrite rules do this")
        if isinstance(f, P.Pattern):
            return self.gen_layout(f, args, env, ctx, dest)
        raise CodegenError(f"cannot generate code for {f!r}")

    # -- user functions ----------------------------------------------------------------------
    def user_fun(self, f: UserFun, views: Sequence[View], dest: Optional[View]) -> View:
        if len(views) != f.arity:  # tuple arguments are spread over the parameters
            spread: list[View] = []
            for v in views:
                if isinstance(v.type, TupleType):
                    spread += [v.get(k) for k in range(len(v.type.elems))]
                else:
                    spread.append(v)
            views = spread
        self.em.user_funs.setdefault(f.name, f)
        for t in f.param_types + (f.out_type,):
            self.em.note_type(t)
        call = f"{c_fun_name(f)}({', '.join(self.em.load(v) for v in views)})"
        if dest is None:  # an intermediate scalar: a register
            m = self.em.private_var(f.out_type, "v", call)
            return V.MemoryView(m, f.out_type)
        self.em.store(dest, call)
        return dest

    def gen_map_vec(self, p: P.MapVec, arg: Arg, env: dict[Param, View], ctx: Ctx,
                    dest: Optional[View]) -> View:
        """The vector form of the lane function: a user function, or λx. g(…, x, …) whose other
        arguments (bound outside) are broadcast to vectors, `(float4)(a)`."""
        v = arg.gen(None)
        assert isinstance(v.type, VectorType)
        width = v.type.width
        f = unwrap_eta(p.f)
        if isinstance(f, UserFun):
            return self.user_fun(f.vectorize(width), [v], dest)
        body = f.body if isinstance(f, Lambda) and len(f.params) == 1 else None
        if not (isinstance(body, FunCall) and isinstance(body.f, UserFun)):
            raise CodegenError("mapVec needs a user function, or a lambda applying one to the lane "
                               "and to scalars bound outside it")
        views = []
        for a in body.args:
            if a is f.params[0]:  # type: ignore[union-attr]
                views.append(v)
                continue
            s = self.gen(a, env, ctx, None)
            vt = VectorType(s.type, width)  # type: ignore[arg-type]
            self.em.note_type(vt)
            broadcast = self.em.dialect.vector_literal(ctype(vt), [self.em.load(s)])
            views.append(V.MemoryView(self.em.private_var(vt, "b", broadcast), vt))
        return self.user_fun(body.f.vectorize(width), views, dest)

    # -- memory ------------------------------------------------------------------------------
    def allocate(self, t: Type, space: Space, ctx: Ctx, hint: str) -> View:
        """Memory for a value of type t computed under ctx: replicated once per enclosing parallel
        iteration that may run at the same time (work-groups and threads for global memory,
        threads of the group for local memory), none for private memory."""
        if space == "private":
            if isinstance(t, ArrayType):
                return V.MemoryView(self.em.private_array(t, hint), t)
            return V.MemoryView(self.em.private_var(t, hint), t)
        if space == "local":
            if not any(s.kind == "wrg" for s in ctx.scopes):
                raise CodegenError("local memory is used outside a work-group (mapWrg)")
            last_wrg = max(k for k, s in enumerate(ctx.scopes) if s.kind == "wrg")
            reps = [s for s in ctx.scopes[last_wrg + 1:] if s.kind == "lcl"]
        else:
            reps = [s for s in ctx.scopes if s.kind in ("glb", "wrg", "lcl")]
        full = t
        for s in reversed(reps):
            full = ArrayType(full, s.length)
        if space == "local":
            mem = self.em.local_array(t, hint, element_count(full, "local") // element_count(t, "local"))
        else:
            self.em.note_type(storage_elem(t, "global"))
            mem = Memory(self.em.names.fresh(hint), "global", storage_elem(t, "global"),
                         element_count(full, "global"), "param")
            self.temps.append(GlobalTemp(mem, full))
        view: View = V.MemoryView(mem, full)
        for s in reps:
            view = view.access(s.var)
        return view

    # -- maps ----------------------------------------------------------------------------------
    def gen_map(self, p: P.AbstractMap, arg: Arg, env: dict[Param, View], ctx: Ctx,
                dest: Optional[View], node: Optional[int]) -> View:
        xs = arg.gen(None)
        xt = V.array_view_type(xs.type)
        out_t = self.result_type(p, [xt], env, ctx)
        shared_temp = False  # a temporary of its own that other work-items can read
        if dest is None:
            space = infer_space(p, [space_of_view(xs) or "global"], ctx.write_to, self.space_env(env))
            dims = self.thread_dims(p, out_t) if space == "private" else ()
            if dims:
                elem = out_t
                for _ in dims:
                    elem = elem.elem  # type: ignore[attr-defined]
                dest = V.ThreadPrivateView(self.allocate(elem, space, ctx, "tmp"), out_t, dims,
                                           self.thread_ids)
            else:
                dest = self.allocate(out_t, space, ctx, "tmp")
            shared_temp = space != "private"
        kind = {P.MapGlb: "glb", P.MapWrg: "wrg", P.MapLcl: "lcl"}.get(type(p), "seq")
        dim = getattr(p, "dim", 0)
        unroll = isinstance(p, P.MapSeqUnroll) and self.opt.unroll
        in_lcl = any(s.kind == "lcl" for s in ctx.scopes)
        if kind == "lcl" and in_lcl and shared_temp and node not in self.no_barrier:
            # its result is read by other work-items of the enclosing mapLcl's iteration, and
            # a barrier there may not be reached by every work-item of the group
            outer = next(s for s in ctx.scopes if s.kind == "lcl")
            raise CodegenError(
                f"mapLcl({dim}) inside mapLcl({outer.dim}) writes its result to {space} memory "
                "that other work-items then read, and no barrier can order them inside "
                f"mapLcl({outer.dim}) (not every work-item may reach one): compute it with "
                f"mapSeq in each work-item, or outside mapLcl({outer.dim}), where a barrier "
                "follows it")
        # mapSeq(mapLcl(f)) outside any mapLcl (a tile copied in several rounds): iteration i
        # reads only xs[i], computed before the loop, and writes only dest[i], so no iteration
        # reads what another wrote: one barrier after the loop replaces one per iteration (also
        # in rewrite normal form, mapSeq(λx. mapLcl(f)(x)), as rules produce it)
        defer = (kind == "seq" and not in_lcl and isinstance(unwrap_eta(p.f), P.MapLcl)
                 and self.opt.eliminate_barriers and self.deferred_fences is None)
        if defer:
            self.deferred_fences = set()
        for i, body_ctx in self.loop(kind, dim, xt.length, ctx, p, unroll):
            self.apply(p.f, [xs.access(i)], env, body_ctx, dest.access(i))
        if defer:
            fences, self.deferred_fences = self.deferred_fences, None
            if fences:
                self.em.barrier(fences)
        if kind == "lcl" and not in_lcl:
            last_without_local = node in self.final_maps and not self.em.local_decls
            if not (self.opt.eliminate_barriers and (node in self.no_barrier or last_without_local)):
                fences = _FENCES.get(space_of_view(dest), _FENCES[None])
                if self.deferred_fences is not None:
                    self.deferred_fences |= fences
                else:
                    self.em.barrier(fences)
        return dest

    def thread_dims(self, p: P.Pattern, t: Type) -> tuple[int, ...]:
        """The dimensions of nested mapLcl's (mapLcl(1)(λx. mapLcl(0)(…)(…))) that run exactly
        once per work-item (length = local size), from p inwards: the
        leading dimensions of their result that need no private storage per work-item."""
        dims: list[int] = []
        f: object = p
        while (isinstance(f, P.MapLcl) and isinstance(t, ArrayType)
               and self.local_size and f.dim < len(self.local_size) and f.dim not in dims
               and prove_eq(t.length, cst(self.local_size[f.dim]))):
            dims.append(f.dim)
            t = t.elem
            g = unwrap_eta(f.f)
            if isinstance(g, Lambda):
                body = g.body if len(g.params) == 1 else None
                g = body.f if isinstance(body, FunCall) else None
            f = g
        return tuple(dims)

    def end_iteration(self, body: list[Stmt], fences: Optional[frozenset[str]] = None) -> None:
        """End one iteration of a sequential loop that every work-item of a group runs. A body
        with a barrier shares memory between the group's work-items (a mapLcl wrote it, others
        read it after the barrier); unless the body ends with a barrier after its last read,
        the next iteration's writes would overwrite what slower work-items still read (a
        write-after-read race across iterations): a barrier ends the iteration. Barrier
        elimination never removes it (it is not a trailing barrier of the loop's block).
        `fences`: those of the barrier (default: those of the body's barriers)."""
        inside = barrier_fences(body)
        if inside and not ends_with_barrier(body):
            self.em.barrier(set(fences or inside))

    def end_group_iteration(self, body: list[Stmt]) -> None:
        """End one iteration of a mapWrg loop (a group runs several when the NDRange has fewer
        groups than iterations): its local memory is reused by the next iteration, so local
        memory read after the body's last barrier needs a barrier before the next iteration's
        writes. Global temporaries are per iteration (replicated over the mapWrg)."""
        names = {m.name for m in self.em.local_decls}
        if barrier_fences(body) and used_after_last_barrier(body, names):
            self.em.barrier(set(_FENCES["local"]))

    def loop(self, kind: str, dim: int, n: ArithExpr, ctx: Ctx, p: P.Pattern, unroll: bool,  # type: ignore[no-untyped-def]
             serial: bool = False):
        """Emit the loop of a map or reduction and yield (index, context of its body) once per
        generated body (several times when unrolled). Control-flow simplification turns a loop
        that runs at most once per thread into an `if`, and exactly once into straight code.
        `serial`: a sequential loop the device's compiler must not vectorise (a quirk)."""
        names = {"glb": "gl_id", "wrg": "wg_id", "lcl": "l_id", "seq": "i"}
        cf = self.opt.simplify_control_flow
        if kind == "seq":
            group = not any(s.kind == "lcl" for s in ctx.scopes)  # run by the whole group
            if unroll:
                if not n.is_constant:
                    raise CodegenError(f"{p.name}: cannot unroll a loop of symbolic length {n}")
                # no barrier between the copies: each allocates its own temporaries
                for k in range(n.value):
                    yield cst(k), ctx.inside(p, Scope(kind, dim, cst(k), n))
                return
            if cf and prove_eq(n, cst(1)):
                yield cst(0), ctx.inside(p, Scope(kind, dim, cst(0), n))
                return
            name = self.em.names.fresh(names[kind])
            var = Var(name, 0, n)
            if serial:
                self.em.line(NO_VECTORIZE_PRAGMA)  # directly before the loop it applies to
            with self.em.for_loop(name, "0", f"{name} < {n.to_c()}", f"{name} += 1"):
                yield var, ctx.inside(p, Scope(kind, dim, var, n))
                if group:
                    self.end_iteration(self.em.block.stmts)
            return
        first, step = self.em.dialect.ids(kind, dim), self.em.dialect.counts(kind, dim)  # type: ignore[arg-type]
        ls = self.local_size[dim] if (kind == "lcl" and self.local_size and dim < len(self.local_size)) else None
        if kind == "lcl" and ls is not None:
            step = str(ls)
        if cf and prove_eq(n, cst(1)):  # one element: the first thread/group does it, index 0
            with self.em.if_(f"{first} == 0"):
                yield cst(0), ctx.inside(p, Scope(kind, dim, cst(0), n))
            return
        name = self.em.names.fresh(names[kind])
        var = Var(name, 0, n)
        scope_ctx = ctx.inside(p, Scope(kind, dim, var, n))
        if cf and ls is not None and prove_le(n, cst(ls)):
            if prove_eq(n, cst(ls)):
                self.em.line(f"int {name} = {first};")
                if kind == "lcl":
                    self.thread_ids[name] = dim
                yield var, scope_ctx
                return
            with self.em.if_(f"{first} < {n.to_c()}"):
                self.em.line(f"int {name} = {first};")
                yield var, scope_ctx
            return
        if kind == "wrg" and self.whole_grid:  # the launch gives every work-group a block
            with self.em.if_(f"{first} < {n.to_c()}"):
                self.em.line(f"int {name} = {first};")
                yield var, scope_ctx
            return
        if kind == "lcl" and ls is not None and prove_eq(n, cst(ls)):
            self.thread_ids[name] = dim  # the loop runs once per work-item: name is its id
        with self.em.for_loop(name, first, f"{name} < {n.to_c()}", f"{name} += {step}"):
            yield var, scope_ctx
            if kind == "wrg" and self.em.local_decls:  # a group may run several iterations,
                self.end_group_iteration(self.em.block.stmts)  # reusing its local memory

    # -- reductions and iteration ----------------------------------------------------------------
    def gen_reduce(self, p: P.AbstractReduce, args: Sequence[Arg], env: dict[Param, View], ctx: Ctx,
                   dest: Optional[View]) -> View:
        init, xs = args[0].gen(None), args[1].gen(None)
        xt = V.array_view_type(xs.type)
        acc_t = init.type
        unroll = isinstance(p, P.ReduceSeqUnroll) and self.opt.unroll
        spaces = self.in_place_spaces(acc_t, init)
        if spaces is not None:
            body_ctx = replace(ctx, write_to=spaces[0] if len(set(spaces)) == 1 else None)
            if isinstance(p, P.ReduceSeq) and any(isinstance(n, P.ToLocalAsync) for n in walk(p.f)):
                from liftkit.codegen.cuda_patterns import pipelined_reduce  # cp.async tile loop

                pipelined_reduce(self, p, init, xs, env, body_ctx)
                return self.finish_value(V.SingletonView(init, ArrayType(acc_t, cst(1))), dest)
            for i, c in self.loop("seq", 0, xt.length, body_ctx, p, unroll):
                self.apply(p.f, [init, xs.access(i)], env, c, init)
            return self.finish_value(V.SingletonView(init, ArrayType(acc_t, cst(1))), dest)
        acc = self.em.private_var(acc_t, "acc", self.em.load(init))
        acc_view = V.MemoryView(acc, acc_t)
        body_ctx = replace(ctx, write_to="private")
        serial = SERIAL_SUB_REDUCTIONS in self.opt.quirks and may_subtract(p.f)
        for i, c in self.loop("seq", 0, xt.length, body_ctx, p, unroll, serial):
            self.apply(p.f, [acc_view, xs.access(i)], env, c, acc_view)
        if dest is not None:
            self.em.store(dest.access(cst(0)), acc.name)
            return dest
        return V.SingletonView(acc_view, ArrayType(acc_t, cst(1)))

    @staticmethod
    def in_place_spaces(acc_t: Type, init: View) -> Optional[list[Space]]:
        """The address spaces of an array accumulator, or of each array of a tuple-of-arrays
        accumulator (a register block and the prefetched next tile, say), which live in their
        initial values' memory and are updated in place (seed 000 Alg. 1: reduce writes into
        the memory of its initialiser); None for a scalar accumulator (a private variable)."""
        if isinstance(acc_t, ArrayType):
            parts = [init]
        elif isinstance(acc_t, TupleType) and any(isinstance(e, ArrayType) for e in acc_t.elems):
            parts = [init.get(k) if isinstance(e, ArrayType) else None
                     for k, e in enumerate(acc_t.elems)]
        else:
            return None
        spaces: list[Space] = []
        for part in parts:
            root = _root_memory(part) if part is not None else None
            if root is None or root.readonly:
                raise CodegenError(
                    "reduceSeq over an array accumulator: compute the initial value into memory "
                    "first (e.g. toLocal(mapLcl(id)) of it)" if isinstance(acc_t, ArrayType) else
                    f"reduceSeq over a tuple accumulator {acc_t}: every component must be an "
                    "array computed into memory first (e.g. toPrivate(mapSeq(id)) of it)")
            spaces.append(root.space)
        return spaces

    def gen_iterate(self, p: P.Iterate, arg: Arg, env: dict[Param, View], ctx: Ctx,
                    dest: Optional[View]) -> View:
        xs = arg.gen(None)
        k = p.count()
        if k == 0:
            return self.finish_value(xs, dest)
        if dest is not None:
            # computed in its own buffers, then copied: by the work-group's threads inside a
            # mapWrg, sequentially elsewhere
            result = self.gen_iterate(p, self.view_arg(xs, self), env, ctx, None)
            from liftkit.ir.userfuns import id_of

            elem = V.array_view_type(result.type).elem
            if isinstance(elem, ArrayType):
                raise CodegenError("iterate over arrays of arrays must be copied out explicitly "
                                   "(e.g. mapLcl(mapSeq(id)))")
            in_wrg = any(s.kind == "wrg" for s in ctx.scopes)
            in_lcl = any(s.kind == "lcl" for s in ctx.scopes)
            copy = P.MapLcl(id_of(elem), 0) if in_wrg and not in_lcl else P.MapSeq(id_of(elem))
            return self.apply(copy, [result], env, ctx, dest)
        xt = V.array_view_type(xs.type)
        n0, elem = xt.length, xt.elem
        # the buffers live where the input lives (an explicit toLocal/toGlobal decides otherwise)
        space = ctx.write_to or space_of_view(xs) or "global"
        if space == "private":
            space = "local" if any(s.kind == "wrg" for s in ctx.scopes) else "global"
        s_name = self.em.names.fresh("size")
        final = self.result_type(p, [xt], env, ctx)
        final_len = V.array_view_type(final).length
        s = Var(s_name, final_len, n0 + 1)
        step_t = V.array_view_type(self.result_type(p.f, [ArrayType(elem, s)], env, ctx.inside(p)))
        first_len = step_t.length.substitute({s_name: n0})
        bt = ArrayType(elem, first_len)
        a = self.allocate(bt, space, ctx, "buf")  # replicated per thread/group where needed:
        b = self.allocate(bt, space, ctx, "buf")  # the views select this iteration's slice
        # peel the first iteration: it reads the input view, which need not be a buffer
        with self.em.scope():
            self.apply(p.f, [xs], env, ctx.inside(p), a)
        if k == 1:
            return V.SameView(a, final)
        mem_a, start_a = self.slice_start(a)
        _, start_b = self.slice_start(b)
        ptr = self.em.dialect.pointer("local" if space == "local" else "global", ctype(mem_a.elem))
        pin = Memory(self.em.names.fresh("in"), space, mem_a.elem, mem_a.count, "pointer")
        pout = Memory(self.em.names.fresh("out"), space, mem_a.elem, mem_a.count, "pointer")
        self.em.line(f"{ptr} {pin.name} = {start_a};")
        self.em.line(f"{ptr} {pout.name} = {start_b};")
        self.em.line(f"int {s_name} = {first_len.to_c()};")
        it = self.em.names.fresh("iter")
        with self.em.for_loop(it, "0", f"{it} < {k - 1}", f"{it} += 1"):
            self.apply(p.f, [V.MemoryView(pin, ArrayType(elem, s))], env, ctx.inside(p),
                       V.MemoryView(pout, step_t))
            if not any(sc.kind == "lcl" for sc in ctx.scopes):  # the whole group runs the steps
                self.end_iteration(self.em.block.stmts)
            self.em.line(f"{s_name} = {step_t.length.to_c()};")
            self.em.line(f"{{ {ptr} swap = {pin.name}; {pin.name} = {pout.name}; {pout.name} = swap; }}")
        return V.MemoryView(pin, final)

    def slice_start(self, buffer: View) -> tuple[Memory, str]:
        """(memory, C address) where a (possibly replicated) buffer's first element lives."""
        loc = self.em.resolve(buffer.access(cst(0)))
        if not isinstance(loc, V.MemLoc) or loc.fields or loc.lane is not None:
            raise CodegenError("iterate's buffers must be plain arrays in memory")
        off = loc.offset.to_c()
        return loc.mem, loc.mem.name if off == "0" else f"{loc.mem.name} + {off}"

    def gen_at(self, args: Sequence[Arg], dest: Optional[View]) -> View:
        xs, i = args[0].gen(None), args[1].gen(None)
        xt = V.array_view_type(xs.type)
        name = self.em.names.fresh("idx")
        self.em.line(f"int {name} = {self.em.load(i)};")
        return self.finish_value(xs.access(Var(name, 0, xt.length)), dest)

    # -- data layout -------------------------------------------------------------------------------
    def gen_layout(self, p: P.Pattern, args: Sequence[Arg], env: dict[Param, View], ctx: Ctx,
                   dest: Optional[View]) -> View:
        from liftkit.codegen.layout import read_view, write_views

        arg_types = [a.type() for a in args]
        rt = self.result_type(p, arg_types, env, ctx)
        if dest is not None:
            dests = write_views(p, dest, arg_types, self.em.ar, self.invert_fn(env, ctx))
            if dests is not None:
                self.gen_independent([lambda a=a, d=d: a.gen(d) for a, d in zip(args, dests)], ctx)
                return dest
        views = self.gen_independent([lambda a=a: a.gen(None) for a in args], ctx)
        view = read_view(p, views, rt, self.em.ar, self.layout_fn(env, ctx), self.em.dialect)
        return self.finish_value(view, dest,
                                 f"{p.name} after a computation cannot be written in place: apply it to "
                                 "the computation's input instead (e.g. gather(f) ∘ map(g) = map(g) ∘ "
                                 "gather(f))")


    def layout_fn(self, env: dict[Param, View], ctx: Ctx) -> Callable[[FunDecl, View], View]:
        """Apply a layout-only function to a view (no code is emitted)."""
        return lambda g, v: self.apply(g, [v], env, ctx, None)

    def invert_fn(self, env: dict[Param, View], ctx: Ctx) -> Callable[[FunDecl, View, Type], Optional[View]]:
        """The destination a layout-only function's argument is written through so that the
        function's result lands in `dest`; None when it cannot be inverted."""
        from liftkit.codegen.layout import write_views

        def invert(g: FunDecl, dest: View, arg_t: Type) -> Optional[View]:
            if isinstance(g, P.Pattern):
                ws = write_views(g, dest, [arg_t], self.em.ar, invert)
                return ws[0] if ws else None
            if isinstance(g, Lambda) and len(g.params) == 1:
                chain: list[FunDecl] = []
                e: Expr = g.body
                while isinstance(e, FunCall) and len(e.args) == 1:
                    chain.append(e.f)
                    e = e.args[0]
                if e is not g.params[0]:
                    return None
                types = [arg_t]
                for f in reversed(chain[1:]):
                    types.append(self.result_type(f, [types[-1]], env, ctx))
                d: Optional[View] = dest
                for f, t in zip(chain, reversed(types)):
                    d = invert(f, d, t) if d is not None else None
                return d
            return None

        return invert


def constant_view(e: Literal, dialect: Dialect = OPENCL) -> Optional[View]:
    """A literal as a view without memory: a value, or an array whose elements are all the same
    value; None for an array whose elements differ (it needs memory: `Emitter.constant_array`)."""
    import numpy as np

    if isinstance(e.type, ArrayType):
        arr = np.asarray(e.value)
        flat = arr.reshape(arr.shape[0], -1) if arr.ndim else arr
        if arr.size == 0 or not (arr == arr.reshape(-1)[0]).all():
            return None
        elem: Type = e.type
        while isinstance(elem, ArrayType):
            elem = elem.elem
        first = arr.reshape(-1)[0] if not isinstance(elem, VectorType) else tuple(flat.reshape(-1)[:elem.width])
        return V.ConstArrayView(V.ValueView(literal_c(first, elem, dialect), elem), e.type)
    return V.ValueView(literal_c(e.value, e.type, dialect), e.type)


# the memory a barrier after a mapLcl must order: where its result was written (private
# memory, or a mix: both)
_FENCES: dict[Optional[str], frozenset[str]] = {
    "local": frozenset({"CLK_LOCAL_MEM_FENCE"}), "global": frozenset({"CLK_GLOBAL_MEM_FENCE"}),
    None: frozenset({"CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE"}),
}


def barrier_fences(stmts: Sequence[Stmt]) -> frozenset[str]:
    """The fences of every barrier among the statements, nested ones included."""
    out: frozenset[str] = frozenset()
    for s in stmts:
        if isinstance(s, Barrier):
            out |= s.fences
        elif isinstance(s, (For, If)):
            out |= barrier_fences(s.body.stmts)
        elif isinstance(s, Block):
            out |= barrier_fences(s.stmts)
    return out


def ends_with_barrier(stmts: Sequence[Stmt]) -> bool:
    """Whether the last thing the statements do is a barrier (a nested loop's or block's last
    statement counts; an `if`'s does not, as not every work-item may take it)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, Barrier):
        return True
    if isinstance(last, For):
        return ends_with_barrier(last.body.stmts)
    if isinstance(last, Block):
        return ends_with_barrier(last.stmts)
    return False


def used_after_last_barrier(stmts: Sequence[Stmt], names: set[str]) -> bool:
    """Whether the statements touch one of the memories after the last barrier they run (in
    a loop with barriers, after the last one of its last iteration)."""
    for s in reversed(stmts):
        if isinstance(s, Barrier):
            return False
        inner = s.body.stmts if isinstance(s, For) else s.stmts if isinstance(s, Block) else None
        if inner is not None and barrier_fences(inner):
            return used_after_last_barrier(inner, names)
        if mentions(s, names):
            return True
    return False


def mentions(s: Stmt, names: set[str]) -> bool:
    """Whether a statement's text names one of the memories (a read or write of it)."""
    if isinstance(s, Line):
        return bool(names & set(_WORD.findall(s.text)))
    if isinstance(s, (For, If)):
        return any(mentions(t, names) for t in s.body.stmts)
    if isinstance(s, Block):
        return any(mentions(t, names) for t in s.stmts)
    return False  # barriers; deferred lines declare private arrays


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _root_memory(v: View) -> Optional[Memory]:
    while not isinstance(v, V.MemoryView):
        if isinstance(v, V.GetView) and isinstance(v.parent, V.TupleView):
            v = v.parent.parts[v.component]
        elif isinstance(v, (V.AccessView, V.ThreadPrivateView)):
            v = v.parent
        else:
            return None
    return v.mem


OPENCL_BUILTINS = frozenset({
    "abs", "max", "min", "clamp", "mix", "sign", "dot", "cross", "length", "normalize", "distance",
    "sqrt", "exp", "log", "pow", "sin", "cos", "tan", "fabs", "fmax", "fmin", "select", "any", "all",
    "floor", "ceil", "round", "step", "smoothstep", "degrees", "radians", "rsqrt", "mad", "fma",
    "exp2", "log2", "hypot", "atan", "asin", "acos", "sinh", "cosh", "tanh", "erf", "erfc",
})


def c_fun_name(f: UserFun) -> str:
    """The C name of a user function (papers' names, unless they clash with OpenCL built-ins,
    which the CUDA prelude defines too)."""
    return f"{f.name}_uf" if f.name in OPENCL_BUILTINS else f.name


def user_fun_definition(f: UserFun, dialect: Dialect = OPENCL) -> str:
    params = ", ".join(f"{ctype(t)} {n}" for n, t in zip(f.param_names, f.param_types))
    body = dialect.user_body(f.body.strip())
    if isinstance(f.out_type, TupleType):
        body = f"typedef {ctype(f.out_type)} Tuple;\n  {body}"
    return f"{dialect.user_fun_prefix}{ctype(f.out_type)} {c_fun_name(f)}({params}) {{\n  {body}\n}}"

