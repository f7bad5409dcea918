"""The tuner's host work (issue 15, tuning from nothing in minutes): kernels compiled ahead by a
pool of processes into the CUDA module cache under the key the runner looks up (NVRTC, no GPU
needed), and the result check that replaces np.allclose."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import derive
from liftkit.blas.tune import CHECK_CHUNK, close_enough
from liftkit.blas.variants import Kind, Variant
from liftkit.codegen import CompileOptions, compile_program

SGEMM, DGEMM = Kind("mm", "float32", "NN"), Kind("mm", "float64", "NN")
ASYNC = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
DMMA = Variant.of("mma", tm=32, tn=32, tk=16, warps=2, staged=2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_close_enough_agrees_with_allclose(dtype: str) -> None:
    rng = np.random.default_rng(1)
    n = 20 * CHECK_CHUNK + 7  # the threaded path and a short last chunk
    want = rng.uniform(-1, 1, n) + (1j * rng.uniform(-1, 1, n) if dtype == "complex64" else 0)
    got = want.astype(dtype)
    tol = (1e-3, 1e-4) if dtype != "float64" else (1e-9, 1e-11)
    assert close_enough(got, want, *tol) and np.allclose(got, want, *tol)
    for i, bad in ((0, 1e-2), (n - 1, 1e-2), (CHECK_CHUNK * 11 + 3, np.nan)):
        wrong = got.copy()
        wrong[i] += bad
        assert not close_enough(wrong, want, *tol) and not np.allclose(wrong, want, *tol)
    small = got[:100].reshape(10, 10)  # one chunk, 2-D
    assert close_enough(small, want[:100].reshape(10, 10), *tol)


def test_kernels_compiled_ahead_are_the_runners_cache_entries(tmp_path) -> None:
    """Threads generate each queued variant into the store (which the build then reuses) and
    compile it with NVRTC into the module cache under the key the runner looks up."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    from liftkit.backends.cuda.cache import (ModuleCache, cuda_options, module_key,
                                             unwrap_entry)
    from liftkit.blas.kernels import KernelStore
    from liftkit.blas.prebuild import Prebuild

    cache = ModuleCache(tmp_path)
    device = SimpleNamespace(fingerprint="cuda|stub H100|9.0|580", compute_capability=(9, 0))
    store = KernelStore(SimpleNamespace(backend="cuda"), device)
    bad = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=99)
    with Prebuild(store, cache, device, [(SGEMM, ASYNC), (DGEMM, DMMA)], workers=2) as pre:
        pre.add([(SGEMM, ASYNC), (SGEMM, bad)])  # queued once; one that cannot derive
        for kind, v in ((SGEMM, ASYNC), (DGEMM, DMMA), (SGEMM, bad), (SGEMM, ASYNC)):
            pre.ready(kind, v)  # a failure is left to the runner's own build
        pre.ready(DGEMM, ASYNC)  # never queued: nothing to wait for
    assert pre.compiled == 2
    for kind, v in ((SGEMM, ASYNC), (DGEMM, DMMA)):
        derivation, compiled = store.program(kind, v)  # generated once, by the pool
        assert store.program(kind, v)[1] is compiled
        (k,) = compiled.kernels
        assert k.source == compile_program(derive(kind, v).final,
                                           CompileOptions(dialect="cuda")).kernels[0].source
        key = module_key(k.source, device, cuda_options(device, k.build_options))  # the runner's
        cubin = unwrap_entry(cache.path_for(key).read_bytes(), key)
        assert cubin[:4] == b"\x7fELF"
    assert len(list(tmp_path.glob("*.cubin"))) == 2
    other = Variant.of("tiles-async", tm=64, tn=64, tk=32, rm=8, rn=8, stages=2)
    with Prebuild(store, cache, device, workers=1) as held:
        with held.quiet:  # a trial runs: the thread does not generate code meanwhile
            held.add([(SGEMM, other)])
            time.sleep(0.5)
            assert (SGEMM, other) not in store._programs
        held.ready(SGEMM, other)
    assert (SGEMM, other) in store._programs and held.compiled == 1
    with Prebuild(store, cache, device, [(SGEMM, ASYNC)], workers=1) as again:
        again.ready(SGEMM, ASYNC)
    assert again.compiled == 0  # in the cache already (a resumed run)


def test_no_compile_pool_off_cuda() -> None:
    from liftkit.blas.prebuild import NoPrebuild, for_session

    session = SimpleNamespace(backend="cuda", q=SimpleNamespace())  # the tests' stubbed sessions
    assert isinstance(for_session(session, [(SGEMM, ASYNC)]), NoPrebuild)


class _Spy:
    """What the tuner asks of its compile pool, recorded."""

    def __init__(self, jobs: Any) -> None:
        self.queued, self.ready_for, self.closed = list(jobs), [], False
        self.quiet = threading.Lock()

    def add(self, jobs: Any) -> None:
        self.queued += list(jobs)

    def ready(self, kind: Kind, v: Variant) -> None:
        self.ready_for.append((kind, v))

    def __enter__(self) -> "_Spy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.closed = True


def test_tune_waits_for_each_kernel_it_queued_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A (stubbed) CUDA tuning run queues every variant it will measure before the first, the
    guarded forms when it knows them, waits for each before measuring it, and stops the pool;
    resumed, it queues nothing."""
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.profile import Profile

    spies: list[_Spy] = []
    monkeypatch.setattr(tune_mod, "for_session",
                        lambda session, jobs, workers: spies.append(_Spy(jobs)) or spies[-1])
    measured: list[tuple[Kind, Variant, bool]] = []

    def fake(session: Any, kind: Kind, variant: Variant, sizes: dict[str, int],
             plan: bool = False, **_: Any) -> tune_mod.Trial:
        t = tune_mod.Trial(kind, tune_mod.size_class(kind.op, sizes), variant, dict(sizes))
        measured.append((kind, variant, plan))
        assert (kind, variant) in spies[-1].queued and spies[-1].ready_for[-1] == (kind, variant)
        assert spies[-1].quiet.locked()  # no code generated meanwhile
        t.seconds = 1.0 / (1 + len(variant.params)) + 1e-3 * plan
        t.rate = 1.0 / t.seconds
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    session = SimpleNamespace(
        device=SimpleNamespace(fingerprint="cuda|stub", label="stub", ordinal=0),
        device_kind="gpu", backend="cuda", profile=None, forget_choices=lambda: None)
    prof = Profile("cuda|stub", "stub", "gpu")
    tune_mod.tune(session, [SGEMM, DGEMM], ["large"], prof, progress=False,  # type: ignore
                  peaks=None, limits=None, workers=3)
    (spy,) = spies
    assert spy.closed and len(measured) > 20
    assert any(v.codelet.startswith("edge-") for _, v, _ in measured)  # queued when known
    space = [(k, v) for k, v, plan in measured if not plan and not v.codelet.startswith("edge-")]
    assert spy.queued[:len(space)] == space  # the classes' variants first, as they are measured
    measured.clear()
    tune_mod.tune(session, [SGEMM, DGEMM], ["large"], prof, progress=False,  # type: ignore
                  peaks=None, limits=None, workers=3)
    assert spies[-1].queued == [] and measured == []


def test_an_interrupted_class_resumes_after_its_last_saved_variant(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a (kind, class) the profile is saved every CHECKPOINT seconds (here after every
    variant): Ctrl-C in the middle of a class loses the variant being measured only."""
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.profile import Profile

    monkeypatch.setattr(tune_mod, "CHECKPOINT", 0.0)
    measured: list[Variant] = []
    stop = [5]

    def fake(session: Any, kind: Kind, variant: Variant, sizes: dict[str, int],
             **_: Any) -> tune_mod.Trial:
        if len(measured) == stop[0]:
            raise KeyboardInterrupt
        measured.append(variant)
        t = tune_mod.Trial(kind, tune_mod.size_class(kind.op, sizes), variant, dict(sizes))
        t.seconds, t.rate = 1.0, 1.0
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    session = SimpleNamespace(device=SimpleNamespace(fingerprint="cuda|stub", label="stub"),
                              device_kind="gpu", backend="cuda", profile=None,
                              forget_choices=lambda: None)
    saved: list[str] = []
    prof = Profile("cuda|stub", "stub", "gpu")
    with pytest.raises(KeyboardInterrupt):
        tune_mod.tune(session, [SGEMM], ["large"], prof, save=lambda p: saved.append(p.dumps()),
                      progress=False, peaks=None, limits=None, edges=False, workers=0)
    resumed = Profile.from_json(json.loads(saved[-1]))
    assert resumed.measured(SGEMM, "large") == set(measured)  # all 5 before the interrupt
    first, measured[:], stop[0] = list(measured), [], -1
    tune_mod.tune(session, [SGEMM], ["large"], resumed, progress=False, peaks=None,
                  limits=None, edges=False, workers=0)
    assert not set(first) & set(measured) and len(first) + len(measured) == len(
        resumed.measured(SGEMM, "large"))


def test_a_hopeless_variant_is_timed_twice() -> None:
    """A kernel whose first two timed runs take RACE times the fastest so far is timed no
    more; one within RACE is timed `repeat` times; both are checked first."""
    from liftkit.blas import tune as tune_mod

    kind, sizes = SGEMM, {"M": 4, "N": 4, "K": 4}
    want = np.ones((4, 4))
    for first, race, runs in ((1.0, 0.3, 2), (1.0, 0.4, 5), (1.0, None, 5)):
        spans: list[float] = []

        def run(first: float = first) -> Any:
            spans.append(first)
            return SimpleNamespace(wait=lambda: None, seconds=first)

        t = tune_mod._check_then_time(tune_mod.Trial(kind, "small", ASYNC), want, want, sizes,
                                      run, 5, 60.0, race)
        assert len(spans) == runs and t.seconds == first and not t.error
    t = tune_mod._check_then_time(tune_mod.Trial(kind, "small", ASYNC), want, want + 1, sizes,
                                  run, 5, 60.0, 0.1)
    assert t.error == "wrong result"
