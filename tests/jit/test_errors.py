"""Constructs outside the @jit subset: one error naming the construct and the source line."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.jit import JitError

from .helpers import compile_source

A = np.zeros(4)

# (source body of f(a, x) with the bad construct on file line 7, expected message part)
CASES = [
    ("y = [i for i in range(3)]", "list comprehensions are not supported"),
    ("y = {i for i in range(3)}", "set comprehensions are not supported"),
    ("y = {i: i for i in range(3)}", "dict comprehensions are not supported"),
    ("y = (i for i in range(3))", "generator expressions are not supported"),
    ("y = lambda t: t", "lambda functions are not supported"),
    ("y = {1: 2}", "dict literals are not supported"),
    ("y = {1, 2}", "set literals are not supported"),
    ("y = [1, 2]", "list literals are not supported"),
    ("y = f'{x}'", "f-strings are not supported"),
    ("y = 'text'", "strings are not supported"),
    ("y = None", "None is not supported"),
    ("try:\n        pass\n    except Exception:\n        pass", "try statements are not supported"),
    ("with open('x') as fh:\n        pass", "with statements are not supported"),
    ("class K:\n        pass", "class definitions are not supported"),
    ("def g():\n        pass", "nested function definitions are not supported"),
    ("global A", "global declarations are not supported"),
    ("import os", "import statements are not supported"),
    ("del x", "del statements are not supported"),
    ("for i in range(3):\n        pass\n    else:\n        pass", "for/else is not supported"),
    ("while x < 0:\n        pass\n    else:\n        pass", "while/else is not supported"),
    ("for v in a:\n        pass", "for loops over arrays are not supported"),
    ("y = x if (z := 1) else 0", "assignment expressions (:=) are not supported"),
    ("y = x is None", "comparison 'is' is not supported"),
    ("y = x in (1, 2)", "comparison 'in' is not supported"),
    ("y = print(x)", "calling 'print' is not supported"),
    ("y = a[[0, 1]]", "list literals are not supported"),
    ("y = a[a > 0]", "fancy indexing"),
    ("a.attr = 1", "assigning to attributes is not supported"),
    ("y = a.T", "array attribute '.T' is not supported"),
    ("y = np.linalg.norm(a)", "attribute 'norm' of 'numpy.linalg' is not supported"),
    ("y = np.fft(a)", "np.fft() is not supported"),
    ("y = undefined_name + 1", "name 'undefined_name' is not defined"),
    ("y = x\n    y = a", "variable 'y' holds a float64 and is assigned a array"),
    ("y = a[0, 0]", "too many indices"),
    ("y = x.real", "attribute '.real' of a float64"),
    ("y = range(3)", "range() can only be used as the iterable of a for loop"),
    ("y = np.zeros(3)[0:2:0]", "slice step cannot be zero"),
    ("for i in prange(3):\n        break", "break is not allowed in a parallel loop"),
    ("for i in prange(3):\n        t = np.zeros(3)", "arrays cannot be allocated inside a parallel loop"),
    ("for i in prange(3):\n        z += i", "'z' is updated across iterations of the parallel loop"),
    ("y = -True", None),  # supported: sanity check that the harness compiles valid code
    ("y = np.sum(a, axis=3)", "axis 3 is out of bounds"),
    ("y = a @ x", "np.dot()/@ needs 1-d or 2-d arrays"),
    ("y = 'a' * 2", "strings are not supported"),
    ("async def g():\n        pass", "nested function definitions are not supported"),
    ("y = [*a]", "list literals are not supported"),
    ("y = x ** a + 'q'", "strings are not supported"),
]


@pytest.mark.parametrize("body,message", CASES, ids=[c[0].split("\n")[0] for c in CASES])
def test_unsupported_construct(body, message):
    src = f"""
def f(a, x):
    z = 0
    {body}
    return 1
"""
    f = compile_source(src)
    if message is None:
        assert f(A, 1.0) == 1
        return
    with pytest.raises((JitError, ValueError, IndexError)) as e:
        f(A, 1.0)
    text = str(e.value)
    assert text.startswith(("line 7: ", "line 8: ")), text
    assert message in text, text
    assert "\n" not in text


def test_error_is_one_line_without_compiler_chain():
    f = compile_source("""
def f(a):
    return [v for v in a]
""")
    with pytest.raises(JitError) as e:
        f(A)
    assert e.value.__cause__ is None and e.value.__context__ is None
    assert str(e.value) == "line 6: list comprehensions are not supported inside @jit"


def test_recursion_is_refused():
    f = compile_source("""
from liftkit.jit import jit
@jit(cache=False)
def f(n):
    if n <= 1:
        return 1
    return n * f(n - 1)
""")
    with pytest.raises(JitError, match="recursive calls"):
        f(3)


def test_bad_argument_type():
    f = compile_source("""
def f(a):
    return a
""")
    with pytest.raises(TypeError, match="argument 'a': values of type list"):
        f([1, 2])
    with pytest.raises(TypeError, match="takes 1 arguments, 2 given"):
        f(1, 2)


def test_annotation_checked():
    f = compile_source("""
from liftkit.jit import Array, float64
def f(A: Array(float64, 2, "C")):
    return A[0, 0]
""")
    assert f(np.ones((2, 2))) == 1.0
    with pytest.raises(TypeError, match="argument 'A': expected array"):
        f(np.ones(3))
    with pytest.raises(TypeError, match="argument 'A': expected array"):
        f(np.ones((2, 2), np.float32))
