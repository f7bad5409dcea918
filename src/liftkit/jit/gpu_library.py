"""Library operators of GPU sections on Lift kernels (seed 003 §5.8: library calls go to the
runtime, which runs tuned kernels — RaijinCL in the thesis, Lift's derivations here).

``A @ B`` (matrices), ``M @ x`` / ``x @ M`` (a matrix and a vector), ``np.dot(x, y)``
(vectors) and ``np.sum(x)`` in a section are Lift high-level programs (``liftkit.blas.programs``:
``mm``, ``gemv`` N and T, ``dot``; a ``reduce(add) ∘ map(id)`` for the sum). Each runs on the
best derivation the tuning database holds for the program, its sizes and the device
(``liftkit explore``'s result, ``liftkit.explore.tuned``); without one, on the variant
``liftkit.blas``'s profile for the device model or its default chooses (tiled GEMM, row-blocks /
column-blocks GEMV) where the sizes are multiples of its blocks, else on the any-size derivation
(one work-item per element or row; one per chunk for reductions), saying so once per operation
and device. The pipeline's kernels are enqueued through the task runtime like any other task.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from liftkit.runtime import CpuForm, Kernel, Runtime, Whole


class TuningNotice(UserWarning):
    """A library operation runs on a default derivation (nothing tuned for it here)."""


@dataclass
class Pipeline:
    """A compiled Lift pipeline in both dialects, ready to enqueue."""
    compiled: Any                 # CompiledProgram in the runtime's dialect
    kernels: list[Kernel]         # the same kernels with their OpenCL source too (CPU fallback)
    origin: str                   # "tuned" or the default variant's name


class LiftLibrary:
    """Compiled library pipelines by (operation, dtype, sizes, device, dialect)."""

    def __init__(self) -> None:
        self.pipelines: dict[tuple, Pipeline] = {}
        self.noticed: set[tuple] = set()
        self.lock = threading.Lock()

    def pipeline(self, rt: Runtime, op: str, dtype: str, sizes: dict[str, int]) -> Pipeline:
        dev = rt.device.device
        key = (op, dtype, tuple(sorted(sizes.items())), dev.fingerprint, rt.dialect)
        with self.lock:
            p = self.pipelines.get(key)
            if p is None:
                p = self.pipelines[key] = self._build(rt, op, dtype, sizes)
            return p

    def _build(self, rt: Runtime, op: str, dtype: str, sizes: dict[str, int],
               spec: Any = None, notice: bool = True) -> Pipeline:
        from liftkit.codegen.compiler import compile_program
        from liftkit.codegen.kernel import CompileOptions
        cuda = rt.dialect == "cuda"
        program, derived, variant = _map_program(spec) if spec is not None else \
            _program(op, dtype, sizes, "cpu" if rt.device.is_cpu else "gpu", rt.device.device,
                     cuda)
        low, origin = None, str(variant)
        try:
            from liftkit.explore.tuned import best_for
            found = best_for(program, sizes, rt.device.device)
            if found is not None:
                low, origin = found[0], "tuned"
        except Exception:  # noqa: BLE001 - no database, or an unreadable one: use the default
            low = None
        if low is None and spec is None and op in _KINDS and not rt.device.is_cpu and \
                _profiled(blas_kind(op, dtype), sizes, rt.device.device, cuda) == variant:
            low, origin = derived(), f"blas profile {variant}"  # liftkit.blas tuned it here
        if low is None:
            low = derived()
            note = (op.split(":")[0], dtype, rt.device.device.fingerprint)
            if notice and note not in self.noticed:
                self.noticed.add(note)
                warnings.warn(f"liftkit: nothing tuned for {op.split(':')[0]} ({dtype}, "
                              f"{', '.join(f'{k}={v}' for k, v in sorted(sizes.items()))}) on "
                              f"{rt.device.label}; using the default derivation {variant} "
                              "(tune with 'liftkit explore')", TuningNotice, stacklevel=2)
        compiled = compile_program(low, CompileOptions(dialect=rt.dialect))
        try:  # the OpenCL C twin runs a task that cannot fit on the device on the CPU
            ocl = compiled if rt.dialect == "opencl" else \
                compile_program(low, CompileOptions(dialect="opencl"))
        except Exception:  # noqa: BLE001 - a CUDA-only derivation (cp.async, tensor cores)
            ocl = None
        forms = _cpu_forms(compiled, op, dtype, sizes) if ocl is None and op in _KINDS \
            else None
        kernels = [Kernel(k.name, {rt.dialect: k.source} |
                          ({"opencl": ocl.kernels[j].source} if ocl is not None else {}),
                          dynamic_shared=k.dynamic_shared if cuda else 0,
                          cpu=forms[j] if forms is not None else None)
                   for j, k in enumerate(compiled.kernels)]
        return Pipeline(compiled, kernels, origin)

    def run_map(self, rt: Runtime, spec: Any, arrays: list, scalars: list, out: Any,
                n: int, notice: bool = True) -> None:
        """An element-wise loop (a ``gpu_codegen.LiftMap``) as the Lift program
        ``map(f) << zip(arrays...)`` over n elements, writing ``out`` (``notice``: say once
        that nothing is tuned for it)."""
        op = "map:" + spec.body
        dev = rt.device.device
        key = (op, spec.py, spec.arrays, spec.scalars, (("N", n),), dev.fingerprint, rt.dialect)
        with self.lock:
            p = self.pipelines.get(key)
            if p is None:
                p = self.pipelines[key] = self._build(rt, op, spec.result, {"N": n}, spec,
                                                      notice)
        self.run(rt, op, arrays, out, {"N": n}, spec.result, p, scalars)

    def gemv(self, rt: Runtime, trans: bool, A: Any, x: Any, out: Any, sizes: dict[str, int],
             dtype: str) -> None:
        """``out = A·x`` (``trans``: ``Aᵀ·x``) for A: M×N on liftkit.blas's GEMV program
        (α = 1, β = 0), its y a zero-filled temporary on the device."""
        zero = rt.empty((sizes["N"] if trans else sizes["M"],), np.dtype(dtype))
        try:
            self.run_map(rt, _zero_fill(dtype), [zero], [], zero, zero.shape[0], notice=False)
            one = np.dtype(dtype).type
            self.run(rt, "gemv:T" if trans else "gemv:N", [A, x, zero], out, sizes, dtype,
                     scalars=[one(1), one(0)])
        finally:
            rt.release(zero, writeback=False)

    def run(self, rt: Runtime, op: str, arrays: list, out: Any, sizes: dict[str, int],
            dtype: str, pipeline: Optional[Pipeline] = None,
            scalars: Optional[list] = None) -> Optional[float]:
        """Enqueue the pipeline of ``op`` on the runtime's variables ``arrays`` (inputs, in the
        program's order; ``scalars`` follow them) writing ``out`` (a variable), or returning a
        scalar result."""
        p = pipeline if pipeline is not None else self.pipeline(rt, op, dtype, sizes)
        c = p.compiled
        temps: dict[str, Any] = {}
        result = None
        for b in c.buffers:
            if b.zeroed:  # reduceSplitTail's flags: this launch's own, zero-filled (float32
                # zeros are zero bytes; the kernel reads them as int flags)
                n = max(int(b.nbytes.eval(sizes)) // 4, 1)
                temps[b.name] = rt.empty((n,), np.float32)
                self.run_map(rt, _zero_fill("float32"), [temps[b.name]], [], temps[b.name], n,
                             notice=False)
            elif b.role in ("intermediate", "temporary"):
                temps[b.name] = rt.empty((max(int(b.nbytes.eval(sizes)), 1),), np.uint8)
            elif b.role == "output":
                if out is None:
                    result = temps[b.name] = rt.empty((1,), np.dtype(dtype))
                else:
                    temps[b.name] = out
        try:
            for k, kern in zip(c.kernels, p.kernels):
                args, reads, writes = [], [], []
                for a in k.args:
                    if a.kind == "buffer":
                        buf = c.buffer(a.buffer)
                        v = arrays[buf.param_index] if buf.role == "input" else temps[buf.name]
                        args.append(Whole(v))
                        (writes if "const" not in a.ctype else reads).append(v)
                    elif a.kind == "size":
                        args.append(_size(a.ctype, int(a.size.eval(sizes))))
                    else:
                        args.append((scalars or [])[a.param_index - len(arrays)])
                glob = tuple(int(g.eval(sizes)) if hasattr(g, "eval") else int(g)
                             for g in k.ndrange.global_size)
                over = [temps[n] for n in c.result if n in temps and temps[n] in writes]
                rt.launch(kern, glob, args, reads=reads, writes=writes, overwrites=over,
                          local_size=k.ndrange.local_size)
            if result is not None:
                return rt.read(result)[0].item()
            return None
        finally:
            for name, v in temps.items():
                if v is not out and v.id in rt.vars:
                    rt.release(v, writeback=False)


def _size(ctype: str, v: int) -> Any:
    t = ctype.strip().split()[-1]
    return {"int": np.int32, "long": np.int64, "uint": np.uint32, "ulong": np.uint64}.get(
        t, np.int32)(v)


def _map_program(spec: Any) -> tuple:
    """``map(f) << zip(a0, a1, ...)`` with scalars s0.. closed over, f the loop's body."""
    import hashlib

    from liftkit.dsl import map as lmap, size, zip as lzip
    from liftkit.dsl.core import as_expr, settle_literals
    from liftkit.ir.nodes import Lambda, Param, user_fun
    from liftkit.rewrite.derivation import Derivation
    from liftkit.rewrite.strategies import rule
    from liftkit.types import float32, float64
    ts = {"float32": float32, "float64": float64}
    N = size("N")
    na = len(spec.arrays)
    names = [f"a{k}" for k in range(na)] + [f"s{k}" for k in range(len(spec.scalars))]
    elem = [ts[e] for _, e in spec.arrays] + [ts[e] for _, e in spec.scalars]
    impl = eval(f"lambda {', '.join(names)}: {spec.py}", {"np": np})  # our own expression
    tag = hashlib.sha256((spec.body + repr(elem)).encode()).hexdigest()[:12]
    uf = user_fun(f"ew_{tag}", list(zip(names, elem)), ts[spec.result], spec.body, impl)
    params = tuple(Param(nm, t[N] if k < na else t) for k, (nm, t) in enumerate(zip(names, elem)))
    ss = params[na:]
    if na == 1:
        body = lmap(lambda x: uf(x, *ss)) << params[0]
    else:
        body = lmap(lambda p: uf(*[p[k] for k in range(na)], *ss)) << lzip(*params[:na])
    prog = settle_literals(Lambda(params, as_expr(body)))
    return prog, lambda: Derivation(prog, name="map").then(rule("map-mapGlb", dim=0),
                                                           (0,)).final, "glb()"


# the library operations that are liftkit.blas kinds: (operation, layout)
_KINDS = {"mm": ("mm", "NN"), "gemv:N": ("gemv", "N"), "gemv:T": ("gemv", "T")}


def blas_kind(op: str, dtype: str) -> Any:
    """The ``liftkit.blas`` kind of the library operation ``op`` (one of ``_KINDS``)."""
    from liftkit.blas import codelets as cd
    return cd.Kind(_KINDS[op][0], dtype, _KINDS[op][1])


def _cpu_forms(compiled: Any, op: str, dtype: str, sizes: dict[str, int]) -> Optional[list]:
    """For a CUDA-only pipeline of ``op``: the OpenCL C kernels the runtime's CPU fallback
    runs instead (memory pressure), from liftkit.blas's CPU default derivation of the same
    kind, when they take the same arguments and buffers but the CUDA kernels' scratch
    temporaries (a split tail's flags and partial sums), which the twins leave out (None
    otherwise: such a task that cannot fit on the device is refused in one line)."""
    from liftkit.blas import codelets as cd
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions
    kind = blas_kind(op, dtype)
    variant = cd.default_variant(kind, "cpu", sizes)
    if any(sizes[k] % m for k, m in cd.multiples(kind, variant).items()):
        variant = cd.Variant.of("glb")
    try:
        twin = compile_program(cd.derive(kind, variant).final, CompileOptions(dialect="opencl"))
    except Exception:  # noqa: BLE001 - no OpenCL twin: the fallback is refused
        return None

    scratch = {b.name for b in compiled.buffers if b.role == "temporary"}

    def shape(c: Any, drop: set) -> list:
        return [[(a.kind, a.buffer, str(a.size), a.param_index) for a in k.args
                 if a.buffer not in drop] for k in c.kernels] + \
            [[(b.name, b.role, b.param_index, int(b.nbytes.eval(sizes))) for b in c.buffers
              if b.name not in drop]]
    if shape(twin, set()) != shape(compiled, scratch):
        return None
    taken = [tuple(i for i, a in enumerate(k.args) if a.buffer not in scratch)
             for k in compiled.kernels]

    def geometry(g: Any) -> Optional[tuple]:
        return None if g is None else \
            tuple(int(x.eval(sizes)) if hasattr(x, "eval") else int(x) for x in g)
    return [CpuForm(k.name, k.source, geometry(k.ndrange.global_size),
                    geometry(k.ndrange.local_size),
                    keep if len(keep) < len(c.args) else None)
            for k, c, keep in zip(twin.kernels, compiled.kernels, taken)]


def _zero_fill(dtype: str) -> Any:
    """The element-wise loop writing zeros (GEMV's y of β·y: undefined memory times 0 may be
    NaN), over the array it fills, whose contents it never reads."""
    from .gpu_codegen import LiftMap
    return LiftMap("return 0.0f;" if dtype == "float32" else "return 0.0;",
                   f"np.{dtype}(0.0)", (("y", dtype),), (), dtype)


def _profiled(kind: Any, sizes: dict[str, int], device: Any, cuda: bool = False) -> Any:
    """The variant ``liftkit.blas``'s profile of this GPU model chose for the runtime's
    backend, or None: on CUDA the profile tuned through CUDA (its codelets use cp.async and
    tensor cores; the CPU fallback runs an OpenCL twin, ``_cpu_forms``), on OpenCL one tuned
    through OpenCL (the platform's name leads its fingerprint)."""
    if device is None or not getattr(device, "name", None):
        return None
    from liftkit.blas import codelets as cd
    from liftkit.blas.profile import SHIPPED, Profile, ProfileError, profile_dir
    for d in (profile_dir(), SHIPPED):
        for path in sorted(d.glob("profile-*.json")) if d.is_dir() else ():
            try:
                prof = Profile.load(path)
            except ProfileError:
                continue
            parts = prof.fingerprint.split("|")
            if len(parts) > 1 and parts[1] == device.name and (parts[0] == "cuda") == cuda:
                v = prof.choose(kind, sizes, cd.multiples)
                if v is not None:
                    return v
    return None


def _program(op: str, dtype: str, sizes: dict[str, int], devkind: str,
             device: Any = None, cuda: bool = False) -> tuple:
    """(high-level program, its default low-level program (lazily), the variant's name);
    ``cuda``: the runtime runs CUDA C (liftkit.blas's CUDA profile and defaults apply)."""
    from liftkit.blas import codelets as cd
    from liftkit.blas import programs as bp
    from liftkit.rewrite.derivation import Derivation
    if op in _KINDS:  # the profile's or liftkit.blas's default variant, where sizes divide
        kind = blas_kind(op, dtype)
        # on CUDA liftkit.blas's CUDA choices (SGEMM: cp.async tiles; DGEMM: DMMA); GEMV on
        # any GPU: its CUDA default (group-rows, what the H100 ran fastest; both dialects)
        backend = "cuda" if cuda or (kind.op == "gemv" and devkind == "gpu") else "opencl"
        variant = _profiled(kind, sizes, device, cuda) or \
            cd.default_variant(kind, devkind, sizes, backend=backend)
        mult = cd.multiples(kind, variant)
        if any(sizes[k] % m for k, m in mult.items()):
            variant = cd.Variant.of("glb")
        return kind.program(), lambda: cd.derive(kind, variant).final, variant
    n = sizes["N"]
    chunk = math.gcd(n, 64 if devkind == "gpu" else 256)  # a chunk length that divides N
    variant = cd.Variant.of("chunks", n=chunk)
    if op == "dot":
        kind = cd.Kind("dot", dtype)
        return kind.program(), lambda: cd.derive(kind, variant).final, variant
    t = bp.scalar_type(dtype)
    from liftkit.dsl import fun, map as lmap, reduce as lreduce, size
    N = size("N")
    prog = fun([t[N]], lambda x: lreduce(bp._add(t), bp._zero(t)) << lmap(bp._id(t)) << x)

    def derived() -> Any:
        return Derivation(prog, name=f"sum/{dtype}").then(
            cd._reduce_chunks(cd.Kind("asum", dtype), chunk), cd.BODY).final
    return prog, derived, variant

