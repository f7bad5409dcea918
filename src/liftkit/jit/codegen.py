"""LLVM code generation (seed 003 §5.7): VRIR functions to LLVM IR through llvmlite.

Variables live in allocas (LLVM's mem2reg makes SSA of them, as the thesis recommends); array
variables are a data pointer plus one shape and one stride (in elements) per dimension, and a
C- or F-layout array's strides are recomputed from its shape so LLVM sees unit strides and can
vectorise. Run-time errors store (kind, line, a, b, c) into the environment and return 1; every
call site propagates a non-zero status. Parallel loops are outlined into functions run by the
runtime's thread pool (``cg_runtime``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llvmlite import ir

from . import types as T
from . import vrir as V
from .cg_scalar import (I1, I8, I64, I64P, NotSupported, binop, compare, const, convert,
                        ll, math1, mem, unop)
from .errors import JitError

ERR_INDEX, ERR_ZERODIV, ERR_BROADCAST, ERR_RAISE, ERR_RANGE, ERR_MEMORY, ERR_DOT, ERR_NEGDIM, \
    ERR_NEGPOW, ERR_EMPTY, ERR_STEP = range(1, 12)


@dataclass
class Arr:
    """An array value during code generation."""
    data: ir.Value
    shape: list
    strides: list
    type: T.ArrayType


@dataclass
class Options:
    """What the code generator may assume (set by the passes and the dispatcher)."""
    noalias: bool = False            # array parameters never overlap (checked at call time)
    threads: bool = True             # parallel loops run on the thread pool


@dataclass
class ModuleContext:
    """State shared by the functions of one LLVM module."""
    module: ir.Module
    vrir: V.Module
    options: Options
    raises: list = field(default_factory=list)  # (kind, message) of Raise statements
    functions: dict = field(default_factory=dict)
    gpu: Any = None                  # the GpuPlan of the module's accelerated sections
    counter: int = 0

    def function(self, name: str) -> ir.Function:
        if name not in self.functions:
            FunctionCodegen(self, self.vrir.function(name)).build()
        return self.functions[name]

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"


def flat_types(t: T.Type, noalias: bool = False) -> list[ir.Type]:
    """LLVM parameter types of a VRIR value passed by parts."""
    if isinstance(t, T.ScalarType):
        return [ll(t)]
    if isinstance(t, T.ArrayType):
        return [mem(t.elem).as_pointer()] + [I64] * (2 * t.ndim)
    if isinstance(t, T.TupleType):
        return [x for i in t.items for x in flat_types(i)]
    raise NotSupported(f"values of type {t} cannot be passed")


def nslots(t: T.Type) -> int:
    """How many i64 slots a value takes in a result or closure block."""
    if isinstance(t, T.ScalarType):
        return 2 if t.is_complex else 1
    if isinstance(t, T.ArrayType):
        return 1 + 2 * t.ndim
    if isinstance(t, T.TupleType):
        return sum(nslots(i) for i in t.items)
    return 0


class FunctionCodegen:
    """Emits one VRIR function (or the outlined body of a parallel loop)."""

    def __init__(self, ctx: ModuleContext, f: V.Function) -> None:
        self.ctx, self.f = ctx, f
        self.symtab = f.symtab()
        self.line = f.line
        self.loops: list[tuple[ir.Block, ir.Block]] = []
        self.gpu_sid: int | None = None  # inside an accelerated section (cg_gpu)

    # -- setup
    def build(self) -> ir.Function:
        params = [I64P]
        for p in self.f.params:
            params += flat_types(self.symtab[p])
        params.append(I64P)
        fnty = ir.FunctionType(ir.IntType(32), params)
        fn = ir.Function(self.ctx.module, fnty, name=self.ctx.fresh("vr." + self.f.name))
        fn.linkage = "internal"
        self.ctx.functions[self.f.name] = fn
        self.fn = fn
        self.env = fn.args[0]
        self.result = fn.args[-1]
        self._begin(fn)
        args = list(fn.args[1:-1])
        for p in self.f.params:
            t = self.symtab[p]
            n = len(flat_types(t))
            vals, args = args[:n], args[n:]
            if isinstance(t, T.ArrayType) and self.ctx.options.noalias:
                fn.args[fn.args.index(vals[0])].add_attribute("noalias")
            self.store_var(p, self.unflatten(t, vals))
        self.stmts(self.f.body)
        if not self.b.block.is_terminated:
            self.b.ret(ir.Constant(ir.IntType(32), 0))
        return fn

    def _begin(self, fn: ir.Function) -> None:
        entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self.alloca_block = entry
        self.storage: dict[str, Any] = {}
        for name, t in self.symtab.items():
            self.storage[name] = self._alloca(t, name)
        start = fn.append_basic_block("start")
        self.b.position_at_end(entry)
        self.b.branch(start)
        self.b.position_at_end(start)

    def _alloca(self, t: T.Type, name: str) -> Any:
        bb = ir.IRBuilder(self.alloca_block)
        if self.alloca_block.is_terminated:
            bb.position_before(self.alloca_block.instructions[-1])
        else:
            bb.position_at_end(self.alloca_block)
        if isinstance(t, T.ScalarType):
            return bb.alloca(ll(t), name=name)
        if isinstance(t, T.ArrayType):
            d = bb.alloca(mem(t.elem).as_pointer(), name=name + ".data")
            return (d, [bb.alloca(I64, name=f"{name}.n{k}") for k in range(t.ndim)],
                    [bb.alloca(I64, name=f"{name}.s{k}") for k in range(t.ndim)])
        if isinstance(t, T.TupleType):
            return [self._alloca(i, f"{name}.{k}") for k, i in enumerate(t.items)]
        raise NotSupported(f"variables of type {t} are not supported")

    def temp(self, t: T.Type) -> Any:
        return self._alloca(t, "tmp")

    # -- values by parts
    def unflatten(self, t: T.Type, vals: list) -> Any:
        if isinstance(t, T.ScalarType):
            return vals[0]
        if isinstance(t, T.ArrayType):
            nd = t.ndim
            return self.make_arr(t, vals[0], list(vals[1:1 + nd]), list(vals[1 + nd:1 + 2 * nd]))
        out, k = [], 0
        for it in t.items:  # type: ignore[union-attr]
            n = len(flat_types(it))
            out.append(self.unflatten(it, vals[k:k + n]))
            k += n
        return out

    def flatten(self, t: T.Type, v: Any) -> list:
        if isinstance(t, T.ScalarType):
            return [v]
        if isinstance(t, T.ArrayType):
            return [v.data] + list(v.shape) + list(v.strides)
        return [x for it, iv in zip(t.items, v) for x in self.flatten(it, iv)]  # type: ignore[union-attr]

    def make_arr(self, t: T.ArrayType, data: ir.Value, shape: list, strides: list | None) -> Arr:
        """An array value; C/F layouts get strides computed from the shape."""
        if t.layout == "C":
            strides = [None] * t.ndim
            s = ir.Constant(I64, 1)
            for k in reversed(range(t.ndim)):
                strides[k] = s
                if k:
                    s = self.b.mul(s, shape[k])
        elif t.layout == "F":
            strides = []
            s = ir.Constant(I64, 1)
            for k in range(t.ndim):
                strides.append(s)
                s = self.b.mul(s, shape[k])
        return Arr(data, list(shape), list(strides), t)  # type: ignore[arg-type]

    def to_slots(self, t: T.Type, v: Any, ptr: ir.Value) -> None:
        """Store a value into consecutive i64 slots at ``ptr``."""
        k = 0
        for part, pt in self._parts(t, v):
            slot = self.b.gep(ptr, [ir.Constant(I64, k)])
            k += 1
            if not isinstance(pt, tuple) and pt.is_complex:
                for j in (0, 1):
                    self.b.store(self._to_i64(self.b.extract_value(part, j),
                                              T.FLOAT32 if pt.name == "complex64" else T.FLOAT64), slot)
                    if j == 0:
                        slot = self.b.gep(ptr, [ir.Constant(I64, k)])
                        k += 1
                continue
            self.b.store(self._to_i64(part, pt), slot)

    def from_slots(self, t: T.Type, ptr: ir.Value) -> Any:
        vals, k = [], 0
        for pt in self._part_types(t):
            if not isinstance(pt, tuple) and pt.is_complex:
                ft = T.FLOAT32 if pt.name == "complex64" else T.FLOAT64
                re = self._from_i64(self.b.load(self.b.gep(ptr, [ir.Constant(I64, k)])), ft)
                im = self._from_i64(self.b.load(self.b.gep(ptr, [ir.Constant(I64, k + 1)])), ft)
                k += 2
                c = self.b.insert_value(ir.Constant(ll(pt), ir.Undefined), re, 0)
                vals.append(self.b.insert_value(c, im, 1))
                continue
            vals.append(self._from_i64(self.b.load(self.b.gep(ptr, [ir.Constant(I64, k)])), pt))
            k += 1
        return self._rebuild(t, vals)

    def _part_types(self, t: T.Type) -> list:
        if isinstance(t, T.ScalarType):
            return [t]
        if isinstance(t, T.ArrayType):
            return [("ptr", t.elem)] + [T.INT64] * (2 * t.ndim)
        return [p for i in t.items for p in self._part_types(i)]  # type: ignore[union-attr]

    def _parts(self, t: T.Type, v: Any) -> list:
        return list(zip(self.flatten(t, v), self._part_types(t)))

    def _rebuild(self, t: T.Type, vals: list) -> Any:
        return self.unflatten(t, vals)

    def _to_i64(self, v: ir.Value, pt: Any) -> ir.Value:
        if isinstance(pt, tuple):
            return self.b.ptrtoint(v, I64)
        if pt.is_bool or pt.name == "int32":
            return self.b.zext(v, I64) if pt.is_bool else self.b.sext(v, I64)
        if pt.name == "float64":
            return self.b.bitcast(v, I64)
        if pt.name == "float32":
            return self.b.zext(self.b.bitcast(v, ir.IntType(32)), I64)
        return v

    def _from_i64(self, v: ir.Value, pt: Any) -> ir.Value:
        if isinstance(pt, tuple):
            return self.b.inttoptr(v, mem(pt[1]).as_pointer())
        if pt.is_bool:
            return self.b.trunc(v, I1)
        if pt.name == "int32":
            return self.b.trunc(v, ir.IntType(32))
        if pt.name == "float64":
            return self.b.bitcast(v, ll(pt))
        if pt.name == "float32":
            return self.b.bitcast(self.b.trunc(v, ir.IntType(32)), ll(pt))
        return v

    # -- variables
    def load_storage(self, t: T.Type, s: Any) -> Any:
        if isinstance(t, T.ScalarType):
            return self.b.load(s)
        if isinstance(t, T.ArrayType):
            d, ns, ss = s
            shape = [self.b.load(n) for n in ns]
            strides = None if t.layout != "A" else [self.b.load(x) for x in ss]
            return self.make_arr(t, self.b.load(d), shape, strides)
        return [self.load_storage(i, si) for i, si in zip(t.items, s)]  # type: ignore[union-attr]

    def store_storage(self, t: T.Type, s: Any, v: Any) -> None:
        if isinstance(t, T.ScalarType):
            self.b.store(v, s)
        elif isinstance(t, T.ArrayType):
            d, ns, ss = s
            self.b.store(v.data, d)
            for x, p in zip(v.shape, ns):
                self.b.store(x, p)
            for x, p in zip(v.strides, ss):
                self.b.store(x, p)
        else:
            for i, si, vi in zip(t.items, s, v):  # type: ignore[union-attr]
                self.store_storage(i, si, vi)

    def load_var(self, name: str) -> Any:
        return self.load_storage(self.symtab[name], self.storage[name])

    def store_var(self, name: str, v: Any) -> None:
        self.store_storage(self.symtab[name], self.storage[name], v)

    # -- errors
    def fail_if(self, cond: ir.Value, kind: int, a: Any = 0, b_: Any = 0, c: Any = 0) -> None:
        """Branch to an error exit when ``cond`` holds (marked unlikely)."""
        bad = self.b.append_basic_block("err")
        ok = self.b.append_basic_block("ok")
        br = self.b.cbranch(cond, bad, ok)
        br.set_weights([1, 1 << 20])
        self.b.position_at_end(bad)
        self.report(kind, a, b_, c)
        self.b.position_at_end(ok)

    def report(self, kind: int, a: Any = 0, b_: Any = 0, c: Any = 0) -> None:
        vals = [kind, self.line, a, b_, c]
        for k, v in enumerate(vals):
            if not isinstance(v, ir.Value):
                v = ir.Constant(I64, v)
            elif v.type != I64:
                v = self.b.sext(v, I64) if isinstance(v.type, ir.IntType) else v
            self.b.store(v, self.b.gep(self.env, [ir.Constant(I64, k)]))
        self.b.ret(ir.Constant(ir.IntType(32), 1))

    def failer(self):
        return lambda cond, kind: self.fail_if(cond, kind)

    # -- statements
    def stmts(self, body: tuple) -> None:
        for s in body:
            if self.b.block.is_terminated:
                self.b.position_at_end(self.b.append_basic_block("dead"))
            self.line = s.line
            try:
                if self.gpu_sid is not None:
                    from . import cg_gpu
                    if cg_gpu.statement(self, s):
                        continue
                getattr(self, "s_" + type(s).__name__)(s)
            except NotSupported as e:
                raise JitError(f"line {self.line}: {e}") from None

    def s_Assign(self, s: V.Assign) -> None:
        from . import cg_arrays as A
        tgt = s.target
        if isinstance(tgt, V.Name):
            self.store_var(tgt.name, self.value(s.value))
            return
        if isinstance(tgt.type, T.ScalarType):
            v = self.value(s.value)
            ptr = self.address(tgt)
            self.store_elem(ptr, v, tgt.type)
            return
        A.store_into(self, self.view(tgt), s.value)

    def s_ExprStmt(self, s: V.ExprStmt) -> None:
        self.value(s.value)

    def s_If(self, s: V.If) -> None:
        c = self.value(s.cond)
        then = self.b.append_basic_block("then")
        other = self.b.append_basic_block("else")
        end = self.b.append_basic_block("endif")
        self.b.cbranch(c, then, other)
        for blk, body in ((then, s.then), (other, s.orelse)):
            self.b.position_at_end(blk)
            self.stmts(body)
            if not self.b.block.is_terminated:
                self.b.branch(end)
        self.b.position_at_end(end)

    def s_While(self, s: V.While) -> None:
        head = self.b.append_basic_block("while.head")
        body = self.b.append_basic_block("while.body")
        end = self.b.append_basic_block("while.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        self.line = s.line
        if self.gpu_sid is not None:
            from . import cg_gpu
            cg_gpu.host(self, s)
        self.b.cbranch(self.value(s.cond), body, end)
        self.b.position_at_end(body)
        self.loops.append((head, end))
        self.stmts(s.body)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(head)
        self.b.position_at_end(end)

    def trip_count(self, start: ir.Value, stop: ir.Value, step: ir.Value, step_node: V.Expr) -> ir.Value:
        """Iterations of range(start, stop, step), Python's rule."""
        b = self.b
        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        if isinstance(step_node, V.Const):
            sv = int(step_node.value)
            if sv > 0:
                d = b.sub(stop, start)
                n = b.sdiv(b.add(d, ir.Constant(I64, sv - 1)), step) if sv != 1 else d
                return b.select(b.icmp_signed(">", stop, start), n, zero)
            d = b.sub(start, stop)
            n = b.sdiv(b.add(d, ir.Constant(I64, -sv - 1)), b.neg(step))
            return b.select(b.icmp_signed(">", start, stop), n, zero)
        self.fail_if(b.icmp_signed("==", step, zero), ERR_RANGE)
        pos = b.icmp_signed(">", step, zero)
        d = b.select(pos, b.sub(stop, start), b.sub(start, stop))
        st = b.select(pos, step, b.neg(step))
        n = b.sdiv(b.add(d, b.sub(st, one)), st)
        return b.select(b.icmp_signed(">", d, zero), n, zero)

    def counted_loop(self, n: ir.Value, body_fn, name: str = "for") -> None:
        """``for k in range(n): body_fn(k)`` with a canonical counter; break/continue aware."""
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"{name}.head")
        body = b.append_basic_block(f"{name}.body")
        latch = b.append_basic_block(f"{name}.latch")
        end = b.append_basic_block(f"{name}.end")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, name="k")
        k.add_incoming(ir.Constant(I64, 0), pre)
        b.cbranch(b.icmp_signed("<", k, n), body, end)
        b.position_at_end(body)
        self.loops.append((latch, end))
        body_fn(k)
        self.loops.pop()
        if not b.block.is_terminated:
            b.branch(latch)
        b.position_at_end(latch)
        k1 = b.add(k, ir.Constant(I64, 1), flags=("nsw", "nuw"))
        k.add_incoming(k1, latch)
        b.branch(head)
        b.position_at_end(end)

    def s_For(self, s: V.For) -> None:
        start, stop, step = (self.value(e) for e in (s.start, s.stop, s.step))
        n = self.trip_count(start, stop, step, s.step)

        def body(k: ir.Value) -> None:
            i = self.b.add(start, k if isinstance(s.step, V.Const) and s.step.value == 1
                           else self.b.mul(k, step))
            self.store_var(s.var, i)
            self.stmts(s.body)
        self.counted_loop(n, body)

    def s_ParFor(self, s: V.ParFor) -> None:
        from .cg_runtime import parallel_for
        parallel_for(self, s)

    def s_Break(self, s: V.Break) -> None:
        self.b.branch(self.loops[-1][1])

    def s_Continue(self, s: V.Continue) -> None:
        self.b.branch(self.loops[-1][0])

    def s_Return(self, s: V.Return) -> None:
        if s.value is not None:
            self.to_slots(self.f.result, self.value(s.value), self.result)
        if self.gpu_sid is not None:
            from . import cg_gpu
            cg_gpu.end(self)
        self.b.ret(ir.Constant(ir.IntType(32), 0))

    def s_GpuSection(self, s: V.GpuSection) -> None:
        from . import cg_gpu
        cg_gpu.section(self, s)

    def s_Raise(self, s: V.Raise) -> None:
        if (s.kind, s.message) not in self.ctx.raises:
            self.ctx.raises.append((s.kind, s.message))
        self.report(ERR_RAISE, self.ctx.raises.index((s.kind, s.message)))

    # -- expressions
    def value(self, e: V.Expr) -> Any:
        if isinstance(e.type, T.ArrayType):
            from . import cg_arrays as A
            return A.materialize(self, e)
        return getattr(self, "x_" + type(e).__name__)(e)

    def x_Const(self, e: V.Const) -> ir.Value:
        return const(e.type, e.value)

    def x_Name(self, e: V.Name) -> Any:
        return self.load_var(e.name)

    def x_BinOp(self, e: V.BinOp) -> ir.Value:
        return binop(self.b, e.op, self.value(e.left), self.value(e.right), e.type,
                     self._fail_kind)

    def _fail_kind(self, cond: ir.Value, kind: int) -> None:
        self.fail_if(cond, kind)

    def x_UnOp(self, e: V.UnOp) -> ir.Value:
        return unop(self.b, e.op, self.value(e.operand), e.type)

    def x_Compare(self, e: V.Compare) -> ir.Value:
        return compare(self.b, e.op, self.value(e.left), self.value(e.right), e.left.type)

    def x_Logical(self, e: V.Logical) -> ir.Value:
        left = self.value(e.left)
        lblock = self.b.block
        rhs = self.b.append_basic_block("logic.rhs")
        end = self.b.append_basic_block("logic.end")
        if e.op == "and":
            self.b.cbranch(left, rhs, end)
        else:
            self.b.cbranch(left, end, rhs)
        self.b.position_at_end(rhs)
        right = self.value(e.right)
        rblock = self.b.block
        self.b.branch(end)
        self.b.position_at_end(end)
        phi = self.b.phi(I1)
        phi.add_incoming(ir.Constant(I1, 0 if e.op == "and" else 1), lblock)
        phi.add_incoming(right, rblock)
        return phi

    def x_Cast(self, e: V.Cast) -> ir.Value:
        return convert(self.b, self.value(e.operand), e.operand.type, e.type)  # type: ignore[arg-type]

    def x_Select(self, e: V.Select) -> ir.Value:
        return self.b.select(self.value(e.cond), self.value(e.a), self.value(e.b))

    def x_Dim(self, e: V.Dim) -> ir.Value:
        return self.value(e.array).shape[e.axis]

    def x_TupleExpr(self, e: V.TupleExpr) -> list:
        return [self.value(i) for i in e.items]

    def x_TupleGet(self, e: V.TupleGet) -> Any:
        return self.value(e.tuple)[e.index]

    def x_Index(self, e: V.Index) -> ir.Value:
        return self.load_elem(self.address(e), e.type)  # type: ignore[arg-type]

    def x_LibCall(self, e: V.LibCall) -> ir.Value:
        from . import cg_arrays as A
        if e.fn in ("minimum", "maximum"):
            return binop(self.b, e.fn, self.value(e.args[0]), self.value(e.args[1]), e.type,
                         self._fail_kind)
        if len(e.args) == 1 and not isinstance(e.args[0].type, T.ArrayType):
            return math1(self.b, e.fn, self.value(e.args[0]), e.args[0].type)  # type: ignore[arg-type]
        return A.scalar_libcall(self, e)

    def x_Call(self, e: V.Call) -> Any:
        callee = self.ctx.function(e.fn)
        args = [self.env]
        for a in e.args:
            args += self.flatten(a.type, self.value(a))
        res = self.b.alloca(I64, nslots(e.type) or 1)
        args.append(res)
        st = self.b.call(callee, args)
        bad = self.b.append_basic_block("call.err")
        ok = self.b.append_basic_block("call.ok")
        self.b.cbranch(self.b.icmp_signed("!=", st, ir.Constant(ir.IntType(32), 0)), bad, ok)
        self.b.position_at_end(bad)
        self.b.ret(st)
        self.b.position_at_end(ok)
        if isinstance(e.type, T.VoidType):
            return None
        return self.from_slots(e.type, res)

    # -- memory
    def load_elem(self, ptr: ir.Value, t: T.ScalarType) -> ir.Value:
        v = self.b.load(ptr)
        return self.b.trunc(v, I1) if t.is_bool else v

    def store_elem(self, ptr: ir.Value, v: ir.Value, t: T.ScalarType) -> None:
        self.b.store(self.b.zext(v, I8) if t.is_bool else v, ptr)

    def checked_index(self, i: ir.Value, n: ir.Value, axis: int, chk: V.Check) -> ir.Value:
        """Python's index rules: wrap negatives, then bounds (per the node's check flags)."""
        b = self.b
        zero = ir.Constant(I64, 0)
        orig = i
        if chk.negative:
            i = b.select(b.icmp_signed("<", i, zero), b.add(i, n), i)
        if chk.lower and chk.upper:
            self.fail_if(b.icmp_unsigned(">=", i, n), ERR_INDEX, orig, axis, n)
        elif chk.upper:
            self.fail_if(b.icmp_signed(">=", i, n), ERR_INDEX, orig, axis, n)
        elif chk.lower:
            self.fail_if(b.icmp_signed("<", i, zero), ERR_INDEX, orig, axis, n)
        return i

    def address(self, e: V.Index) -> ir.Value:
        """Address of ``A[i, j, ...]`` (all indices scalars)."""
        arr = self.value(e.array)
        off = None
        for k, (ix, chk) in enumerate(zip(e.indices, e.checks)):
            i = self.checked_index(self.value(ix), arr.shape[k], k, chk)
            term = i if _is_one(arr.strides[k]) else self.b.mul(i, arr.strides[k])
            off = term if off is None else self.b.add(off, term)
        return self.b.gep(arr.data, [off if off is not None else ir.Constant(I64, 0)])

    def view(self, e: V.Index) -> Arr:
        from . import cg_arrays as A
        return A.view(self, e)


def _is_one(v: ir.Value) -> bool:
    return isinstance(v, ir.Constant) and v.constant == 1
