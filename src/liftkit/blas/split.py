"""A GEMM whose N is one past a multiple of the tile width, split into an aligned interior and
an edge column (the `split` plan, chosen only where the device profile measured it fastest at
a call's very sizes: `gemm.measured_here`).

N = 1025 puts a 17th tile column on every tiling, one useful column of 64, and K = 999 keeps
16-byte copies out of the kernels (results/issue15/odd24: on the H100 SGEMM 1023×1025×999
takes 88 us per call, 1023×1024×1000 62 us). The split plan computes

    P  = X'·Y'   the interior: X (M×K) padded to K' columns (pad2d), Y's first N−1 columns
                 with rows padded to K' (window2d), on the kernel the profile chooses there
    e  = X'·y    the edge: Y's last column padded to K' (tailcols), a GEMV on X'
    C  = [P | e] (hcat)

all derived kernels; K' is K padded to 16 bytes and to the GEMV's and interior kernel's
multiples. α, β and a transposed result go through the GEMM's usual epilogue on C = [P | e]
(`GemmPlan.run`), so they are applied once. Real dtypes, kernel layout NN.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from liftkit.blas.codelets import Kind, Variant, pad_to, padded_sizes
from liftkit.blas.gemm import GemmPlan, Packed, mm_kernel
from liftkit.blas.kernels import BlasError, Built
from liftkit.blas.session import DTYPES, Operand, Session, Workspace

# the interior's column count is a multiple of this by default (tile widths up to 128 divide it)
SPLIT_W = 64


def row_gemv(dtype: str) -> Variant:
    """The edge GEMV of `split(gemv=1)`: a warp per row, 4 rows per work-group, 16-byte vectors
    (M ≈ 1000 rows make 256 work-groups). The profile's GEMV for a 1023×1024 A is chosen for
    4096² and ran 16-19 us there on the H100 (results/issue15/odd24b run 1)."""
    return Variant.of("row-groups", g=4, lanes=32, w=16 // np.dtype(dtype).itemsize)


@dataclass(frozen=True)
class Edge:
    """The split plan's kernels and sizes: the interior is M×n0×ka on `GemmPlan.built`."""

    w: int  # n0 is a multiple of w
    gemv_rows: bool  # the GEMV is `row_gemv` (variant gemv=1), else the profile's choice
    n0: int  # the interior's columns (N − 1)
    ka: int  # K padded (X's columns, Y's rows in the workspace)
    ma: int  # X's rows in the workspace (≥ M: the interior's and the GEMV's padded rows)
    mg: int  # the GEMV's rows (M padded to its multiple)
    pad_x: Optional[Built]  # pad2d M×K → ma×ka (None: X is read as it is)
    window: Built  # window2d: Y's first n0 columns, rows padded to ka
    tail: Built  # tailcols: Y's last column padded to ka
    gemv: Built  # GEMV N on X' (mg×ka)
    hcat: Built  # [P | e] → M×N


def splittable(kind: Kind, sizes: dict[str, int], w: int = SPLIT_W) -> bool:
    """Whether the split plan applies: a real NN GEMM whose N is one past a multiple of w."""
    return (kind.op == "mm" and kind.dtype in ("float32", "float64") and kind.layout == "NN"
            and sizes["N"] > w and sizes["N"] % w == 1)


def edge_for(session: Session, kind: Kind, sizes: dict[str, int], w: int = SPLIT_W,
             gemv_rows: bool = False) -> Optional[tuple[Built, Edge]]:
    """(interior kernel, edge kernels) for these sizes, None where the kernels' multiples do
    not fit one another (the interior would pad its columns, or K' off the GEMV's multiple)."""
    if not splittable(kind, sizes, w):
        return None
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    dt = kind.dtype
    item = np.dtype(dt).itemsize
    n0 = N - 1
    gk = Kind("gemv", dt, "N")
    gv = row_gemv(dt) if gemv_rows else None
    ka = pad_to(K, 16 // item)
    ka = pad_to(ka, session.kernel(gk, {"M": M, "N": ka}, gv).multiples.get("N", 1))
    interior = mm_kernel(session, kind, {"M": M, "N": n0, "K": ka})
    p = padded_sizes({"M": M, "N": n0, "K": ka}, interior.multiples)
    if p["N"] != n0:
        return None
    ka = p["K"]
    gemv = session.kernel(gk, {"M": M, "N": ka}, gv)
    gm = gemv.multiples
    if ka % gm.get("N", 1):
        return None
    mg = pad_to(M, gm.get("M", 1))
    ma = max(p["M"], mg)
    pad_x = (None if (ma, ka) == (M, K) else
             session.kernel(Kind("pad2d", dt), {"M": M, "N": K, "P": ma, "Q": ka}))
    window = session.kernel(Kind("window2d", dt), {"M": K, "N": N, "P": ka, "Q": n0})
    tail = session.kernel(Kind("tailcols", dt), {"M": K, "N": N, "P": ka, "R": 1})
    hcat = session.kernel(Kind("hcat", dt), {"M": M, "Q": n0, "R": 1, "P": mg})
    return interior, Edge(w, gemv_rows, n0, ka, ma, mg, pad_x, window, tail, gemv, hcat)


@dataclass(frozen=True)
class SplitPlan(GemmPlan):
    """A GEMM plan (`GemmPlan`: the same checks, operands, epilogue) whose product is the
    interior kernel (`built`) plus the edge column (`edge`); its packed second operand holds
    the interior window (`Packed.buf`) and the edge column (`Packed.edge`)."""

    edge: Optional[Edge] = None

    @property
    def variant(self) -> Variant:
        e = self._edge
        return Variant.of("split", w=e.w, **({"gemv": 1} if e.gemv_rows else {}))

    @property
    def _edge(self) -> Edge:
        assert self.edge is not None
        return self.edge

    @functools.cached_property
    def padded(self) -> dict[str, int]:
        return dict(self.sizes)  # C is written whole: no padded product

    @property
    def workspace_bytes(self) -> int:
        # the pieces' buffers, and the product for the epilogue
        return sum(self._bytes().values()) + self.sizes["M"] * self.sizes["N"] * self.dtype.itemsize

    def _at(self) -> dict[str, dict[str, int]]:
        """Each kernel's sizes."""
        e, s = self._edge, self.sizes
        M, N, K = s["M"], s["N"], s["K"]
        return {"pad": {"M": M, "N": K, "P": e.ma, "Q": e.ka},
                "window": {"M": K, "N": N, "P": e.ka, "Q": e.n0},
                "tail": {"M": K, "N": N, "P": e.ka, "R": 1},
                "mm": padded_sizes({"M": M, "N": e.n0, "K": e.ka}, self.built.multiples),
                "gemv": {"M": e.mg, "N": e.ka},
                "hcat": {"M": M, "Q": e.n0, "R": 1, "P": e.mg}}

    def _bytes(self) -> dict[str, int]:
        e, item, at = self._edge, self.dtype.itemsize, self._at()
        return {"split-X": e.ma * e.ka * item, "split-Y": e.ka * e.n0 * item,
                "split-y": e.ka * item, "split-P": at["mm"]["M"] * e.n0 * item,
                "split-e": e.mg * item}

    def pack(self, role: str, x: Any, workspace: Workspace) -> Packed:
        """The first operand padded to ka columns (pad2d, where needed); the second as the
        interior window (window2d) and the edge column (tailcols)."""
        if role not in ("A", "B"):
            raise BlasError(f"gemm plan: pack 'A' or 'B', not {role!r}")
        s, e, at, nb = self.session, self._edge, self._at(), self._bytes()
        o = x if isinstance(x, Operand) else s.operand(x, role, "gemm", 2, self.dtype)
        want_order = self.orders[0 if role == "A" else 1]
        if o.shape != self._user_shape(role) or o.order != want_order:
            raise BlasError(f"gemm plan: it was made for {role} of shape "
                            f"{self._user_shape(role)}, got {o.shape}")
        evs = list(o.events)
        if role == self.first:
            if e.pad_x is None:
                return Packed(role, o.buf, tuple(evs), o)
            dst = workspace.buffer("split-X", nb["split-X"])
            ev, temps = e.pad_x.launch(s.q, {0: o.buf}, {}, dst, at["pad"], evs)
            return Packed(role, dst, (ev,), o, tuple(temps))
        win = workspace.buffer("split-Y", nb["split-Y"])
        ev1, t1 = e.window.launch(s.q, {0: o.buf}, {}, win, at["window"], evs)
        col = workspace.buffer("split-y", nb["split-y"])
        ev2, t2 = e.tail.launch(s.q, {0: o.buf}, {}, col, at["tail"], [ev1])
        return Packed(role, win, (ev2,), o, tuple(t1 + t2), edge=col)

    def launch(self, first: Packed, second: Packed, dest: Any, waits: list[Any],
               workspace: Optional[Workspace] = None) -> tuple[Any, list[Any]]:
        """The M×N product into `dest`: the interior, the edge's GEMV, hcat."""
        s, e, at, nb = self.session, self._edge, self._at(), self._bytes()
        ws = workspace or s.scratch
        dt = self.dtype.type
        prod = ws.buffer("split-P", nb["split-P"])
        ev, temps = self.built.launch(s.q, {0: first.buf, 1: second.buf}, {}, prod, at["mm"],
                                      waits, ws)
        zeros, zw = s.zeros(e.mg * self.dtype.itemsize)
        col = ws.buffer("split-e", nb["split-e"])
        ev, more = e.gemv.launch(s.q, {0: first.buf, 1: second.edge, 2: zeros},
                                 {3: dt(1), 4: dt(0)}, col, at["gemv"], [ev, *zw], ws)
        temps += more
        ev, more = e.hcat.launch(s.q, {0: prod, 1: col}, {}, dest, at["hcat"], [ev])
        return ev, temps + more + [zeros]

    def call_plan(self, given: bool, alpha: Any, beta: Any) -> Any:
        """The call plan (`gemm._call_plan`'s form): pad, window, tail, interior, GEMV, hcat,
        and for α ≠ 1, β ≠ 0 or a transposed result the epilogue. Slots: A, B, C, α, β, the
        zero buffer, the GEMV's α = 1 and β = 0, then workspace buffers."""
        from liftkit.blas.calls import CallPlan, Output, PlanSteps

        s, e, at, nb = self.session, self._edge, self._at(), self._bytes()
        item, dt = self.dtype.itemsize, self.dtype.type
        M, N = self.sizes["M"], self.sizes["N"]
        ps = PlanSteps(s.q, 8)
        launches = ps.launch

        def temp(name: str) -> int:
            return ps.temp(name, nb.get(name, M * N * item))

        slot = {"A": 0, "B": 1}
        x, y = (slot[self.first], slot["B" if self.first == "A" else "A"])
        if e.pad_x is not None:
            dst = temp("split-X")
            launches(e.pad_x, at["pad"], {0: x}, {}, dst)
            x = dst
        win = temp("split-Y")
        launches(e.window, at["window"], {0: y}, {}, win)
        col = temp("split-y")
        launches(e.tail, at["tail"], {0: y}, {}, col)
        prod = temp("split-P")
        launches(self.built, at["mm"], {0: x, 1: win}, {}, prod)
        edge = temp("split-e")
        launches(e.gemv, at["gemv"], {0: x, 1: col, 2: 5}, {3: 6, 4: 7}, edge)
        if self._direct(alpha, beta):
            launches(e.hcat, at["hcat"], {0: prod, 1: edge}, {}, 2)
        else:  # C = α·[P | e] (or its transpose) + β·C
            whole = temp("product")
            launches(e.hcat, at["hcat"], {0: prod, 1: edge}, {}, whole)
            rows, cols = (N, M) if self.result_transposed else (M, N)
            kind = Kind("axpby2d", DTYPES[self.dtype], "T" if self.result_transposed else "N")
            ps.epilogue(s.kernel(kind, {"M": rows, "N": cols}), rows, cols, whole, beta == 0,
                        item)
        return (CallPlan(tuple(ps.steps), 3, (dt, dt), tuple(ps.temps), zeros=e.mg * item,
                         fixed=(dt(1), dt(0))),
                Output((self.m, self.n), self.dtype, self.orders[2], given))


def plan_split(session: Session, dtype: np.dtype, m: int, n: int, k: int, trans_a: bool,
               trans_b: bool, orders: tuple[str, str, str], layout: str, first: str,
               transposed: bool, sizes: dict[str, int], variant: Variant
               ) -> Optional[SplitPlan]:
    """The split plan `variant` (split(w), split(w, gemv=1)) of a GEMM (`gemm.plan_gemm`'s
    fields), None where it does not apply at these sizes."""
    kw = variant.kw
    got = edge_for(session, Kind("mm", DTYPES[dtype], layout), sizes, kw.get("w", SPLIT_W),
                   bool(kw.get("gemv")))
    if got is None:
        return None
    interior, edge = got
    return SplitPlan(session, dtype, m, n, k, trans_a, trans_b, orders, layout, first,
                     transposed, dict(sizes), interior, None, edge)


__all__ = ["Edge", "SPLIT_W", "row_gemv", "SplitPlan", "edge_for", "plan_split",
           "splittable"]
