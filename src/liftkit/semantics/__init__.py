"""The reference semantics: a vectorised NumPy interpreter for every Lift program."""

from liftkit.semantics.interpreter import EvaluationError, Evaluator, bind_sizes, interpret

__all__ = ["EvaluationError", "Evaluator", "bind_sizes", "interpret"]
