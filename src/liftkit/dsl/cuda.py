"""The DSL names of the patterns only the CUDA backend compiles (`liftkit.ir.patterns.cuda`)."""

from __future__ import annotations

from typing import Any

from liftkit.dsl.core import FunLike, _with_init, fn
from liftkit.ir import patterns as P
from liftkit.ir.nodes import FunDecl


def reduceWarp(f: FunLike, init: Any = None) -> FunDecl:
    """reduceWarp(⊕, z): each run of 32 elements reduced by one warp's shuffles."""
    return _with_init(P.ReduceWarp(fn(f)), init)


__all__ = ["reduceWarp"]
