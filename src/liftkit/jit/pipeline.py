"""The compilation pipeline of one specialisation: front end -> verifier -> passes -> LLVM IR ->
O3 -> object code (or the disk cache) -> loaded machine code."""

from __future__ import annotations

import functools

from typing import TYPE_CHECKING

from llvmlite import ir

from . import types as T
from . import vrir as V
from .cg_runtime import build_entry, build_free
from .codegen import ModuleContext, Options
from .engine import DiskCache, Target, load_object
from .frontend import lower_module
from .gpu_lower import has_sections, lower_sections
from .passes import PassReport, run_passes
from .passes.inline import inline_calls
from .passes.walk import nodes
from .passes.regions import Critical, critical
from .sexpr import dumps
from .verify import verify
from dataclasses import dataclass

if TYPE_CHECKING:
    from .dispatch import Compiled, JitFunction
    from .gpu_plan import GpuPlan


def collect_raises(m: V.Module) -> list:
    out: list = []

    def walk(x: object) -> None:
        if isinstance(x, V.Raise) and (x.kind, x.message) not in out:
            out.append((x.kind, x.message))
        if isinstance(x, tuple):
            for i in x:
                walk(i)
        elif hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                walk(getattr(x, f))
    walk(m.functions)
    return out


def build_ir(m: V.Module, options: Options, raises: list, target: Target,
             plan: "GpuPlan | None" = None) -> str:
    """LLVM IR text of a VRIR module (entry ``lk_entry``, arena release ``lk_free``)."""
    mod = ir.Module(name=m.name)
    mod.triple = target.triple
    mod.data_layout = target.data_layout
    ctx = ModuleContext(mod, m, options, raises=list(raises))
    if plan is None and has_sections(m):
        from .gpu_plan import plan_sections  # GPU code generation loads only with GPU sections
        plan = plan_sections(m, options.noalias, raises)
    ctx.gpu = plan
    build_entry(ctx)
    build_free(mod)
    return str(mod)


@dataclass
class Analysis:
    """What one signature's front end produced: the VRIR before the passes and the critical
    variables region detection found (the dispatcher's specialisation key)."""
    module: V.Module
    critical: Critical
    params: tuple[str, ...]
    versions: int = 0

    @functools.cached_property
    def positions(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The argument positions of the critical shapes and values (read at every call)."""
        pos = {p: k for k, p in enumerate(self.params)}
        return (tuple(pos[p] for p in self.critical.shapes),
                tuple(pos[p] for p in self.critical.values))


def analyse(jf: "JitFunction", types: tuple) -> Analysis:
    m = lower_module(jf, types)
    verify(m)
    crit = critical(inline_calls(m, PassReport())) if jf.passes.get("specialise", True) \
        else Critical((), ())
    return Analysis(m, crit, m.functions[0].params)


def compile_spec(jf: "JitFunction", an: Analysis, types: tuple, noalias: bool,
                 spec: dict | None) -> "Compiled":
    from .dispatch import _ENTRY, _FREE, Compiled
    target = jf.runtime.target
    m = an.module
    options = Options(noalias=noalias, threads=jf.parallel)
    raises = collect_raises(m)
    sections = has_sections(m)
    switches = tuple(sorted(jf.passes.items()))
    key = DiskCache.key(dumps(m), switches, repr(spec), options, target.cpu, target.features)
    cache = jf.runtime.cache
    obj = cache.get(key) if jf.cache else None
    hit = obj is not None
    report = PassReport()
    opt = None
    plan = None

    def optimise() -> V.Module:
        o = run_passes(m, jf.passes, spec, report)
        if sections:
            o = lower_sections(o)
        verify(o)
        return o
    if sections:  # the kernels are needed on a cache hit too (they are not in the object code)
        opt = optimise()
        raises += [r for r in collect_raises(opt) if r not in raises]
        from .gpu_plan import plan_sections  # GPU code generation loads only with GPU sections
        plan = plan_sections(opt, noalias, raises, jf.passes)

    def build() -> tuple[bytes, str]:
        nonlocal opt
        if opt is None:
            opt = optimise()
        llmod = target.optimise(build_ir(opt, options, raises, target, plan))
        return target.emit_object(llmod), str(llmod)
    text = ""
    if obj is None:
        obj, text = build()
        if jf.cache:
            cache.put(key, obj)
    try:
        loaded = load_object(target, obj, ("lk_entry", "lk_free"))
    except Exception:
        if not hit:
            raise
        obj, text = build()  # a corrupt cache entry: rebuild and replace it
        cache.put(key, obj)
        loaded, hit = load_object(target, obj, ("lk_entry", "lk_free")), False
    entry = _ENTRY(loaded.addresses["lk_entry"])
    free = _FREE(loaded.addresses["lk_free"])
    pool = jf.runtime.pool if any(isinstance(n, V.ParFor) for n in nodes(m.functions)) and \
        jf.parallel else 0
    blas = any(isinstance(n, V.LibCall) and n.fn == "dot" and isinstance(n.type, T.ArrayType)
               for n in nodes(m.functions))
    c = Compiled(opt or m, loaded, entry, free, types, m.functions[0].result, raises, key, pool,
                 blas, hit, text)
    if plan is not None:
        from .gpu_host import GpuHost
        c.gpu = GpuHost(plan, raises, jf.gpu_runtime, jf.runtime.library)
    c.info = {"passes": report, "spec": spec, "optimised": opt is not None}
    return c


def passed(jf: "JitFunction", c: "Compiled") -> V.Module:
    """The VRIR after the passes (re-run when the machine code came from the disk cache)."""
    if not c.info.get("optimised"):
        c.module = run_passes(c.module, jf.passes, c.info.get("spec"), c.info["passes"])
        c.info["optimised"] = True
    return c.module


def llvm_ir(jf: "JitFunction", c: "Compiled") -> str:
    target = jf.runtime.target
    opts = Options(noalias=False, threads=jf.parallel)
    plan = c.gpu.plan if c.gpu is not None else None
    return str(target.optimise(build_ir(passed(jf, c), opts, c.raises, target, plan)))


__all__ = ["compile_spec", "llvm_ir", "build_ir", "analyse"]
