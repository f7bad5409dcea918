"""The backend as part of the search (`liftkit explore --backend any`): every candidate is built,
checked and timed on OpenCL and on CUDA for the same GPU, and recorded with the faster.

Why both rather than one backend drawn per candidate: the descent fixes the choice whose walks
gave the best time, and a derivation's time on one backend says little about the other (the
CUDA-only patterns have none on OpenCL; the same kernel meets two compilers), so a drawn
backend would make that comparison noise. The cost stays near one backend's: code generation
for both runs in the host stages (in parallel), the check runs on small inputs, and the second
backend timed races the first: a first run `RACE_MARGIN` slower than the first backend's median
cannot win and is recorded after that one run. The backend that has won more candidates so far
is timed first.

Process rules (see backends/cuda/nvrtc.py): NVIDIA's OpenCL compiler and NVRTC never share a
process. OpenCL candidates are built and run in the `CandidateWorker`'s child; NVRTC runs in its
compile server; this process holds only the CUDA driver's context.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from liftkit.ir.nodes import Lambda
from liftkit.rewrite.core import Choice

from liftkit.explore.db import Record
from liftkit.explore.evaluate import Evaluator, Ready

# which failure a candidate failing on both backends is recorded as: the most telling one
_FAILURE_RANK = {"wrong-result": 4, "runtime-error": 3, "compile-error": 2, "skipped": 1,
                 "filtered": 0, "ok": 0}
Timer = Callable[[str, Ready, Optional[float]], Record]  # (backend, ready, race) -> its record


@dataclass(frozen=True)
class PerBackend:
    """A candidate past the host stages on each backend: a failure's record or what timing
    needs, by backend name."""

    results: tuple[tuple[str, Union[Record, Ready]], ...]


class BothBackends:
    """The Evaluator interface over one Evaluator per backend (the first, OpenCL, is primary:
    its device names the search, its runner is what the host stages clone). `evaluate` runs
    a candidate on each and returns the faster's record, `backend` set, with every backend's
    outcome in `params["backends"]`."""

    def __init__(self, evaluators: Mapping[str, Evaluator]) -> None:
        if len(evaluators) < 2:
            raise ValueError("BothBackends needs an evaluator per backend")
        self.each = dict(evaluators)
        self.primary = next(iter(self.each.values()))
        self.problem = self.primary.problem
        self.settings = self.primary.settings
        self.filters = self.primary.filters
        self.measure = self.primary.measure
        self.device_limits = self.primary.device_limits
        self.wins = {b: 0 for b in self.each}

    @property
    def runner(self) -> Any:
        return self.primary.runner

    @property
    def device_fingerprint(self) -> str:
        return self.primary.device_fingerprint

    def fingerprints(self) -> dict[str, str]:
        return {b: ev.device_fingerprint for b, ev in self.each.items()}

    def dialect(self, backend: str) -> str:
        return getattr(self.each[backend].runner, "dialect", "opencl")

    # -- evaluation -------------------------------------------------------------------------------

    def evaluate(self, program: Lambda, derivation: Sequence[Choice] = (),
                 best: Optional[float] = None) -> Record:
        prepared = {b: ev.prepare(program, derivation) for b, ev in self.each.items()}
        return self.complete(prepared, lambda b, ready, race: self.each[b].finish(ready, best, race))

    def complete(self, prepared: Mapping[str, Union[Record, Ready]], timer: Timer) -> Record:
        """Time each backend's prepared candidate (the one winning more so far first, the
        other racing it) and choose."""
        order = sorted(prepared, key=lambda b: -self.wins.get(b, 0))
        records: dict[str, Record] = {}
        fastest: Optional[float] = None
        for b in order:
            result = prepared[b]
            if isinstance(result, Record):
                records[b] = result
                continue
            rec = timer(b, result, fastest)
            records[b] = rec
            if rec.ok and rec.time is not None:
                fastest = rec.time if fastest is None else min(fastest, rec.time)
        return self.choose(records)

    def choose(self, records: Mapping[str, Record]) -> Record:
        """The faster valid record (ties: the primary), else the most telling failure with
        every backend's reason."""
        outcomes = {b: _outcome(r) for b, r in records.items()}
        ok = [b for b in self.each if b in records and records[b].ok]
        if ok:
            b = min(ok, key=lambda k: records[k].time)  # type: ignore[arg-type, return-value]
            self.wins[b] += 1
            rec = records[b]
            return replace(rec, backend=b, params=dict(rec.params) | {"backends": outcomes})
        b = max((k for k in self.each if k in records),
                key=lambda k: _FAILURE_RANK.get(records[k].validity, 0))
        rec = records[b]
        reason = "; ".join(f"{k}: {records[k].label()}" for k in self.each if k in records)
        return replace(rec, backend=b, reason=reason if len(reason) <= 400 else reason[:397] + "...",
                       params=dict(rec.params) | {"backends": outcomes})


def _outcome(rec: Record) -> dict[str, Any]:
    out: dict[str, Any] = {"validity": rec.validity}
    if rec.time is not None:
        out["time"] = rec.time
    if rec.reason:
        out["reason"] = rec.reason
    return out


# ---------------------------------------------------------------------------------------------
# which devices


def cuda_twin(opencl_device: Any, cuda_devices: Sequence[Any]) -> tuple[Optional[Any], str]:
    """The CUDA device that is the same GPU as an OpenCL device (by name), or (None, why not:
    said to the user once)."""
    if not getattr(opencl_device, "is_gpu", False):
        return None, f"{opencl_device.label} is not a GPU: no CUDA backend for it"
    if not cuda_devices:
        return None, "no CUDA device here"
    same = [d for d in cuda_devices if d.name.strip().lower() == opencl_device.name.strip().lower()]
    if not same:
        names = ", ".join(sorted({d.name for d in cuda_devices}))
        return None, f"no CUDA device is {opencl_device.name} (CUDA has {names})"
    return same[0], ""


def any_note(why: str) -> str:
    """The one line saying that `--backend any` means OpenCL here."""
    return f"--backend any: {why}; candidates run on OpenCL only"


class AnyBackendRunners:
    """The runners of `--backend any` on a device spec, as a context manager: the OpenCL
    CandidateWorker and, where the device is a CUDA GPU too, a CUDARunner for it; `note`
    says why CUDA is not used, else ''."""

    def __init__(self, device_spec: Optional[str], timeout: float) -> None:
        from liftkit.explore.worker import CandidateWorker

        self.opencl = CandidateWorker(device_spec, timeout=timeout)
        self.cuda: Any = None
        from liftkit.backends.cuda import list_devices

        twin, self.note = cuda_twin(self.opencl.device, list_devices())
        if twin is not None:
            from liftkit.backends.cuda import CUDARunner

            self.cuda = CUDARunner(twin)

    @property
    def device(self) -> Any:
        return self.opencl.device

    def bandwidth_gbs(self, nbytes: int) -> float:
        """The GPU's copy bandwidth (the same device on either backend), for the bound."""
        return self.opencl.bandwidth_gbs(nbytes)

    def runners(self) -> dict[str, Any]:
        out: dict[str, Any] = {"opencl": self.opencl}
        if self.cuda is not None:
            out["cuda"] = self.cuda
        return out

    def evaluator(self, problem: Any, settings: Any, measure: Any = None) -> Any:
        """An Evaluator on OpenCL alone, or BothBackends."""
        evs = {b: Evaluator(problem, r, settings, measure=measure) for b, r in self.runners().items()}
        return evs["opencl"] if len(evs) == 1 else BothBackends(evs)

    def close(self) -> None:
        self.opencl.close()

    def __enter__(self) -> "AnyBackendRunners":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
