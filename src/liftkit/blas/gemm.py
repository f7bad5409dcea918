"""GEMM: C = α·op(A)·op(B) + β·C for row- and column-major operands, as a plan (the low-level,
four-step API of seed 003 §8.3.3) and as one call.

Every case is reduced to a derived `mm` kernel on row-major buffers. A column-major matrix is
its transpose stored row by row, so layouts and transposition flags combine into one flag per
operand; a column-major C is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ. A conjugate transpose
(`trans_a="C"`, complex types) adds a conjugation flag, which travels with its operand through
these rewritings into the kernel's layout (`programs.COMPLEX_LAYOUTS`). Of the four
transposition pairs, NN, NT and TN have kernels of their own; TT is NN with the operands swapped, giving the transposed
product, which the epilogue (α·Pᵀ + β·C, a derived kernel too) reads transposed. Sizes that are
not multiples of the kernel's tiles run the tiled derivation's guarded form where it has one
(`mm_kernel`, with the profile's entries of blas/gemm_choice.py; rewrite.rules.mm_edges);
otherwise they are padded with zeros into caller-owned workspace: each call copies the operands
into the top-left of their padded buffers, whose margins were zeroed once
(`Workspace.padded`), and with α = 1, β = 0 the product's M×N block is copied into C (on CUDA
where a pitch is off 16 bytes, by the derived pad2d and crop2d kernels: `copy_kernels`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from liftkit.blas.calls import pad_region
from liftkit.blas.codelets import (
    CodeletError, Kind, Variant, edge_forms, edge_lossy, multiples, pad_to, padded_sizes,
)
from liftkit.blas.gemm_choice import REAL_OF, measured_here, profiled_edge, real_choice
from liftkit.blas.kernels import BlasError, Built
from liftkit.blas.session import DTYPES, Future, Operand, Session, Workspace


@dataclass(frozen=True)
class Packed:
    """An operand in the form the plan's kernel reads (padded/transposed copy in a workspace,
    or the caller's buffer itself when no copy is needed)."""

    role: str  # "A" or "B"
    buf: Any
    events: tuple[Any, ...]
    source: Operand
    keep: tuple[Any, ...] = ()  # temporaries of the packing kernels
    edge: Any = None  # the split plan's edge column of the second operand (`split.SplitPlan`)


@dataclass(frozen=True)
class PackStep:
    """One step placing an operand as a plan's kernel reads it, into the workspace buffer
    `name`: a derived kernel (`built`: transpose, cprep or cembed, launched at `at` on the
    operand so far, and with `unit` the (1, i) buffer), or (built None) a copy of the row-major
    have[0]×have[1] operand so far into the top-left of a need[0]×need[1] buffer whose margins
    the workspace keeps zero. The general path enqueues these steps, a call plan records them
    (`_call_plan`), `workspace_bytes` adds them up."""

    name: str
    nbytes: int
    built: Optional[Built] = None
    at: Optional[dict[str, int]] = None
    unit: bool = False
    have: tuple[int, int] = (0, 0)
    need: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Embedding:
    """A GEMM computed by another layout's or dtype's kernel after derived packing kernels.

    Codelet `real` (complex dtypes, the 4M form as one real GEMM): the first operand's M×K
    complex rows read as M×2K reals (after the transpose kernel for the letter T, `cprep` for
    R and C), the second embedded by `cembed` as 2K×N complex = 2K×2N reals [[Br, Bi],
    [-Bi, Br]] (interleaved); the product's M×2N reals are C's M×N complex numbers (`doubled`).
    Codelet `nn` (real dtypes, layouts NT and TN): the transposed operand copied by the derived
    `transpose` kernel, then the NN kernel. A transpose reads the stored operand padded to its
    multiples and writes the kernel's padded operand. `padded`: the sizes padded to the
    kernels' multiples (in complex units)."""

    real: Built
    b_prep: Optional[Built]  # cembed (doubled) or transpose (nn), None: read as it is
    a_prep: Optional[Built]
    unit: Any  # device buffer holding (1, i) (doubled only)
    padded: dict[str, int]
    doubled: bool = True


# a guarded form that lacks one of its variant's speed-ups (`codelets.edge_lossy`: DMMA tiles
# staged over whole lines, m16n8k8, float4 tiles copied element by element) runs only below
# this volume M·N·K: there the padded copies take a large share of a
# call (run 22b, H100: three copies about 25 us of SGEMM 1000³'s 89 us), above it the faster
# kernel on padded copies wins (DMMA 128×64×16 at 4096³: 0.88x cuBLAS with lines, 0.79x
# without, results/issue12/mma; the copies of 4097×4095² about 4 % of the call). H100
# (results/final22, edges/run.sh): at 1023×1025×999 the DMMA form without m16n8k8 ran ZGEMM's
# real product (4.2·10⁹) at 0.75x cuBLAS against 0.66x padded, at 4097×4095² 0.92x against 1.06x.
EDGE_LOSSY_VOLUME = 2 ** 32
# a guarded FFMA form that copies its tiles element by element or drops the split tail loses
# more: 0.35x against 0.67x padded for CGEMM 1023×1025×999's real product (4.2·10⁹), 0.56x
# against 0.52x for SGEMM at that size (1.0·10⁹), so it runs only below this volume
EDGE_COPY_VOLUME = 2 ** 31


def _loss_volume(chosen: Variant, edge: Variant) -> int:
    """The volume M·N·K from which the padded variant beats this lossy guarded form."""
    if edge.kw.get("elems") or (chosen.kw.get("split") and not edge.kw.get("split")):
        return EDGE_COPY_VOLUME
    return EDGE_LOSSY_VOLUME


def mm_kernel(session: Session, kind: Kind, sizes: dict[str, int],
              variant: Optional[Variant] = None) -> Built:
    """The mm kernel for these sizes: the chosen variant (the profile's best or `variant`), or,
    where its tiles do not divide the sizes, the profile's fastest guarded form measured for
    this class (`profiled_edge`), else the chosen variant's closest guarded form
    (`codelets.edge_forms`: the same tiles over padded views, the ragged edge's stores guarded)
    that needs no padding at all, so the call makes no padded copies; otherwise the chosen
    variant, padded."""
    chosen = variant or session.choose(kind, sizes)
    if padded_sizes(sizes, multiples(kind, chosen)) == sizes:
        return session.kernel(kind, sizes, chosen)
    edge = None if variant is not None else profiled_edge(session, kind, sizes)
    if edge is not None:
        return session.kernel(kind, sizes, edge)
    volume = math.prod(sizes.values())
    for edge in edge_forms(chosen):
        if edge_lossy(chosen, edge) and volume >= _loss_volume(chosen, edge):
            continue  # it lacks one of the variant's speed-ups, and the copies are cheap here
        try:
            need = multiples(kind, edge)
        except CodeletError:  # this kind has no guarded form of the variant
            continue
        if padded_sizes(sizes, need) == sizes:
            return session.kernel(kind, sizes, edge)
    return session.kernel(kind, sizes, chosen)


def _embedding(session: Session, dt: np.dtype, layout: str, sizes: dict[str, int],
               real_variant: Optional[Variant] = None) -> Embedding:
    name = DTYPES[dt]
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    if dt.kind != "c":  # codelet nn: transposes, then the NN kernel
        tr = Kind("transpose", name)
        a = session.kernel(tr, {"M": K, "N": M}) if layout[0] == "T" else None
        b = session.kernel(tr, {"M": N, "N": K}) if layout[1] == "T" else None
        # a transpose runs on the padded stored operand (K×M of A, N×K of B): the sizes are
        # padded to its multiples too, so that it writes the NN kernel's padded operand
        mult: dict[str, int] = {}
        for t, rows, cols in ((a, "K", "M"), (b, "N", "K")):
            if t is not None:
                for dim, m in ((rows, t.multiples.get("M", 1)), (cols, t.multiples.get("N", 1))):
                    mult[dim] = math.lcm(mult.get(dim, 1), m)
        nn = Kind("mm", name, "NN")  # its guarded form only where the transposes pad nothing
        real = (mm_kernel(session, nn, sizes) if padded_sizes(sizes, mult) == sizes
                else session.kernel(nn, sizes))
        for dim, m in real.multiples.items():
            mult[dim] = math.lcm(mult.get(dim, 1), m)
        return Embedding(real, b, a, None, padded_sizes(sizes, mult), doubled=False)
    def half(v: int) -> int:  # a complex count whose double is a multiple of v
        return math.lcm(v, 2) // 2

    # op(A) made row-major: Aᵀ by the transpose kernel (on the padded stored operand, so the
    # sizes are padded to its multiples too), conjugations (R, C) by the derived cprep
    a = (None if layout[0] == "N" else
         session.kernel(Kind("transpose", name), {"M": K, "N": M}) if layout[0] == "T" else
         session.kernel(Kind("cprep", name, layout[0]), {"M": M, "N": K}))
    tm, tk = ((a.multiples.get("N", 1), a.multiples.get("M", 1))
              if a is not None and a.kind.op == "transpose" else (1, 1))
    rk, want = Kind("mm", REAL_OF[name], "NN"), {"M": M, "N": 2 * N, "K": 2 * K}
    # the real kernel: `real_variant` (tuning), else the complex kind's own measured choice
    # (`real_choice`), else the real dtype's, its guarded form only where the transpose pads
    # nothing
    ownv = real_variant or real_choice(session, Kind("mm", name, layout), sizes, want)
    real = (mm_kernel(session, rk, want, ownv) if M % tm == 0 and K % tk == 0
            else session.kernel(rk, want, ownv))
    mult = real.multiples
    padded = {"M": pad_to(M, math.lcm(mult.get("M", 1), tm)),
              "N": pad_to(N, half(mult.get("N", 1))),
              "K": pad_to(K, math.lcm(half(mult.get("K", 1)), tk))}
    b = session.kernel(Kind("cembed", name, layout[1]), {"K": K, "N": N})
    return Embedding(real, b, a, session.unit(dt), padded)


@dataclass(frozen=True)
class GemmPlan:
    """What one GEMM shape needs: the kernel, how the operands map onto it, the workspace.

    A plan is reusable: pack A once, then run it against several packed B's."""

    session: Session
    dtype: np.dtype
    m: int
    n: int
    k: int
    trans_a: bool  # op(A) is a transpose (trans_a "T" or "C")
    trans_b: bool
    orders: tuple[str, str, str]  # memory orders of A, B, C
    layout: str  # the kernel's layout
    first: str  # which operand ("A" or "B") the kernel reads first
    result_transposed: bool  # the kernel computes (C's stored matrix)ᵀ
    sizes: dict[str, int]  # the kernel's M, N, K
    built: Built
    embed: Optional[Embedding] = None  # complex through a real GEMM (codelet `real`)

    @property
    def variant(self) -> Variant:
        if self.embed is not None:
            return Variant.of("real" if self.embed.doubled else "nn")
        return self.built.variant

    @functools.cached_property
    def padded(self) -> dict[str, int]:
        if self.embed is not None:
            return dict(self.embed.padded)
        return padded_sizes(self.sizes, self.built.multiples)

    @property
    def _own_copies(self) -> bool:
        """A complex128 kernel's own padded operands and product are copied by the derived
        pad2d/crop2d kernels on CUDA though their rows are aligned (16-byte elements): ZGEMM
        1000³ on zmma padded by the driver's 2-D copies took 218 us of device time on the H100
        where the product alone takes about 152 (results/issue15/oddc25 run 1); the `real`
        plan's copies stay `copy_kernels`' choice."""
        return (self.session.backend == "cuda" and self.embed is None
                and self.dtype.itemsize == 16)

    def _stored(self, role: str, sizes: dict[str, int]) -> tuple[int, int]:
        """The row-major shape the kernel reads for operand `role` at `sizes`."""
        M, N, K = sizes["M"], sizes["N"], sizes["K"]
        if self.embed is not None:
            return (M, K) if role == self.first else ((2 * K, N) if self.embed.doubled else (K, N))
        if role == self.first:
            return (M, K) if self.layout[0] in "NR" else (K, M)
        return (K, N) if self.layout[1] in "NR" else (N, K)

    @property
    def workspace_bytes(self) -> int:
        """Device memory a call of this plan takes from its workspace at most (any α, β): the
        operands as `pack` places them (`_pack_steps`), the product and its compacted copy
        (for the epilogue)."""
        item, p = self.dtype.itemsize, self.padded
        M, N = self.sizes["M"], self.sizes["N"]
        total = sum(st.nbytes for role in ("A", "B") for st in self._pack_steps(role))
        total += p["M"] * p["N"] * item  # the product (α ≠ 1, β ≠ 0, TT, padding)
        if (p["M"], p["N"]) != (M, N):
            total += M * N * item  # compacted for the epilogue
        return total

    def workspace(self) -> Workspace:
        return self.session.workspace()

    def _direct(self, alpha: float, beta: float) -> bool:
        """The kernel writes C itself (no padding of M, N; C = op(A)·op(B) as computed)."""
        p = self.padded
        return (self._plain(alpha, beta)
                and p["M"] == self.sizes["M"] and p["N"] == self.sizes["N"])

    def _plain(self, alpha: float, beta: float) -> bool:
        """C is the kernel's product itself, copied out of the padded product where M or N is
        padded (no epilogue)."""
        return not self.result_transposed and alpha == 1 and beta == 0

    # -- step 2: packing ----------------------------------------------------------------------
    def pack(self, role: str, x: Any, workspace: Workspace) -> Packed:
        """Place operand `role` ("A" or "B") as the kernel reads it (a no-op without padding)."""
        if role not in ("A", "B"):
            raise BlasError(f"gemm plan: pack 'A' or 'B', not {role!r}")
        s = self.session
        o = x if isinstance(x, Operand) else s.operand(x, role, "gemm", 2, self.dtype)
        want_order = self.orders[0 if role == "A" else 1]
        want = self._user_shape(role)
        if o.shape != want or o.order != want_order:
            raise BlasError(f"gemm plan: it was made for {role} of shape {want} "
                            f"({_order_name(want_order)}), got {o.shape} ({_order_name(o.order)})")
        item, E = self.dtype.itemsize, self.embed
        buf, evs, temps = o.buf, list(o.events), []
        for st in self._pack_steps(role):
            if st.built is None:
                buf, ev = _pad_into(s, workspace, st.name, buf, st.have, st.need, item, evs)
            else:
                dst = workspace.buffer(st.name, st.nbytes)
                inputs = {0: buf, 1: E.unit} if st.unit else {0: buf}  # type: ignore[union-attr]
                ev, more = st.built.launch(s.q, inputs, {}, dst, st.at or {}, evs)
                buf, temps = dst, temps + more
            evs = [ev]
        return Packed(role, buf, tuple(evs), o, tuple(temps))

    def _pack_steps(self, role: str) -> list[PackStep]:
        """How operand `role` becomes what the kernel reads (nothing where it reads it as
        stored): padded (`pack-*`); for the `nn` and `real` plans the transposed operand padded
        as stored (`pad-*`), then transposed (`prep-*`); `real`'s first operand conjugated by
        cprep (`prep-*`) and its second embedded by cembed (`embed-*`), then padded (`pad-*`)."""
        E, p, item = self.embed, self.padded, self.dtype.itemsize
        M, N, K = self.sizes["M"], self.sizes["N"], self.sizes["K"]

        def pad(name: str, have: tuple[int, int], need: tuple[int, int]) -> list[PackStep]:
            if have == need:
                return []
            nbytes = need[0] * need[1] * item
            found = self._copy_kernel("pad2d", have, need)
            if found is not None:
                return [PackStep(f"{name}/k", nbytes, *found)]
            return [PackStep(name, nbytes, have=have, need=need)]

        if E is None:
            return pad(f"pack-{role}", self._stored(role, self.sizes), self._stored(role, p))
        first = role == self.first
        prep = E.a_prep if first else None if E.doubled else E.b_prep
        need = (p["M"], p["K"]) if first else (p["K"], p["N"])
        if prep is not None and prep.kind.op == "transpose":  # on the padded stored operand
            stored = (K, M) if first else (N, K)
            return pad(f"pad-{role}", stored, need[::-1]) + [PackStep(
                f"prep-{role}", need[0] * need[1] * item, prep, {"M": need[1], "N": need[0]})]
        steps = []
        if first:
            if prep is not None:  # op(first) made row-major and plain: M×K
                rows, cols = self._user_shape(role)
                if self.orders[0 if role == "A" else 1] == "F":
                    rows, cols = cols, rows
                steps.append(PackStep(f"prep-{role}", M * K * item, prep, {"M": rows, "N": cols}))
            have = (M, K)
        elif E.doubled:  # embedded by cembed: 2K×N complex
            steps.append(PackStep(f"embed-{role}", 2 * K * N * item, E.b_prep, {"K": K, "N": N},
                                  unit=True))
            have, need = (2 * K, N), (2 * p["K"], p["N"])
        else:
            have = (K, N)
        return steps + pad(f"pad-{role}", have, need)

    def launch(self, first: Packed, second: Packed, dest: Any, waits: list[Any],
               workspace: Optional[Workspace] = None) -> tuple[Any, list[Any]]:
        """Enqueue the product of the packed operands (kernel order) into `dest` (padded
        M×N); the kernel's temporaries (a split tail's flags and partial sums) from `workspace`
        (the call plan's too), else per call; returns (event, temporaries)."""
        p = self.padded
        if self.embed is not None:
            d = 2 if self.embed.doubled else 1
            return self.embed.real.launch(self.session.q, {0: first.buf, 1: second.buf}, {}, dest,
                                          {"M": p["M"], "N": d * p["N"], "K": d * p["K"]}, waits,
                                          workspace)
        return self.built.launch(self.session.q, {0: first.buf, 1: second.buf}, {}, dest, p,
                                 waits, workspace)

    def crop_kernel(self) -> Optional[Built]:
        """The derived crop2d kernel that copies the padded product's M×N block out, where the
        2-D copy would be slow (`copy_kernels`); None: the 2-D copy."""
        p, M, N = self.padded, self.sizes["M"], self.sizes["N"]
        if (p["M"], p["N"]) == (M, N):
            return None
        found = self._copy_kernel("crop2d", (M, N), (p["M"], p["N"]))
        return None if found is None else found[0]

    @property
    def _crop_at(self) -> dict[str, int]:
        p = self.padded
        return _copy_sizes(DTYPES[self.dtype], (self.sizes["M"], self.sizes["N"]),
                           (p["M"], p["N"]))

    def _copy_kernel(self, op: str, small: tuple[int, int], big: tuple[int, int]
                     ) -> Optional[tuple[Built, dict[str, int]]]:
        """(kernel, sizes) of the derived 2-D copy `op` (pad2d, crop2d) between the small×
        and big× row-major matrices where it beats the driver's 2-D copy (`copy_kernels`, and a
        complex128 kernel's own operands, `_own_copies`); None: the driver's copy."""
        if not (self._own_copies or copy_kernels(self.session, small, big, self.dtype.itemsize)):
            return None
        name = DTYPES[self.dtype]
        at = _copy_sizes(name, small, big)
        return self.session.kernel(Kind(op, REAL_OF.get(name, name)), at), at

    def crop_product(self, dest: Any, prod: Any, ev: Any, temps: list[Any]) -> Any:
        """Enqueue the padded product's M×N block into `dest` after `ev`; its event."""
        s, p, item = self.session, self.padded, self.dtype.itemsize
        M, N = self.sizes["M"], self.sizes["N"]
        crop = self.crop_kernel()
        if crop is None:
            return s.q.copy2d(dest, prod, M, N * item, p["N"] * item, N * item, [ev])
        ev, more = crop.launch(s.q, {0: prod}, {}, dest, self._crop_at, [ev])
        temps += more
        return ev

    def _user_shape(self, role: str) -> tuple[int, int]:
        m, n, k = self.m, self.n, self.k
        if role == "A":
            return (k, m) if self.trans_a else (m, k)
        return (n, k) if self.trans_b else (k, n)

    # -- step 3: computing --------------------------------------------------------------------
    def run(self, a: Packed, b: Packed, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
            workspace: Optional[Workspace] = None) -> Future:
        """Enqueue C = α·op(A)·op(B) + β·C on packed operands; returns a Future."""
        s, dt = self.session, self.dtype
        ws = workspace or s.scratch
        if C is None:
            if self.orders[2] != "C":
                raise BlasError("gemm plan: a plan for a column-major C needs C")
            out = s.output([a.source, b.source], (self.m, self.n), dt)
            beta = 0.0
        else:
            out = s.operand(C, "C", "gemm", 2, dt, output=True, upload=beta != 0)
            if out.shape != (self.m, self.n) or out.order != self.orders[2]:
                raise BlasError(f"gemm: C has shape {out.shape} ({_order_name(out.order)}), but "
                                f"op(A)·op(B) is {self.m}×{self.n} "
                                f"({_order_name(self.orders[2])} planned)")
        first, second = (a, b) if self.first == "A" else (b, a)
        waits = list(first.events) + list(second.events) + list(out.events)
        p, item = self.padded, dt.itemsize
        M, N = self.sizes["M"], self.sizes["N"]
        if self._direct(alpha, beta):
            ev, temps = self.launch(first, second, out.buf, waits, ws)
            events = [ev]
        elif self._plain(alpha, beta):  # padded: the product's top-left M×N block is C
            prod = ws.buffer("product", p["M"] * p["N"] * item)
            ev, temps = self.launch(first, second, prod, waits, ws)
            events = [self.crop_product(out.buf, prod, ev, temps)]
        else:
            prod = ws.buffer("product", p["M"] * p["N"] * item)
            ev, temps = self.launch(first, second, prod, waits, ws)
            if (p["M"], p["N"]) != (M, N):
                compact = ws.buffer("product-compact", M * N * item)
                ev = self.crop_product(compact, prod, ev, temps)
                prod = compact
            rows, cols = (N, M) if self.result_transposed else (M, N)
            if beta == 0:
                ev = s.fill_zero(out.buf, rows * cols * item, [ev])
            kind = Kind("axpby2d", DTYPES[dt], "T" if self.result_transposed else "N")
            epi = s.kernel(kind, {"M": rows, "N": cols})
            ev, temps2 = epi.launch(s.q, {0: prod, 1: out.buf},
                                    {2: dt.type(alpha), 3: dt.type(beta)}, out.buf,
                                    {"M": rows, "N": cols}, [ev])
            temps += temps2
            events = [ev]
        events, finish = s.finish_output(out, events)
        return s.future(events, finish, keep=[a, b, out, ws, temps])


def copy_kernels(s: Session, have: tuple[int, int], need: tuple[int, int], item: int) -> bool:
    """Whether a padded copy between a have[0]×have[1] and a need[0]×need[1] row-major matrix
    (either way) runs as a derived kernel (pad2d, crop2d) instead of the driver's 2-D copy: on
    CUDA where a pitch is not a multiple of 16 bytes (cuMemcpy2D copies such rows slowly:
    about 50 us for SGEMM 1023×1025×999's three copies on the H100, results/issue15/odd23)."""
    return s.backend == "cuda" and bool((have[1] * item) % 16 or (need[1] * item) % 16)


def _copy_sizes(dtype: str, small: tuple[int, int], big: tuple[int, int]) -> dict[str, int]:
    """The sizes of a 2-D copy (pad2d, crop2d) between an M×N and a P×Q matrix; a complex one
    run as the copy of the real matrix of twice its columns (the same bytes; its kernel is the
    real dtype's): rows of floats, which the vector form (`codelets.copy_form`) copies 16 bytes
    at a time."""
    d = 2 if dtype in REAL_OF else 1
    return {"M": small[0], "N": d * small[1], "P": big[0], "Q": d * big[1]}


def _pad_into(s: Session, ws: Workspace, name: str, src: Any, have: tuple[int, int],
              need: tuple[int, int], item: int, waits: Sequence[Any]) -> tuple[Any, Any]:
    """(buffer, event): the row-major have[0]×have[1] matrix at `src` copied into the top-left
    of the workspace's need[0]×need[1] buffer `name`, whose margins are zero (cleared when the
    buffer is made or the shape changes, not on every call: `Workspace.padded`)."""
    buf, cleared = ws.padded(name, need[0] * need[1] * item, pad_region(have, need, item))
    ev = s.q.copy2d(buf, src, have[0], have[1] * item, have[1] * item, need[1] * item,
                    [*waits, *cleared])
    return buf, ev


def _order_name(order: str) -> str:
    return "row-major" if order == "C" else "column-major"


def plan_gemm(session: Session, a_shape: tuple[int, int], b_shape: tuple[int, int],
              dtype: Any, *, trans_a: Trans = False, trans_b: Trans = False,
              order_a: str = "C", order_b: str = "C", order_c: str = "C",
              variant: Optional[Variant] = None, real: Optional[Variant] = None) -> GemmPlan:
    """Step 1 of the low-level API: check the shapes, choose the kernel (the profile's best for
    this size class, or `variant`), and say how much workspace it needs. `real`: the real
    kernel of a complex `real` plan (tuning measures candidates so)."""
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise BlasError(f"gemm: dtype {dt} is not supported (float32, float64, complex64 and "
                        f"complex128 are)")
    trans_a, ca = op_flag("gemm", "trans_a", trans_a, dt)
    trans_b, cb = op_flag("gemm", "trans_b", trans_b, dt)
    for o, name in ((order_a, "A"), (order_b, "B"), (order_c, "C")):
        if o not in ("C", "F"):
            raise BlasError(f"gemm: the order of {name} must be 'C' (row-major) or 'F' "
                            f"(column-major), got {o!r}")
    m, ka = (a_shape[1], a_shape[0]) if trans_a else tuple(a_shape)
    kb, n = (b_shape[1], b_shape[0]) if trans_b else tuple(b_shape)
    if ka != kb:
        raise BlasError(f"gemm: op(A) is {m}×{ka} and op(B) is {kb}×{n}: the inner dimensions "
                        f"{ka} and {kb} differ")
    ta = trans_a != (order_a == "F")  # op(A) is the transpose of A's stored row-major matrix
    tb = trans_b != (order_b == "F")
    if order_c == "F":  # compute Cᵀ = op(B)ᵀ·op(A)ᵀ into C's row-major storage
        fst, t1, c1, snd, t2, c2, rows, cols = "B", not tb, cb, "A", not ta, ca, n, m
    else:
        fst, t1, c1, snd, t2, c2, rows, cols = "A", ta, ca, "B", tb, cb, m, n
    if t1 and t2:  # TT: (S1ᵀ·S2ᵀ) = (S2·S1)ᵀ, NN with the operands swapped
        layout = _LETTER[False, c2] + _LETTER[False, c1]
        first, transposed, sizes = snd, True, {"M": cols, "N": rows, "K": ka}
    else:
        layout = _LETTER[t1, c1] + _LETTER[t2, c2]
        first, transposed, sizes = fst, False, {"M": rows, "N": cols, "K": ka}
    kind = Kind("mm", DTYPES[dt], layout)
    from liftkit.blas.split import plan_split

    fields = (session, dt, m, n, ka, bool(trans_a), bool(trans_b), (order_a, order_b, order_c),
              layout, first, transposed, sizes)
    if variant is not None and variant.codelet == "split" and dt.kind != "c":  # forced
        split = plan_split(*fields, variant)
        if split is None:
            raise BlasError(f"gemm: the split plan needs a real NN product whose N − 1 is a "
                            f"multiple of {variant.kw.get('w', 64)} and of its interior "
                            f"kernel's tiles, got {layout} {sizes['M']}×{sizes['N']}×{ka}")
        return split
    here = None  # the fastest entry measured at these very sizes, where one beat the class's
    for e in [] if variant is not None else measured_here(session, kind, sizes):
        if e.via != "split":
            here = e
            break
        split = plan_split(*fields, e.variant)  # (None: its kernels' multiples do not fit)
        if split is not None:
            return split
    hv = None if here is None or here.via == "real" else here.variant
    if here is not None and here.via == "real":  # the `real` plan on the real kernel measured
        chosen, real = Variant.of("real"), here.variant
    else:
        chosen = variant or hv or session.choose(kind, sizes)
    embed = None
    if (chosen.codelet == "real" and dt.kind == "c") or (chosen.codelet == "nn" and
                                                         dt.kind != "c" and layout != "NN"):
        embed = _embedding(session, dt, layout, sizes, real if dt.kind == "c" else None)
        built = embed.real
    else:
        built = mm_kernel(session, kind, sizes, variant or hv)  # (None: its own choice)
    return GemmPlan(session, dt, m, n, ka, bool(trans_a), bool(trans_b),
                    (order_a, order_b, order_c), layout, first, transposed, sizes, built, embed)


def gemm(session: Session, A: Any, B: Any, C: Any = None, *, alpha: Any = 1.0,
         beta: Any = 0.0, trans_a: Trans = False, trans_b: Trans = False) -> Future:
    """C = α·op(A)·op(B) + β·C (op(X) = X for False/"N", Xᵀ for True/"T", Xᴴ for "C"); C is
    updated in place when given, else a new array (NumPy, or pyopencl when an input is one).
    Returns a Future."""
    calls = session.calls
    key = None
    if (calls is not None and type(alpha) in _SCALARS and type(beta) in _SCALARS
            and type(trans_a) in _FLAGS and type(trans_b) in _FLAGS):
        ops = calls.operands
        ka, kb = ops.key(A), ops.key(B)
        kc = ops.key(C) if C is not None else None
        if ka is not None and kb is not None and (C is None or kc is not None):
            if C is None:
                beta = 0.0  # (as the general path reads it)
            key = ("gemm", ka, kb, kc, trans_a, trans_b, type(alpha), type(beta),
                   alpha == 1 and beta == 0, beta == 0)

    if key is None:
        return _gemm(session, A, B, C, alpha, beta, trans_a, trans_b)[0]

    def general() -> tuple[Future, Any]:
        future, plan = _gemm(session, A, B, C, alpha, beta, trans_a, trans_b)
        return future, _call_plan(plan, C is not None, (A, B, C), alpha, beta)

    return calls.call(key, (A, B), C, (alpha, beta), general, upload_output=beta != 0)


_SCALARS = (int, float, complex, np.float32, np.float64, np.complex64, np.complex128)
_FLAGS = (bool, str, np.bool_)


def _call_plan(plan: GemmPlan, given: bool, arrays: tuple[Any, ...], alpha: Any, beta: Any
               ) -> Any:
    """The call plan of a GEMM kind: the steps the general path enqueues for it — operands
    prepared (the `nn` plan's transposes, `real`'s cprep/cembed) and padded into the workspace
    (copies only: the margins stay zero there), the kernel, for a padded C the product's block
    copied out, and for α ≠ 1, β ≠ 0 or TT the α·P + β·C epilogue; None for strided NumPy
    operands (the general path copies them).
    Slots: A, B, C, α, β, the (1, i) buffer (`real`), then the workspace buffers under the
    general path's names."""
    from liftkit.blas.calls import CallPlan, Copy, Output, PlanSteps, pad_copy

    E = plan.embed
    p, sizes = plan.padded, plan.sizes
    if any(type(x) is np.ndarray and not (x.flags.c_contiguous or x.flags.f_contiguous)
           for x in arrays if x is not None):
        return None
    if hasattr(plan, "call_plan"):  # the split plan (`split.SplitPlan`)
        return plan.call_plan(given, alpha, beta)
    s, item = plan.session, plan.dtype.itemsize
    fixed = (s.calls.address(E.unit),) if E is not None and E.doubled else ()  # the (1, i) buffer
    base = 5 + len(fixed)
    slot = {"A": 0, "B": 1}
    ps = PlanSteps(s.q, base)
    steps, temp, launches = ps.steps, ps.temp, ps.launch

    M, N = sizes["M"], sizes["N"]
    for role in ("A", "B"):  # as `GemmPlan.pack` places them
        for st in plan._pack_steps(role):
            if st.built is None:
                dest = temp(st.name, st.nbytes, pad_region(st.have, st.need, item))
                steps.append(pad_copy(dest, slot[role], st.have, st.need, item))
            else:
                dest = temp(st.name, st.nbytes)
                launches(st.built, st.at or {}, {0: slot[role], 1: 5} if st.unit else
                         {0: slot[role]}, {}, dest)
            slot[role] = dest
    d = 2 if E is not None and E.doubled else 1
    at = {"M": p["M"], "N": d * p["N"], "K": d * p["K"]}
    first, second = (slot["A"], slot["B"]) if plan.first == "A" else (slot["B"], slot["A"])
    crop = plan.crop_kernel()

    def crop_into(dest: int, prod: int) -> None:  # the padded product's M×N block
        if crop is None:
            steps.append(Copy(dest, prod, M, N * item, p["N"] * item, N * item))
        else:
            launches(crop, plan._crop_at, {0: prod}, {}, dest)

    if plan._direct(alpha, beta):
        launches(plan.built, at, {0: first, 1: second}, {}, 2)
    elif plan._plain(alpha, beta):  # padded: C is the product's top-left M×N block
        prod = temp("product", p["M"] * p["N"] * item)
        launches(plan.built, at, {0: first, 1: second}, {}, prod)
        crop_into(2, prod)
    else:  # the product into the workspace, then C = α·P (or Pᵀ) + β·C
        prod = temp("product", p["M"] * p["N"] * item)
        launches(plan.built, at, {0: first, 1: second}, {}, prod)
        if (p["M"], p["N"]) != (M, N):
            compact = temp("product-compact", M * N * item)
            crop_into(compact, prod)
            prod = compact
        rows, cols = (N, M) if plan.result_transposed else (M, N)
        kind = Kind("axpby2d", DTYPES[plan.dtype], "T" if plan.result_transposed else "N")
        ps.epilogue(s.kernel(kind, {"M": rows, "N": cols}), rows, cols, prod, beta == 0, item)
    dt = plan.dtype.type
    return (CallPlan(tuple(steps), 3, (dt, dt), tuple(ps.temps), fixed=fixed),
            Output((plan.m, plan.n), plan.dtype, plan.orders[2], given))


def _gemm(session: Session, A: Any, B: Any, C: Any, alpha: Any, beta: Any, trans_a: Trans,
          trans_b: Trans) -> tuple[Future, GemmPlan]:
    """The general path: every check, the plan of this shape (remembered), packing, run."""
    a = session.operand(A, "A", "gemm", 2)
    b = session.operand(B, "B", "gemm", 2, a.dtype)
    order_c = "C"
    if C is not None:
        c_order = getattr(C, "flags", None)
        order_c = "F" if c_order is not None and c_order.f_contiguous and not c_order.c_contiguous \
            else "C"
    _check_scalar("gemm", "alpha", alpha, a.dtype)
    _check_scalar("gemm", "beta", beta, a.dtype)
    key = ("gemm-plan", a.shape, b.shape, a.dtype, trans_a, trans_b, a.order, b.order, order_c)
    plan = session.remembered(key)  # the same call shape again: the same plan
    if plan is None:
        plan = plan_gemm(session, a.shape, b.shape, a.dtype, trans_a=trans_a, trans_b=trans_b,
                         order_a=a.order, order_b=b.order, order_c=order_c)
        session.remember(key, plan)
    ws = session.scratch
    return plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), C, alpha=alpha, beta=beta,
                    workspace=ws), plan


def _check_scalar(op: str, name: str, v: Any, dtype: Optional[np.dtype] = None) -> None:
    """α, β: real numbers; complex ones too for complex operands."""
    numbers: tuple[type, ...] = (int, float, np.integer, np.floating)
    if dtype is not None and np.dtype(dtype).kind == "c":
        numbers += (complex, np.complexfloating)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers):
        what = "a number" if dtype is not None and np.dtype(dtype).kind == "c" else "a real number"
        raise BlasError(f"{op}: {name} must be {what}, got {v!r}")


Trans = Union[bool, str]  # False/"N", True/"T", "C" (conjugate transpose)
# a kernel operand's layout letter from (read transposed, conjugated)
_LETTER = {(False, False): "N", (True, False): "T", (True, True): "C", (False, True): "R"}


def op_flag(op: str, name: str, v: Any, dtype: np.dtype) -> tuple[bool, bool]:
    """(transposed, conjugated) from a BLAS op flag: False/"N", True/"T" or "C" (Xᴴ; for real
    types the same as "T")."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v), False
    if isinstance(v, str) and v.upper() in ("N", "T", "C"):
        u = v.upper()
        return u != "N", u == "C" and np.dtype(dtype).kind == "c"
    raise BlasError(f"{op}: {name} must be False/'N', True/'T' or 'C' (conjugate transpose), "
                    f"got {v!r}")
