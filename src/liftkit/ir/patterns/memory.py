"""Address-space patterns: toGlobal, toLocal, toPrivate (seed 000 §3.2).

They mean the identity on the wrapped function; the code generator makes the wrapped function
write its output into the named OpenCL address space (Algorithm 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence

from liftkit.ir.nodes import FunDecl
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, param
from liftkit.types import Type

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value


@dataclass(frozen=True, repr=False)
class AddressSpaceWrapper(Pattern):
    f: FunDecl = param(Kind.FUN)
    high_level = False
    space: ClassVar[str] = ""

    @property
    def arity(self) -> int:  # type: ignore[override]
        return self.f.arity

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("f", Kind.FUN)]

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        return t.apply(self.f, list(args), enter=self)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return ev.call(self.f, list(args), env)


@dataclass(frozen=True, repr=False)
class ToGlobal(AddressSpaceWrapper):
    name = "toGlobal"
    space = "global"


@dataclass(frozen=True, repr=False)
class ToLocal(AddressSpaceWrapper):
    name = "toLocal"
    space = "local"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        from liftkit.ir.patterns.maps import MapWrg

        if not any(isinstance(p, MapWrg) for p in t.enclosing):
            raise PatternError("toLocal: local memory exists only inside a work-group (mapWrg)")
        return super().infer(t, args)


@dataclass(frozen=True, repr=False)
class ToPrivate(AddressSpaceWrapper):
    name = "toPrivate"
    space = "private"


MEMORY_PATTERNS = (ToGlobal, ToLocal, ToPrivate)
