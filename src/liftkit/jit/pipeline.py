"""The compilation pipeline of one specialisation: front end -> verifier -> passes -> LLVM IR ->
O3 -> object code (or the disk cache) -> loaded machine code."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from llvmlite import ir

from . import vrir as V
from .cg_runtime import build_entry, build_free
from .codegen import ModuleContext, Options
from .engine import DiskCache, Target, load_object
from .frontend import lower_module
from .sexpr import dumps
from .verify import verify

if TYPE_CHECKING:
    from .dispatch import Compiled, JitFunction


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


def build_ir(m: V.Module, options: Options, raises: list, target: Target) -> str:
    """LLVM IR text of a VRIR module (entry ``lk_entry``, arena release ``lk_free``)."""
    mod = ir.Module(name=m.name)
    mod.triple = target.triple
    mod.data_layout = target.data_layout
    ctx = ModuleContext(mod, m, options, raises=list(raises))
    build_entry(ctx)
    build_free(mod)
    return str(mod)


def front(jf: "JitFunction", types: tuple, shapes: tuple) -> V.Module:
    from .passes import run_passes
    m = lower_module(jf, types)
    verify(m)
    m = run_passes(m, jf.passes, shapes)
    verify(m)
    return m


def compile_spec(jf: "JitFunction", types: tuple, noalias: bool, shapes: tuple) -> "Compiled":
    from .dispatch import _ENTRY, _FREE, Compiled
    target = jf.runtime.target
    m = front(jf, types, shapes)
    options = Options(noalias=noalias, threads=jf.parallel)
    raises = collect_raises(m)
    key = DiskCache.key(dumps(m), options, target.cpu, target.features)
    cache = jf.runtime.cache
    obj = cache.get(key) if jf.cache else None
    hit = obj is not None
    text = ""
    if obj is None:
        text_in = build_ir(m, options, raises, target)
        llmod = target.optimise(text_in)
        text = str(llmod)
        obj = target.emit_object(llmod)
        if jf.cache:
            cache.put(key, obj)
    try:
        loaded = load_object(target, obj, ("lk_entry", "lk_free"))
    except Exception:
        if not hit:
            raise
        llmod = target.optimise(build_ir(m, options, raises, target))
        text = str(llmod)
        obj = target.emit_object(llmod)
        cache.put(key, obj)
        loaded, hit = load_object(target, obj, ("lk_entry", "lk_free")), False
    entry = _ENTRY(loaded.addresses["lk_entry"])
    free = _FREE(loaded.addresses["lk_free"])
    return Compiled(m, loaded, entry, free, types, m.functions[0].result, raises, key, hit, text)


def llvm_ir(jf: "JitFunction", c: "Compiled") -> str:
    target = jf.runtime.target
    opts = Options(noalias=False, threads=jf.parallel)
    return str(target.optimise(build_ir(c.module, opts, c.raises, target)))


__all__ = ["compile_spec", "llvm_ir", "build_ir", "front", "ctypes"]
