"""Input files for `liftkit run`: read them, and check each against its parameter's type.

A file whose dtype differs from the parameter's is refused with both dtypes named: casting
float64 data to float32 (or int64 to int32) without a word changes the answer the user asked
about. `--cast` converts, says so on stderr, and still refuses conversions that lose whole
values (out of range, not integral, complex). Empty arrays are refused like `--size N=0`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

from liftkit.cli.resolve import CliError
from liftkit.cli.sizes import empty_input_error
from liftkit.ir.printer import show_type
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType


NPY_MAGIC = b"\x93NUMPY"  # every .npy file starts so (NEP 1)
ZIP_MAGIC = b"PK\x03\x04"  # .npz files are zip archives


def load_array(path: str, what: str) -> Any:
    """An input file: .npy gives an array; .npz gives a tuple of its arrays in stored order."""
    p = Path(path)
    if p.is_dir():
        raise CliError(f"input {what}: {path} is a directory, not a .npy or .npz file")
    if not p.is_file():
        raise CliError(f"input {what}: no such file: {path}")
    try:
        with open(p, "rb") as f:
            head = f.read(6)
    except OSError as err:
        raise CliError(f"input {what}: cannot read {path} ({err.strerror or err})") from None
    if not (head.startswith(NPY_MAGIC) or head.startswith(ZIP_MAGIC)):
        # np.load would take any other file for a pickle and talk about pickled data
        kind = "an empty file" if not head else "neither a .npy nor an .npz file"
        raise CliError(f"input {what}: {path} is {kind} (save arrays with numpy.save or "
                       f"numpy.savez)")
    try:
        data = np.load(p, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                return tuple(data[k] for k in data.files)
        return data
    except MemoryError:
        raise CliError(f"input {what}: {path} does not fit in memory") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CliError(f"input {what}: cannot read {path} as NumPy data ({detail})") from None


def _scalar_of(t: Type) -> Optional[ScalarType]:
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType):
        return t.elem
    return t if isinstance(t, ScalarType) else None


def _dims(t: Type) -> int:
    """Dimensions of the NumPy array holding a value of type `t` (vectors add their lanes)."""
    n = 0
    while isinstance(t, ArrayType):
        n, t = n + 1, t.elem
    return n + (1 if isinstance(t, VectorType) else 0)


def _has_tuples(t: Type) -> bool:
    while isinstance(t, ArrayType):
        t = t.elem
    return isinstance(t, TupleType)


def _components(t: Type) -> list[Type]:
    """[(A, B)]_N -> [[A]_N, [B]_N]: how a tuple-typed input is given (one array per field)."""
    if isinstance(t, TupleType):
        return list(t.elems)
    assert isinstance(t, ArrayType)
    return [ArrayType(c, t.length) for c in _components(t.elem)]


def conform(x: Any, t: Type, what: str, path: str, cast: bool, notes: list[str]) -> Any:
    """`x` (read from `path`) checked against parameter type `t`: dtypes equal, or converted
    with `cast` (a note is added); arrays not empty. Returns the value to run with."""
    if _has_tuples(t):
        parts = _components(t)
        if isinstance(x, np.ndarray) and x.dtype.names:
            given: tuple[Any, ...] = tuple(x[n] for n in x.dtype.names)
            form = f"a structured array with {len(given)} field(s)"
        elif isinstance(x, tuple):
            given, form = x, f"an .npz file with {len(x)} array(s)"
        else:
            raise CliError(f"input {what}: {show_type(t)} takes a tuple of {len(parts)} arrays "
                           f"(an .npz file or a structured array), but {path} holds one "
                           f"{np.asarray(x).dtype} array")
        if len(given) != len(parts):
            raise CliError(f"input {what}: {show_type(t)} has {len(parts)} components, but {path} "
                           f"is {form}")
        out = tuple(conform(g, pt, f"{what} (component {k})", path, cast, notes)
                    for k, (g, pt) in enumerate(zip(given, parts)))
        if isinstance(x, np.ndarray) and all(o is g for o, g in zip(out, given)):
            return x  # unchanged: keep the structured array the user gave
        return out
    if isinstance(x, tuple):
        raise CliError(f"input {what}: {show_type(t)} takes one array, but {path} is an .npz file "
                       f"with {len(x)} array(s); save it with np.save as .npy")
    arr = np.asarray(x)
    if arr.dtype.names:
        raise CliError(f"input {what}: {show_type(t)} takes plain values, but {path} holds a "
                       f"structured array ({', '.join(arr.dtype.names)})")
    dims = _dims(t)
    if arr.ndim != dims:
        raise CliError(f"input {what}: {show_type(t)} takes a {dims}-dimensional array, but "
                       f"{path} holds one of shape {arr.shape}")
    if isinstance(t, ArrayType) and arr.size == 0:
        raise empty_input_error(what, path, arr.shape)
    scalar = _scalar_of(t)
    if scalar is None:
        return x
    want = np.dtype(scalar.dtype)
    if arr.dtype == want:
        return x
    if not cast:
        raise CliError(f"input {what}: {path} holds {arr.dtype} values, but {show_type(t)} takes "
                       f"{want}; save the file as {want} or pass --cast to convert")
    converted = checked_cast(arr, want, f"input {what}: {path}")
    notes.append(f"input {what}: converted {path} from {arr.dtype} to {want} (--cast)")
    return converted


def checked_cast(arr: np.ndarray, want: np.dtype, what: str) -> np.ndarray:
    """`arr.astype(want)`, refusing conversions that change values beyond rounding: overflow to
    infinity, integers out of range, fractions or NaN to integers, complex to real."""
    src = arr.dtype
    if src.kind not in "biuf":
        raise CliError(f"{what}: {src} values cannot be converted to {want}")
    with np.errstate(all="ignore"):
        out = arr.astype(want)
        if want.kind == "f":
            lost = np.isfinite(arr) & ~np.isfinite(out) if src.kind == "f" else ~np.isfinite(out)
            problem = f"beyond the {want} range"
        elif want.kind == "b":
            lost = (arr != 0) & (arr != 1)
            problem = "other than 0 and 1"
        else:
            info = np.iinfo(want)
            if src.kind == "f":
                lost = ~np.isfinite(arr) | (arr != np.trunc(arr)) | (arr < info.min) | (arr > info.max)
                problem = f"not integers within the {want} range"
            else:
                wide = arr.astype(object) if src.kind == "u" and src.itemsize == 8 else arr
                lost = (wide < info.min) | (wide > info.max)
                problem = f"outside the {want} range"
    count = int(np.count_nonzero(lost))
    if count:
        first = arr.reshape(-1)[int(np.flatnonzero(np.asarray(lost).reshape(-1))[0])]
        raise CliError(f"{what}: {count} value(s) {problem} (e.g. {first}) cannot be converted to "
                       f"{want}")
    return out
