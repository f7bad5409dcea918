"""GPU kernels from VRIR (seed 003 §5.8): the body of a parallel loop in an accelerated section
becomes one OpenCL C / CUDA C kernel (spellings from ``liftkit.codegen.dialect``).

Each iteration of the loop is one work-item (grid-stride, so any grid covers the domain); the
loop's outer dimension maps to the slowest-varying NDRange dimension so that the inner one walks
contiguous memory. Captured arrays become parameters: the buffer and the element offset of the
array in it (the task runtime's convention), then shape and strides; read-only arrays are
``const``, and every array pointer is ``restrict`` when alias analysis shows they cannot overlap
(parameters checked disjoint at the call, or arrays freshly allocated by the function). Private
scalars are declared at the top. A failed index check (or a ``raise``) records (kind, line,
details) in the error buffer (first writer wins, by compare-and-swap) and ends the work-item; the
host checks the buffer once, at the end of the section. On CUDA, a parallel loop whose work is
one sum over contiguous elements (a CSR row, a row of a matrix) is shared by a group of a warp's
lanes (``gpu_lanes``): they take the sum's iterations in turn and meet through shuffles.

Constructs that cannot run on a GPU (array operations or views inside the loop, calls that were
not inlined, complex numbers, tuples) are one ``JitError`` naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from liftkit.codegen.dialect import dialect_named

from . import types as T
from . import vrir as V
from .errors import JitError
from .gpu_lanes import AUTO_LANES, LANE_WORK, LanePlan, deferrable, lane_plan
from .passes.walk import nodes

CT = {"bool": "int", "int32": "int", "int64": "long", "float32": "float", "float64": "double"}
MT = {**CT, "bool": "unsigned char"}
_MATH = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan",
         "tanh": "tanh", "arctan": "atan", "arcsin": "asin", "arccos": "acos", "sinh": "sinh",
         "cosh": "cosh", "floor": "floor", "ceil": "ceil", "log10": "log10", "exp2": "exp2",
         "log2": "log2", "round": "rint"}
_SUFFIX = {"int32": "i", "int64": "l", "float32": "f", "float64": "d", "bool": "i"}
ERR_INDEX, ERR_ZERODIV, ERR_RAISE, ERR_RANGE, ERR_NEGPOW = 1, 2, 4, 5, 9


class GpuUnsupported(JitError):
    """A construct inside a GPU section that cannot run on the GPU."""


@dataclass(frozen=True)
class GpuKernel:
    """One generated kernel and what its launcher needs: the captured variables in argument
    order (arrays whose data the kernel touches get a buffer, the others only their shape),
    which arrays it reads and writes, and how it writes (``loop``: a user's parallel loop,
    ``whole``: an element-wise loop overwriting its target, ``slice``: a store into a view)."""
    name: str
    line: int
    captured: tuple[tuple[str, T.Type], ...]
    data: frozenset[str]
    reads: frozenset[str]
    writes: frozenset[str]
    ndim: int
    mode: str
    sources: tuple[tuple[str, str], ...]
    dead: frozenset[str] = frozenset()  # arrays nothing reads after the section
    undefined: frozenset[str] = frozenset()  # np.empty arrays nothing wrote yet: no upload
    lift: "LiftMap | None" = None  # an element-wise loop as a Lift map (gpu_library)
    fails: bool = True  # it has a check that may record an error (else its flags stay clear)

    def source(self, dialect: str) -> str:
        return dict(self.sources)[dialect]


@dataclass(frozen=True)
class LiftMap:
    """An element-wise loop as a Lift user function over zipped arrays (``map(f) << zip(...)``):
    its C body (``return ...;`` over parameters a0.., s0..) and the same expression in NumPy
    (the reference interpreter's twin), the array operands (captured names, in order), the
    scalar operands and every element type (float32/float64)."""
    body: str
    py: str
    arrays: tuple[tuple[str, str], ...]    # (captured name, element type name)
    scalars: tuple[tuple[str, str], ...]
    result: str


_LIFT_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def lift_map(value: V.Expr, result: T.ScalarType) -> LiftMap | None:
    """The Lift form of an element-wise loop's right side, or None when it uses more than
    plain C arithmetic and math functions on floats (the jit's own kernel then runs it)."""
    arrays: dict[str, str] = {}
    scalars: dict[str, str] = {}

    def c(e: V.Expr) -> tuple[str, str] | None:
        t = e.type
        if not (isinstance(t, T.ScalarType) and t.is_float):
            return None
        if isinstance(e, V.Index) and isinstance(e.array, V.Name):
            arrays.setdefault(e.array.name, t.name)
            n = f"a{list(arrays).index(e.array.name)}"
            return n, n
        if isinstance(e, V.Name):
            scalars.setdefault(e.name, t.name)
            n = f"s{list(scalars).index(e.name)}"
            return n, n
        if isinstance(e, V.Const):
            return _lit(e), f"np.{t.name}(float('{float(e.value)!r}'))"  # type: ignore[arg-type]
        if isinstance(e, V.BinOp) and e.op in _LIFT_OPS:
            a, b = c(e.left), c(e.right)
            if a is None or b is None:
                return None
            op = _LIFT_OPS[e.op]
            return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
        if isinstance(e, V.UnOp) and e.op == "neg":
            a = c(e.operand)
            return None if a is None else (f"(-{a[0]})", f"(-{a[1]})")
        if isinstance(e, V.Cast):
            if isinstance(e.operand, V.Const) and e.operand.type.is_int:
                return c(V.Const(float(e.operand.value), t))
            a = c(e.operand)
            return None if a is None else (f"(({CT[t.name]}){a[0]})", f"np.{t.name}({a[1]})")
        if isinstance(e, V.LibCall) and len(e.args) == 1 and (e.fn in _MATH or e.fn == "abs"):
            a = c(e.args[0])
            if a is None:
                return None
            cf = "fabs" if e.fn == "abs" else _MATH[e.fn]
            pf = {"abs": "abs", "round": "rint"}.get(e.fn, e.fn)
            return f"{cf}({a[0]})", f"np.{pf}({a[1]})"
        return None
    got = c(value if value.type == result else V.Cast(value, result))
    if got is None or not arrays:
        return None
    return LiftMap(f"return {got[0]};", got[1], tuple(arrays.items()), tuple(scalars.items()),
                   result.name)


def _scalar(t: T.Type, what: str, line: int) -> T.ScalarType:
    if isinstance(t, T.ScalarType) and not t.is_complex:
        return t
    if isinstance(t, T.ScalarType):
        raise GpuUnsupported(f"line {line}: complex numbers cannot be used in a GPU kernel ({what})")
    raise GpuUnsupported(f"line {line}: {what} of type {t} cannot be used in a GPU kernel")


def _lit(c: V.Const) -> str:
    t = c.type
    if t.is_bool:
        return "1" if c.value else "0"
    if t.is_int:
        return f"{int(c.value)}L" if t.name == "int64" else str(int(c.value))
    v = float(c.value)  # type: ignore[arg-type]
    if v != v:
        return "(0.0/0.0)" if t.name == "float64" else "(0.0f/0.0f)"
    if v in (float("inf"), float("-inf")):
        s = "(1.0/0.0)" if t.name == "float64" else "(1.0f/0.0f)"
        return s if v > 0 else "(-" + s + ")"
    r = repr(v)
    if "e" not in r and "." not in r:
        r += ".0"
    return r if t.name == "float64" else r + "f"


class KernelWriter:
    """Writes one kernel in one dialect (see the module docstring)."""

    def __init__(self, dialect: str, s: V.ParFor, symtab: dict, name: str, raises: list,
                 restrict: bool, captured: list, data: set, writes: set,
                 lanes: "bool | int | None" = None) -> None:
        self.d = dialect_named(dialect)
        self.lanes = lanes  # None/True: chosen per launch; False/0/1: off; n: at most n lanes
        self.lane: "LanePlan | None" = None  # the reduction loop a group of lanes shares
        self.s, self.symtab, self.name, self.raises = s, symtab, name, raises
        self.restrict, self.captured, self.data, self.writes = restrict, captured, data, writes
        self.lines: list[str] = []
        self.ind = 1
        self.line = s.line
        self.ntmp = 0
        self.idents: dict[str, str] = {}
        self.doubles = False
        self.safe: frozenset = frozenset()  # (array, axis, loop variable) checked before a loop
        self.versions = 0  # loops versioned around the statement being written
        self.fails = False  # a check that may record an error was written
        self.defer: "str | None" = None  # the failure record of a loop deferring its checks
        self.deferred = False  # a check of that loop was deferred
        self.defer_at = "0L"  # the loop's iteration counter (which failure came first)
        self.defer_sites: list[tuple[str, str, int]] = []  # (axis, extent, line) per check
        self.defer_lane = False  # the deferring loop is shared by lanes (records its iteration)

    # -- names
    def ident(self, name: str) -> str:
        if name not in self.idents:
            self.idents[name] = f"v{len(self.idents)}_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        return self.idents[name]

    def tmp(self) -> str:
        self.ntmp += 1
        return f"t{self.ntmp}"

    def w(self, text: str) -> None:
        self.lines.append("    " * self.ind + text)

    def ctype(self, t: T.ScalarType) -> str:
        if t.name == "float64":
            self.doubles = True
        return CT[t.name]

    def fail(self, kind: int, a: str = "0L", b: str = "0L", c: str = "0L") -> None:
        self.fails = True
        self.w(f"{{ lk_fail(lk_err + lk_eo, {kind}, {self.line}L, {a}, {b}, {c}); return; }}")

    # -- the kernel
    def write(self) -> str:
        s, d = self.s, self.d
        params = [f"{d.pointer('global', 'int')} lk_err", "long lk_eo"]
        for n, t in self.captured:
            if isinstance(t, T.ArrayType):
                v = self.ident(n)
                _scalar(t.elem, f"array '{n}'", s.line)
                if n in self.data:
                    ptr = d.pointer("global", MT[t.elem.name], const=n not in self.writes)
                    if self.restrict:
                        ptr += " " + d.restrict
                    params += [f"{ptr} {v}_d", f"long {v}_o"]
                params += [f"long {v}_n{k}" for k in range(t.ndim)]
                if n in self.data:
                    params += [f"long {v}_s{k}" for k in range(t.ndim)]
            else:
                st = _scalar(t, f"variable '{n}'", s.line)
                params.append(f"{self.ctype(st)} {self.ident(n)}")
        nd = len(s.vars)
        for k in range(nd):
            params += [f"long lk_s{k}", f"long lk_t{k}", f"long lk_c{k}"]
        priv = self.private()
        for n in priv:
            line = next((a.line for a in nodes(s.body) if isinstance(a, V.Assign) and
                         isinstance(a.target, V.Name) and a.target.name == n), s.line)
            if isinstance(self.symtab[n], T.ArrayType):
                raise GpuUnsupported(
                    f"line {line}: array operations and views cannot run inside a GPU parallel "
                    f"loop (line {s.line}); index the arrays element by element")
            st = _scalar(self.symtab[n], f"variable '{n}'", line)
            self.w(f"{self.ctype(st)} {self.ident(n)};")
        self.lane = lane_plan(s, self.d.name, self.lanes)
        if self.lane is not None:
            self.lane_head()
        for k in range(nd):
            dim = nd - 1 - k  # the outer loop dimension is the slowest NDRange dimension
            gid, gsz = self.ids(dim)
            if self.lane is not None:  # a group of lk_g lanes per iteration
                gid = "((long)blockIdx.x * lk_gpb + threadIdx.x / lk_g)"
                gsz = "((long)gridDim.x * lk_gpb)"
            self.w(f"for (long lk_k{k} = {gid}; lk_k{k} < lk_c{k}; lk_k{k} += {gsz}) {{")
            self.ind += 1
            self.w(f"{self.ident(s.vars[k])} = lk_s{k} + lk_k{k} * lk_t{k};")
        if self.lane is None:
            self.block(s.body)
        else:  # before the loop: every lane alike; the loop: shared; after it: the first lane
            at = s.body.index(self.lane.loop)
            self.block(s.body[:at + 1])
            if s.body[at + 1:]:
                self.w("if (lk_lane == 0) {")
                self.ind += 1
                self.block(s.body[at + 1:])
                self.ind -= 1
                self.w("}")
        for k in range(nd):
            self.ind -= 1
            self.w("}")
        body = "\n".join(self.lines)
        head = "\n".join(d.preamble(self.doubles, False)) if d.name == "opencl" else ""
        sig = f"{d.kernel_prefix} {self.name}(" + ", ".join(params) + ")"
        return "\n".join(x for x in (head, helpers(d.name), sig + " {", body, "}") if x) + "\n"

    def ids(self, dim: int) -> tuple[str, str]:
        if self.d.name == "opencl":
            return f"(long)get_global_id({dim})", f"(long)get_global_size({dim})"
        a = "xyz"[dim]
        return (f"((long)blockIdx.{a} * blockDim.{a} + threadIdx.{a})",
                f"((long)gridDim.{a} * blockDim.{a})")

    def lane_head(self) -> None:
        """The lanes per iteration (a power of two up to a warp, dividing the block; the same
        in every thread), this thread's lane and its group's shuffle mask."""
        lp = self.lane
        assert lp is not None
        if lp.fixed:
            self.w(f"int lk_g = {lp.fixed};")
        else:  # about LANE_WORK iterations of the shared loop per lane
            self.w(f"long lk_e = {lp.estimate(self)};")
            self.w(f"int lk_g = 1; while (lk_g < {AUTO_LANES} && (long)lk_g * {LANE_WORK} < lk_e)"
                   " lk_g <<= 1;")
        self.w("if (blockDim.x % lk_g != 0) lk_g = 1;")
        self.w("int lk_lane = threadIdx.x & (lk_g - 1);")
        self.w("unsigned lk_mask = lk_g == 32 ? 0xffffffffu : "
               "((1u << lk_g) - 1u) << ((threadIdx.x & 31) & ~(lk_g - 1));")
        self.w("long lk_gpb = blockDim.x / lk_g;")

    def lane_sum(self, value: str) -> None:
        self.w(f"for (int lk_o = lk_g >> 1; lk_o > 0; lk_o >>= 1) {value} += "
               f"__shfl_xor_sync(lk_mask, {value}, lk_o);")

    def private(self) -> list[str]:
        out: dict[str, None] = {v: None for v in self.s.vars}
        for n in nodes(self.s.body):
            if isinstance(n, V.Assign) and isinstance(n.target, V.Name):
                out[n.target.name] = None
            elif isinstance(n, V.For):
                out[n.var] = None
        return list(out)

    # -- statements
    def block(self, stmts: tuple) -> None:
        for st in stmts:
            self.line = st.line
            getattr(self, "s_" + type(st).__name__, self.s_other)(st)

    def s_other(self, st: V.Stmt) -> None:
        raise GpuUnsupported(f"line {st.line}: {type(st).__name__.lower()} statements cannot "
                             f"run in a GPU kernel (parallel loop of line {self.s.line})")

    def s_Assign(self, st: V.Assign) -> None:
        tgt = st.target
        if isinstance(tgt.type, T.ArrayType) or isinstance(st.value.type, T.ArrayType):
            raise GpuUnsupported(
                f"line {st.line}: array operations and views cannot run inside a GPU parallel "
                f"loop (line {self.s.line}); index the arrays element by element")
        v = self.ex(st.value)
        if isinstance(tgt, V.Name):
            self.w(f"{self.ident(tgt.name)} = {v};")
            return
        tv = self.tmp()
        self.w(f"{self.ctype(_scalar(tgt.type, 'element', st.line))} {tv} = {v};")
        addr = self.address(tgt, store=True)
        self.w(f"{addr} = ({MT[tgt.type.name]}){tv};")  # type: ignore[union-attr]

    def s_ExprStmt(self, st: V.ExprStmt) -> None:
        self.w(f"(void)({self.ex(st.value)});")

    def s_If(self, st: V.If) -> None:
        c = self.ex(st.cond)
        self.w(f"if ({c}) {{")
        self.ind += 1
        self.block(st.then)
        self.ind -= 1
        if st.orelse:
            self.w("} else {")
            self.ind += 1
            self.block(st.orelse)
            self.ind -= 1
        self.w("}")

    def s_For(self, st: V.For) -> None:
        lane = self.lane is not None and st is self.lane.loop
        saved = []
        if lane:  # each lane sums its iterations from zero; the group's sum joins the start
            for acc in self.lane.accumulators:  # type: ignore[union-attr]
                b = self.tmp()
                self.w(f"{self.ctype(self.symtab[acc])} {b} = {self.ident(acc)}; "
                       f"{self.ident(acc)} = 0;")
                saved.append((acc, b))
        self.w("{")
        self.ind += 1
        a, b, c = (self.ex(e) for e in (st.start, st.stop, st.step))
        lo, hi, step, n, k = self.tmp(), self.tmp(), self.tmp(), self.tmp(), self.tmp()
        self.w(f"long {lo} = {a}; long {hi} = {b}; long {step} = {c};")
        sv = st.step.value if isinstance(st.step, V.Const) else None
        if sv is None:
            self.w(f"if ({step} == 0L)")
            self.fail(ERR_RANGE)
        if sv is not None and sv > 0:
            self.w(f"long {n} = {hi} > {lo} ? ({hi} - {lo} + {step} - 1L) / {step} : 0L;")
        else:
            self.w(f"long {n} = {step} > 0L ? ({hi} > {lo} ? ({hi} - {lo} + {step} - 1L) / {step}"
                   f" : 0L) : ({lo} > {hi} ? ({lo} - {hi} - {step} - 1L) / (-{step}) : 0L);")
        hoist = self._hoistable(st) if sv is not None and sv > 0 else []
        if hoist:  # every value of the loop variable in range: a loop without those checks
            last = f"{lo} + ({n} - 1L) * {step}"
            conds = " && ".join(f"{last} < {self.ident(a)}_n{d}" for a, d in hoist)
            self.w(f"if ({n} <= 0L || ({lo} >= 0L && {conds})) {{")
            self.versions += 1
            self.ind += 1
            safe = self.safe
            self.safe = safe | {(a, d, st.var) for a, d in hoist}
            self._loop(st, lo, step, n, self.tmp())
            self.safe = safe
            self.ind -= 1
            self.w("} else {")
            self.ind += 1
            self._loop(st, lo, step, n, k)
            self.ind -= 1
            self.versions -= 1
            self.w("}")
        else:
            self._loop(st, lo, step, n, k)
        self.ind -= 1
        self.w("}")
        for acc, b in saved:
            self.lane_sum(self.ident(acc))
            self.w(f"{self.ident(acc)} = {b} + {self.ident(acc)};")

    def _loop(self, st: V.For, lo: str, step: str, n: str, k: str) -> None:
        bad = self.tmp() if self.defer is None and deferrable(st) else None
        at = len(self.lines)
        lane = self.lane is not None and st is self.lane.loop
        if bad is not None:  # its index checks record the first failure and go on (below)
            self.defer, self.deferred, self.defer_sites, self.defer_lane = bad, False, [], lane
        if lane:  # the group's lanes take the iterations in turn
            self.w(f"for (long {k} = lk_lane; {k} < {n}; {k} += lk_g) {{")
        else:
            self.w(f"for (long {k} = 0L; {k} < {n}; {k}++) {{")
        self.ind += 1
        self.defer_at = k
        self.w(f"{self.ident(st.var)} = {lo} + {k} * {step};")
        self.block(st.body)
        self.ind -= 1
        self.w("}")
        if bad is not None:
            self.defer = None
            if self.deferred:  # the record before the loop, its report after it
                self.lines.insert(at, "    " * self.ind + f"int {bad} = 0; long {bad}_a = 0L" +
                                  (f", {bad}_t = 0L;" if lane else ";"))
                self.fails = True
                # the check that failed (its number in bad) gives the axis, extent and line
                report = " else ".join(
                    f"{'' if j == len(self.defer_sites) - 1 else f'if ({bad} == {j + 1}) '}"
                    f"lk_fail(lk_err + lk_eo, {ERR_INDEX}, {ln}L, {bad}_a, {ax}, {ext});"
                    for j, (ax, ext, ln) in enumerate(self.defer_sites))
                if not lane:
                    self.w(f"if ({bad}) {{ {report} return; }}")
                    return
                # the group's first failing iteration is reported (by its lane); all stop
                self.w(f"if (__any_sync(lk_mask, {bad})) {{")
                self.ind += 1
                self.w(f"long lk_m = {bad} ? {bad}_t : 0x7fffffffffffffffL;")
                self.w("for (int lk_o = lk_g >> 1; lk_o > 0; lk_o >>= 1) { long lk_q = "
                       "__shfl_xor_sync(lk_mask, lk_m, lk_o); if (lk_q < lk_m) lk_m = lk_q; }")
                self.w(f"if ({bad} && {bad}_t == lk_m) {{ {report} }}")
                self.w("return;")
                self.ind -= 1
                self.w("}")

    def _hoistable(self, st: V.For) -> list[tuple[str, int]]:
        """The (array, axis) pairs the loop's body indexes with the bare loop variable under a
        bounds check, when the body never assigns the variable: checking its first and last
        values once (loop versioning) replaces those checks, so the loop body has no early
        exit there and the GPU can keep several loads in flight (spmv's data[k], indices[k]).
        At most two nested loops are versioned (each doubles its body's code)."""
        if self.versions >= 2:
            return []
        found: dict[tuple[str, int], None] = {}
        for n in nodes(st.body):
            if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                    n.target.name == st.var or isinstance(n, V.For) and n.var == st.var:
                return []
            if isinstance(n, V.Index) and isinstance(n.array, V.Name) and \
                    isinstance(n.array.type, T.ArrayType) and \
                    len(n.indices) == n.array.type.ndim:
                for d, (ix, chk) in enumerate(zip(n.indices, n.checks)):
                    if isinstance(ix, V.Name) and ix.name == st.var and \
                            (chk.negative or chk.lower or chk.upper):
                        found[(n.array.name, d)] = None
        return list(found)

    def s_While(self, st: V.While) -> None:
        self.w("while (1) {")
        self.ind += 1
        self.w(f"if (!({self.ex(st.cond)})) break;")
        self.block(st.body)
        self.ind -= 1
        self.w("}")

    def s_Break(self, st: V.Break) -> None:
        self.w("break;")

    def s_Continue(self, st: V.Continue) -> None:
        self.w("continue;")

    def s_Raise(self, st: V.Raise) -> None:
        self.fail(ERR_RAISE, f"{self.raises.index((st.kind, st.message))}L")

    # -- expressions (pure C expressions; checks become statements before them)
    def ex(self, e: V.Expr) -> str:
        if isinstance(e.type, T.ArrayType):
            raise GpuUnsupported(
                f"line {self.line}: array operations cannot run inside a GPU parallel loop "
                f"(line {self.s.line}); index the arrays element by element")
        meth = getattr(self, "x_" + type(e).__name__, None)
        if meth is None:
            raise GpuUnsupported(f"line {self.line}: {type(e).__name__.lower()} expressions "
                                 f"cannot run in a GPU kernel")
        return meth(e)

    def x_Const(self, e: V.Const) -> str:
        _scalar(e.type, "constant", self.line)
        if e.type.name == "float64":
            self.doubles = True
        return _lit(e)

    def x_Name(self, e: V.Name) -> str:
        _scalar(e.type, f"variable '{e.name}'", self.line)
        return self.ident(e.name)

    def x_Dim(self, e: V.Dim) -> str:
        if not isinstance(e.array, V.Name):
            raise GpuUnsupported(f"line {self.line}: the shape of an array expression cannot be "
                                 "taken in a GPU kernel")
        return f"{self.ident(e.array.name)}_n{e.axis}"

    def x_Cast(self, e: V.Cast) -> str:
        src = _scalar(e.operand.type, "value", self.line)
        dst = _scalar(e.type, "value", self.line)
        v = self.ex(e.operand)
        if dst.is_bool:
            return f"({v} != 0)"
        return f"(({self.ctype(dst)})({v}))" if src != dst else v

    def x_UnOp(self, e: V.UnOp) -> str:
        t = _scalar(e.type, "value", self.line)
        v = self.ex(e.operand)
        if e.op == "not" or (e.op == "invert" and t.is_bool):
            return f"(!{v})"
        return f"(~{v})" if e.op == "invert" else f"(-{v})"

    def x_Compare(self, e: V.Compare) -> str:
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[e.op]
        _scalar(e.left.type, "value", self.line)
        return f"({self.ex(e.left)} {sym} {self.ex(e.right)})"

    def x_BinOp(self, e: V.BinOp) -> str:
        t = _scalar(e.type, "value", self.line)
        a, b = self.ex(e.left), self.ex(e.right)
        op = e.op
        simple = {"add": "+", "sub": "-", "mul": "*", "div": "/", "bitand": "&", "bitor": "|",
                  "bitxor": "^", "lshift": "<<", "rshift": ">>"}
        if op == "mul" and t.is_bool:
            return f"({a} & {b})"
        if op in simple:
            return f"({a} {simple[op]} {b})"
        sfx = _SUFFIX[t.name]
        if op in ("floordiv", "mod"):
            if t.is_float:
                return f"floor({a} / {b})" if op == "floordiv" else f"lk_fmod_{sfx}({a}, {b})"
            if not (isinstance(e.right, V.Const) and e.right.value != 0):
                tb = self.tmp()
                self.w(f"{self.ctype(t)} {tb} = {b};")
                self.w(f"if ({tb} == 0)")
                self.fail(ERR_ZERODIV)
                b = tb
            return f"(({self.ctype(t)})lk_{op}({a}, {b}))"
        if op == "pow":
            if t.is_float:
                return f"pow({a}, {b})"
            tb = self.tmp()
            self.w(f"long {tb} = {b};")
            self.w(f"if ({tb} < 0L)")
            self.fail(ERR_NEGPOW)
            return f"(({self.ctype(t)})lk_ipow({a}, {tb}))"
        if op in ("minimum", "maximum"):
            return f"lk_{op[:3]}_{sfx}({a}, {b})"
        raise GpuUnsupported(f"line {self.line}: operator {op} cannot run in a GPU kernel")

    def _branchy(self, e: V.Expr) -> bool:
        """Does evaluating ``e`` emit statements (checks) that must stay conditional?"""
        for n in nodes(e):
            if isinstance(n, V.Index) and any(c.negative or c.lower or c.upper for c in n.checks):
                return True
            if isinstance(n, V.BinOp) and n.op in ("floordiv", "mod", "pow"):
                return True
        return False

    def x_Select(self, e: V.Select) -> str:
        t = _scalar(e.type, "value", self.line)
        c = self.ex(e.cond)
        if not (self._branchy(e.a) or self._branchy(e.b)):
            return f"({c} ? {self.ex(e.a)} : {self.ex(e.b)})"
        r = self.tmp()
        self.w(f"{self.ctype(t)} {r};")
        self.w(f"if ({c}) {{")
        self.ind += 1
        self.w(f"{r} = {self.ex(e.a)};")
        self.ind -= 1
        self.w("} else {")
        self.ind += 1
        self.w(f"{r} = {self.ex(e.b)};")
        self.ind -= 1
        self.w("}")
        return r

    def x_Logical(self, e: V.Logical) -> str:
        a = self.ex(e.left)
        if not self._branchy(e.right):
            return f"({a} {'&&' if e.op == 'and' else '||'} {self.ex(e.right)})"
        r = self.tmp()
        self.w(f"int {r} = {a};")
        self.w(f"if ({'' if e.op == 'and' else '!'}{r}) {{")
        self.ind += 1
        self.w(f"{r} = {self.ex(e.right)};")
        self.ind -= 1
        self.w("}")
        return r

    def x_LibCall(self, e: V.LibCall) -> str:
        if any(isinstance(a.type, T.ArrayType) for a in e.args) or \
                not isinstance(e.type, T.ScalarType):
            raise GpuUnsupported(f"line {self.line}: np.{e.fn} of arrays cannot run inside a "
                                 f"GPU parallel loop (line {self.s.line})")
        t = _scalar(e.type, "value", self.line)
        args = [self.ex(a) for a in e.args]
        if e.fn in ("minimum", "maximum"):
            return f"lk_{e.fn[:3]}_{_SUFFIX[t.name]}({args[0]}, {args[1]})"
        if e.fn == "abs":
            src = _scalar(e.args[0].type, "value", self.line)
            return f"fabs({args[0]})" if src.is_float else f"lk_abs({args[0]})"
        if e.fn == "where":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if e.fn in _MATH:
            return f"{_MATH[e.fn]}({args[0]})"
        raise GpuUnsupported(f"line {self.line}: np.{e.fn} cannot run in a GPU kernel")

    def x_Index(self, e: V.Index) -> str:
        return self.address(e)

    def address(self, e: V.Index, store: bool = False) -> str:
        arr = e.array
        if not isinstance(arr, V.Name) or not isinstance(arr.type, T.ArrayType):
            raise GpuUnsupported(f"line {self.line}: indexing an array expression (a view or "
                                 "a temporary) cannot run in a GPU kernel; index the array")
        t = arr.type
        if any(isinstance(i, V.Slice) for i in e.indices) or len(e.indices) != t.ndim:
            raise GpuUnsupported(f"line {self.line}: array slices cannot be taken inside a GPU "
                                 f"parallel loop (line {self.s.line})")
        v = self.ident(arr.name)
        terms = [f"{v}_o"]
        oks = []  # deferred checks (a loop's failure record) the load is made under
        for k, (ix, chk) in enumerate(zip(e.indices, e.checks)):
            i = self.ex(ix)  # type: ignore[arg-type]
            if self.safe and isinstance(ix, V.Name) and (arr.name, k, ix.name) in self.safe:
                chk = V.NO_CHECK  # its loop checked every value up front (s_For)
            if (chk.negative or chk.lower or chk.upper) and self.defer is not None and not store:
                orig, j, ok, bad = self.tmp(), self.tmp(), self.tmp(), self.defer
                self.w(f"long {orig} = {i}; long {j} = {orig};")
                if chk.negative:
                    self.w(f"if ({j} < 0L) {j} += {v}_n{k};")
                cond = (f"(unsigned long){j} < (unsigned long){v}_n{k}" if chk.lower and chk.upper
                        else f"{j} < {v}_n{k}" if chk.upper else f"{j} >= 0L")
                self.w(f"int {ok} = {cond};")
                self.defer_sites.append((f"{k}L", f"{v}_n{k}", self.line))
                at_t = f" {bad}_t = {self.defer_at};" if self.defer_lane else ""
                self.w(f"if (!{ok} && !{bad}) {{ {bad} = {len(self.defer_sites)}; "
                       f"{bad}_a = {orig};{at_t} }}")
                self.w(f"if (!{ok}) {j} = 0L;")
                oks.append(ok)
                self.deferred = True
                i = j
            elif chk.negative or chk.lower or chk.upper:
                orig, j = self.tmp(), self.tmp()
                self.w(f"long {orig} = {i}; long {j} = {orig};")
                if chk.negative:
                    self.w(f"if ({j} < 0L) {j} += {v}_n{k};")
                if chk.lower and chk.upper:
                    cond = f"(unsigned long){j} >= (unsigned long){v}_n{k}"
                elif chk.upper:
                    cond = f"{j} >= {v}_n{k}"
                else:
                    cond = f"{j} < 0L"
                self.w(f"if ({cond})")
                self.fail(ERR_INDEX, orig, f"{k}L", f"{v}_n{k}")
                i = j
            unit = (t.layout == "C" and k == t.ndim - 1) or (t.layout == "F" and k == 0)
            terms.append(f"({i})" if unit else f"({i}) * {v}_s{k}")
        ref = f"{v}_d[" + " + ".join(terms) + "]"
        if oks:  # not loaded when an index failed (the loop reports it at its end)
            ref = f"({' && '.join(oks)} ? {ref} : ({MT[t.elem.name]})0)"
        return f"({ref} != 0)" if t.elem.is_bool and not store else ref


def helpers(dialect: str) -> str:
    """Device functions every kernel may call: the error record, Python's integer division,
    modulo and power, NumPy's NaN-propagating minimum/maximum."""
    d = dialect_named(dialect)
    p = d.user_fun_prefix
    g = d.pointer("global", "int")
    cas = "atomic_cmpxchg" if dialect == "opencl" else "atomicCAS"
    out = [f"{p}void lk_fail({g} err, int kind, long line, long a, long b, long c) {{",
           f"    if ({cas}(err, 0, kind) == 0) {{ err[1] = (int)line; err[2] = (int)a; "
           "err[3] = (int)(a >> 32); err[4] = (int)b; err[5] = (int)c; err[6] = (int)(c >> 32); }",
           "}",
           f"{p}long lk_floordiv(long a, long b) {{ long q = a / b; long r = a % b; "
           "return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q; }",
           f"{p}long lk_mod(long a, long b) {{ long r = a % b; "
           "return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }",
           f"{p}long lk_ipow(long x, long e) {{ long r = 1; while (e > 0) {{ if (e & 1) r *= x; "
           "x *= x; e >>= 1; } return r; }",
           f"{p}long lk_abs(long x) {{ return x < 0 ? -x : x; }}"]
    for sfx, ct in (("i", "int"), ("l", "long"), ("f", "float"), ("d", "double")):
        nan = "" if sfx in "il" else " || a != a"
        out.append(f"{p}{ct} lk_min_{sfx}({ct} a, {ct} b) {{ return (a < b{nan}) ? a : b; }}")
        out.append(f"{p}{ct} lk_max_{sfx}({ct} a, {ct} b) {{ return (a > b{nan}) ? a : b; }}")
    for sfx, ct in (("f", "float"), ("d", "double")):
        out.append(f"{p}{ct} lk_fmod_{sfx}({ct} x, {ct} y) {{ {ct} r = fmod(x, y); "
                   "return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }")
    return "\n".join(out)
