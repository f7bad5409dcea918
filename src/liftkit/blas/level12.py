"""GEMV, out-of-place transpose and the BLAS-1 set (scal, axpy, dot, asum, nrm2) on derived
kernels. Vectors and matrices whose sizes are not multiples of what the chosen derivation needs
are padded with zeros in a workspace (zeros change no sum and no product that is kept)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from liftkit.blas.codelets import Kind, padded_sizes
from liftkit.blas.gemm import Trans, _check_scalar, op_flag
from liftkit.blas.kernels import BlasError
from liftkit.blas.session import DTYPES, Future, Operand, Session, Workspace


def _pad1d(s: Session, o: Operand, n_pad: int, ws: Workspace, name: str) -> tuple[Any, list[Any]]:
    n, item = o.shape[0], o.dtype.itemsize
    if n_pad == n:
        return o.buf, list(o.events)
    buf = ws.buffer(name, n_pad * item)
    ev0 = s.fill_zero(buf, n_pad * item, o.events)
    ev = s.q.copy(buf, o.buf, n * item, [ev0])
    return buf, [ev]


def _pad2d(s: Session, buf: Any, events: list[Any], have: tuple[int, int],
           need: tuple[int, int], item: int, ws: Workspace, name: str) -> tuple[Any, list[Any]]:
    if have == need:
        return buf, events
    dst = ws.buffer(name, need[0] * need[1] * item)
    ev0 = s.fill_zero(dst, need[0] * need[1] * item, events)
    ev = s.q.copy2d(dst, buf, have[0], have[1] * item, have[1] * item, need[1] * item, [ev0])
    return dst, [ev]


# -- GEMV ----------------------------------------------------------------------------------------
_SCALARS = (int, float, complex, np.float32, np.float64, np.complex64, np.complex128)


def gemv(s: Session, A: Any, x: Any, y: Any = None, *, alpha: Any = 1.0, beta: Any = 0.0,
         trans: Trans = False) -> Future:
    """y = α·op(A)·x + β·y (op(A) = A for False/"N", Aᵀ for True/"T", Aᴴ for "C"); y is
    updated in place when given."""
    calls, key = s.calls, None
    if (calls is not None and type(alpha) in _SCALARS and type(beta) in _SCALARS
            and type(trans) in (bool, str, np.bool_)):
        ops = calls.operands
        ka, kx = ops.key(A), ops.key(x)
        ky = ops.key(y) if y is not None else None
        if ka is not None and kx is not None and (y is None or ky is not None):
            key = ("gemv", ka, kx, ky, trans, type(alpha), type(beta), beta == 0)
    if key is None:
        return _gemv(s, A, x, y, alpha, beta, trans)[0]
    return calls.call(key, (A, x), y, (alpha, beta),
                      lambda: _gemv(s, A, x, y, alpha, beta, trans), upload_output=beta != 0)


def _gemv(s: Session, A: Any, x: Any, y: Any, alpha: Any, beta: Any, trans: Trans
          ) -> tuple[Future, Any]:
    """The general path (every check, padding); with the call plan of its kind where the call
    is the kernels alone (None otherwise)."""
    a = s.operand(A, "A", "gemv", 2)
    xv = s.operand(x, "x", "gemv", 1, a.dtype)
    _check_scalar("gemv", "alpha", alpha, a.dtype)
    _check_scalar("gemv", "beta", beta, a.dtype)
    trans, conj = op_flag("gemv", "trans", trans, a.dtype)
    rows, cols = (a.shape[1], a.shape[0]) if trans else a.shape
    if xv.shape[0] != cols:
        raise BlasError(f"gemv: op(A) is {rows}×{cols} but x has length {xv.shape[0]}")
    dt = a.dtype
    given = y is not None
    if y is None:
        out, beta = s.output([a, xv], (rows,), dt), 0.0
    else:
        out = s.operand(y, "y", "gemv", 1, dt, output=True, upload=beta != 0)
        if out.shape[0] != rows:
            raise BlasError(f"gemv: op(A) is {rows}×{cols} but y has length {out.shape[0]}")
    t = trans != (a.order == "F")  # the kernel reads A's stored row-major matrix transposed
    sm, sn = a.stored
    kind = Kind("gemv", DTYPES[dt], {(False, False): "N", (True, False): "T",
                                     (True, True): "C", (False, True): "R"}[t, conj])
    sizes = {"M": sm, "N": sn}
    built = s.kernel(kind, sizes)
    p = padded_sizes(sizes, built.multiples)
    ws = s.scratch
    item = dt.itemsize
    abuf, waits = _pad2d(s, a.buf, list(a.events), (sm, sn), (p["M"], p["N"]), item, ws, "A")
    xbuf, xw = _pad1d(s, xv, p["M"] if t else p["N"], ws, "x")
    waits += xw + out.events
    ylen_p = p["N"] if t else p["M"]
    if beta == 0:  # β·y reads zeros (y may hold NaN, and 0·NaN is NaN): no memset per call
        ybuf, yw = s.zeros(ylen_p * item)
    else:
        ybuf, yw = (out.buf, []) if ylen_p == rows else _pad1d(
            s, Operand(out.buf, (rows,), "C", dt, waits), ylen_p, ws, "y")
    waits += yw
    dest = out.buf if ylen_p == rows else ws.buffer("y-out", ylen_p * item)
    ev, temps = built.launch(s.q, {0: abuf, 1: xbuf, 2: ybuf},
                             {3: dt.type(alpha), 4: dt.type(beta)}, dest, p, waits, ws)
    if dest is not out.buf:
        ev = s.q.copy(out.buf, dest, rows * item, [ev])
    events, finish = s.finish_output(out, [ev])
    plan = None
    if s.calls is not None and _contiguous(A, x, y):
        plan = _gemv_plan(s, built, (sm, sn), p, t, rows, beta, dt, given)
    return s.future(events, finish, keep=[a, xv, out, ws, temps, ybuf]), plan


def _gemv_plan(s: Session, built: Any, stored: tuple[int, int], p: dict[str, int], t: bool,
               rows: int, beta: Any, dt: np.dtype, given: bool) -> Any:
    """The call plan of a GEMV kind: the steps `_gemv` enqueues (A, x and y padded into the
    workspace where the derivation needs it, the kernel, the result copied out of its padded
    buffer). Slots: A, x, y, α, β, the zero buffer (β = 0), then workspace buffers."""
    from liftkit.blas.calls import CallPlan, Copy, Output, pad_steps, plan_launches

    item = dt.itemsize
    ylen_p = p["N"] if t else p["M"]
    zeros = ylen_p * item if beta == 0 else 0
    base = 6 if zeros else 5
    steps: list[Any] = []
    temps: list[tuple[str, int]] = []

    def temp(name: str, nbytes: int) -> int:
        temps.append((name, nbytes))
        return base + len(temps) - 1

    def pad1(src: int, n: int, n_pad: int, name: str) -> int:
        if n == n_pad:
            return src
        dst = temp(name, n_pad * item)
        steps.extend(pad_steps(dst, src, (1, n), (1, n_pad), item))
        return dst

    a = 0
    if stored != (p["M"], p["N"]):
        a = temp("A", p["M"] * p["N"] * item)
        steps.extend(pad_steps(a, 0, stored, (p["M"], p["N"]), item))
    x = pad1(1, stored[0] if t else stored[1], p["M"] if t else p["N"], "x")
    yin = 5 if zeros else pad1(2, rows, ylen_p, "y")
    dest = 2 if ylen_p == rows else temp("y-out", ylen_p * item)
    more, ktemps = plan_launches(s.q, built, p, {0: a, 1: x, 2: yin}, {3: 3, 4: 4}, dest,
                                 base + len(temps))
    steps += more
    temps += ktemps
    if dest != 2:
        steps.append(Copy(2, dest, 1, rows * item, rows * item, rows * item))
    return (CallPlan(tuple(steps), 3, (dt.type, dt.type), tuple(temps), zeros),
            Output((rows,), dt, "C", given))


def _contiguous(*arrays: Any) -> bool:
    """No NumPy argument needs a contiguous copy (a call plan uploads them as they are)."""
    return all(type(x) is not np.ndarray or x.flags.c_contiguous or x.flags.f_contiguous
               for x in arrays if x is not None)


# -- transpose -----------------------------------------------------------------------------------
def transpose(s: Session, A: Any, out: Any = None) -> Future:
    """Aᵀ out of place, in A's memory order (a new array unless `out` is given)."""
    calls, key = s.calls, None
    if calls is not None:
        ops = calls.operands
        ka = ops.key(A)
        ko = ops.key(out) if out is not None else None
        if ka is not None and (out is None or ko is not None):
            key = ("transpose", ka, ko)
    if key is None:
        return _transpose(s, A, out)[0]
    return calls.call(key, (A,), out, (), lambda: _transpose(s, A, out))


def _transpose(s: Session, A: Any, out: Any) -> tuple[Future, Any]:
    a = s.operand(A, "A", "transpose", 2)
    want = a.shape[::-1]
    if out is None:
        o = s.output([a], want, a.dtype)
        if a.order == "F":  # the result in A's order: column-major Aᵀ is A's buffer reshaped
            o = _as_order(s, o, "F")
    else:
        o = s.operand(out, "out", "transpose", 2, a.dtype, output=True, upload=False)
        if o.shape != want:
            raise BlasError(f"transpose: out must have shape {want}, got {o.shape}")
    item = a.dtype.itemsize
    plan = None
    if o.order == a.order:  # the stored matrix is transposed
        sm, sn = a.stored
        kind = Kind("transpose", DTYPES[a.dtype])
        built = s.kernel(kind, {"M": sm, "N": sn})
        p = padded_sizes({"M": sm, "N": sn}, built.multiples)
        ws = s.scratch
        src, waits = _pad2d(s, a.buf, list(a.events) + o.events, (sm, sn), (p["M"], p["N"]),
                            item, ws, "A")
        if p == {"M": sm, "N": sn}:
            ev, temps = built.launch(s.q, {0: src}, {}, o.buf, p, waits, ws)
        else:
            tmp = ws.buffer("T", p["M"] * p["N"] * item)
            ev, temps = built.launch(s.q, {0: src}, {}, tmp, p, waits, ws)
            ev = s.q.copy2d(o.buf, tmp, sn, sm * item, p["M"] * item, sm * item, [ev])
        if s.calls is not None and _contiguous(A, out):
            from liftkit.blas.calls import Output

            plan = (_transpose_plan(s, built, (sm, sn), p, item),
                    Output(want, a.dtype, o.order, out is not None))
        keep: list[Any] = [ws, temps]
    else:  # the orders differ: the bytes are already the transpose's
        ev = s.q.copy(o.buf, a.buf, math.prod(a.shape) * item, list(a.events) + o.events)
        keep = []
    events, finish = s.finish_output(o, [ev])
    return s.future(events, finish, keep=[a, o, *keep]), plan


def _transpose_plan(s: Session, built: Any, stored: tuple[int, int], p: dict[str, int],
                    item: int) -> Any:
    """The steps `_transpose` enqueues for one kind (A padded, the kernel, the padded result
    copied out). Slots: A, the output, then workspace buffers."""
    from liftkit.blas.calls import CallPlan, Copy, pad_steps, plan_launches

    sm, sn = stored
    steps: list[Any] = []
    temps: list[tuple[str, int]] = []
    src = 0
    if (sm, sn) != (p["M"], p["N"]):
        temps.append(("A", p["M"] * p["N"] * item))
        src = 2
        steps.extend(pad_steps(src, 0, (sm, sn), (p["M"], p["N"]), item))
    dest = 1
    if (sm, sn) != (p["M"], p["N"]):
        temps.append(("T", p["M"] * p["N"] * item))
        dest = 2 + len(temps) - 1
    more, ktemps = plan_launches(s.q, built, p, {0: src}, {}, dest, 2 + len(temps))
    steps += more
    temps += ktemps
    if dest != 1:
        steps.append(Copy(1, dest, sn, sm * item, p["M"] * item, sm * item))
    return CallPlan(tuple(steps), 2, (), tuple(temps))


def _as_order(s: Session, o: Operand, order: str) -> Operand:
    """A fresh output of shape o.shape stored in `order` (same bytes, other strides)."""
    if o.host is not None:
        host = np.empty(o.shape, o.dtype, order=order)
        return Operand(o.buf, o.shape, order, o.dtype, host=host)
    return s.output([o], o.shape, o.dtype, order)


# -- BLAS-1 ---------------------------------------------------------------------------------------
def _vector_kernel(s: Session, op: str, n: int, dt: np.dtype) -> tuple[Any, int]:
    built = s.kernel(Kind(op, DTYPES[dt]), {"N": n})
    return built, padded_sizes({"N": n}, built.multiples)["N"]


def scal(s: Session, alpha: Any, x: Any, out: Any = None) -> Future:
    """α·x (into `out` when given; out=x scales in place)."""
    xv = s.operand(x, "x", "scal", 1)
    _check_scalar("scal", "alpha", alpha, xv.dtype)
    return _map1(s, "scal", [xv], alpha, out)


def axpy(s: Session, alpha: Any, x: Any, y: Any, out: Any = None) -> Future:
    """α·x + y (into `out` when given; out=y is BLAS's in-place axpy)."""
    xv = s.operand(x, "x", "axpy", 1)
    _check_scalar("axpy", "alpha", alpha, xv.dtype)
    yv = s.operand(y, "y", "axpy", 1, xv.dtype)
    if xv.shape != yv.shape:
        raise BlasError(f"axpy: x has length {xv.shape[0]} but y has length {yv.shape[0]}")
    return _map1(s, "axpy", [xv, yv], alpha, out)


def _map1(s: Session, op: str, vs: list[Operand], alpha: float, out: Any) -> Future:
    n, dt = vs[0].shape[0], vs[0].dtype
    if out is None:
        o = s.output(vs, (n,), dt)
    else:
        o = s.operand(out, "out", op, 1, dt, output=True, upload=False)
        if o.shape != (n,):
            raise BlasError(f"{op}: out must have length {n}, got {o.shape[0]}")
        # out may be one of the inputs (in place): same-index reads precede writes per element
        for v in vs:
            if o.host is not None and v.host is o.host:
                o = Operand(v.buf, o.shape, "C", dt, list(v.events), host=o.host)
    built, n_pad = _vector_kernel(s, op, n, dt)
    ws = s.scratch
    bufs, waits = {}, list(o.events)
    for i, v in enumerate(vs):
        bufs[i + 1], w = _pad1d(s, v, n_pad, ws, f"v{i}")
        waits += w
    dest = o.buf if n_pad == n else ws.buffer("out", n_pad * dt.itemsize)
    ev, temps = built.launch(s.q, bufs, {0: dt.type(alpha)}, dest, {"N": n_pad}, waits, ws)
    if dest is not o.buf:
        ev = s.q.copy(o.buf, dest, n * dt.itemsize, [ev])
    events, finish = s.finish_output(o, [ev])
    return s.future(events, finish, keep=[*vs, o, ws, temps])


def _reduction(s: Session, op: str, vs: list[Operand],
               post: Optional[Any] = None) -> Future:
    n, dt = vs[0].shape[0], vs[0].dtype
    built, n_pad = _vector_kernel(s, op, n, dt)
    ws = s.scratch
    bufs, waits = {}, []
    for i, v in enumerate(vs):
        bufs[i], w = _pad1d(s, v, n_pad, ws, f"v{i}")
        waits += w
    # asum and the sum of squares of complex vectors are real
    res = np.empty(1, _REAL.get(dt, dt) if op in ("asum", "sumsq") else dt)
    dest = s.q.alloc(res.itemsize)  # its own: read back at result(), maybe after later calls
    ev, temps = built.launch(s.q, bufs, {}, dest, {"N": n_pad}, waits, ws)
    waits = s.q.download_later(res, dest, [ev])

    def value() -> Any:
        s.q.after_download(res, dest)
        return post(res[0]) if post is not None else res[0]

    return s.future(waits, value, keep=[*vs, ws, temps, res, dest])


def dot(s: Session, x: Any, y: Any) -> Future:
    """Σ xᵢ·yᵢ (a NumPy scalar of the vectors' dtype; BLAS's dotu for complex vectors)."""
    return _dot(s, "dot", x, y)


def dotc(s: Session, x: Any, y: Any) -> Future:
    """Σ conj(xᵢ)·yᵢ (NumPy's vdot; the same as dot for real vectors)."""
    return _dot(s, "dotc", x, y)


def _dot(s: Session, op: str, x: Any, y: Any) -> Future:
    xv = s.operand(x, "x", op, 1)
    yv = s.operand(y, "y", op, 1, xv.dtype)
    if xv.shape != yv.shape:
        raise BlasError(f"{op}: x has length {xv.shape[0]} but y has length {yv.shape[0]}")
    return _reduction(s, "dotc" if op == "dotc" and xv.dtype.kind == "c" else "dot", [xv, yv])


# the real type of a complex type's parts (asum and nrm2 of complex vectors are real)
_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def asum(s: Session, x: Any) -> Future:
    """Σ|xᵢ|; for complex x, BLAS's Σ(|re xᵢ| + |im xᵢ|) (scasum/dzasum), a real."""
    return _reduction(s, "asum", [s.operand(x, "x", "asum", 1)])


def nrm2(s: Session, x: Any) -> Future:
    """‖x‖₂ = √Σ|xᵢ|², without overflow or underflow: when the plain sum of squares leaves the
    floating-point range, x is scaled by a power of two first (from asum, which bounds
    max|xᵢ|) and the result scaled back. Real for complex x (scnrm2/dznrm2)."""
    xv = s.operand(x, "x", "nrm2", 1)
    dt = _REAL.get(xv.dtype, xv.dtype)
    info = np.finfo(dt)

    def finish(sumsq: Any) -> Any:
        if np.isfinite(sumsq) and (sumsq == 0 or sumsq >= info.tiny / info.eps):
            return dt.type(np.sqrt(sumsq))
        bound = asum(s, xv).result()
        if bound == 0:
            return dt.type(0)
        exp = (info.maxexp // 2 + 20) if not np.isfinite(bound) else int(np.ceil(np.log2(bound)))
        scale = dt.type(2.0) ** -exp
        scaled = scal(s, float(scale), xv).result()
        inner = _reduction(s, "sumsq", [s.operand(scaled, "x", "nrm2", 1)]).result()
        return dt.type(np.sqrt(inner) * dt.type(2.0) ** exp)

    return _reduction(s, "sumsq", [xv], post=finish)
