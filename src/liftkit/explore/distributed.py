"""The search's pipeline on a Ray cluster (`pip install 'liftkit[distributed]'`).

The host stages (derive, generate) run in a pool of Ray actors — one per CPU the cluster
offers the search, on any node — each holding the problem and the rule space once (they keep
their caches between jobs); the results come back in the jobs' order, so the search draws and
decides exactly as with the process pool. Building, checking and timing run in one timing
actor per device, which declares the device (`num_gpus=1` for a GPU) so that several searches
on a cluster each get their own. Only the driver writes the tuning database: actors return
records, never touch SQLite.
"""

from __future__ import annotations

import pickle
from typing import Any, Iterator, Optional, Sequence

from liftkit.explore.pipeline import HostStages, Job, Outcome
from liftkit.explore.worker import _dumps

EXTRA = "pip install 'liftkit[distributed]'"


class MissingExtraError(ValueError):
    """An optional dependency a requested feature needs is not installed (one line, naming
    the extra to install)."""


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError(f"--ray needs Ray, which is not installed: {EXTRA}") from None
    return ray


def _host_actor(ray: Any) -> Any:
    @ray.remote(num_cpus=1)
    class HostActor:
        """Host stages of one search (CPU only: no build, no check)."""

        def __init__(self, stages: HostStages) -> None:
            import warnings

            warnings.simplefilter("ignore")
            self.stages = stages

        def run(self, job: Job) -> bytes:
            return _dumps(self.stages.run(job))

    return HostActor


def _timing_actor(ray: Any, gpu: bool) -> Any:
    @ray.remote(num_cpus=0, num_gpus=1 if gpu else 0)
    class TimingActor:
        """The device's one timer: builds, checks and times prepared candidates."""

        def __init__(self, problem: Any, eval_settings: Any, filters: Any, device_limits: Any,
                     device: Optional[str], backend: str, timeout: float,
                     measure: Any = None) -> None:
            from liftkit.backends.choose import make_runner, resolve_backend
            from liftkit.explore.evaluate import Evaluator
            from liftkit.explore.worker import CandidateWorker

            if resolve_backend(backend, device) == "cuda":
                runner: Any = make_runner("cuda", device)
            else:
                runner = CandidateWorker(device, timeout=timeout)
            self.evaluator = Evaluator(problem, runner, eval_settings, filters, measure, device_limits)

        def check_ready(self, data: bytes) -> bytes:
            return _dumps(self.evaluator.check_ready(pickle.loads(data)))

        def finish(self, data: bytes, best: Optional[float]) -> bytes:
            return _dumps(self.evaluator.finish(pickle.loads(data), best))

        def fingerprint(self) -> str:
            return str(self.evaluator.device_fingerprint)

    return TimingActor


class RayTimer:
    """The driver's handle on the timing actor (what Pipeline.time calls)."""

    def __init__(self, ray: Any, actor: Any) -> None:
        self.ray, self.actor = ray, actor

    def check_ready(self, ready: Any) -> Any:
        return pickle.loads(self.ray.get(self.actor.check_ready.remote(_dumps(ready))))

    def finish(self, ready: Any, best: Optional[float] = None) -> Any:
        return pickle.loads(self.ray.get(self.actor.finish.remote(_dumps(ready), best)))


class RayEngine:
    """The pipeline's engine on Ray: host actors for the host stages, a timing actor for the
    device. `address`: 'auto' (a running cluster), a cluster address, or 'local' (start one
    here); a Ray already initialised in this process is used as it is."""

    def __init__(self, search: Any, address: str = "auto", device: Optional[str] = None,
                 backend: str = "auto", timeout: float = 60.0, workers: Optional[int] = None) -> None:
        ray = require_ray()
        self.ray = ray
        if not ray.is_initialized():
            try:
                ray.init(address=None if address == "local" else address,
                         log_to_driver=False, include_dashboard=False, logging_level="ERROR")
            except ConnectionError as err:
                raise MissingExtraError(f"--ray {address}: no Ray cluster there ({err}); start "
                                        "one with `ray start --head`, or use --ray local") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n = max(1, min(workers or cpus, cpus))
        self._stages = ray.put(HostStages.of(search, check=False))
        self._host = _host_actor(ray)
        self.actors = [self._host.remote(self._stages) for _ in range(n)]
        self.restarts = 0
        ev = search.evaluator
        gpu = getattr(getattr(ev.runner, "device", None), "type", "") == "gpu"
        timing = _timing_actor(ray, gpu)
        self.timing = timing.remote(search.problem, ev.settings, ev.filters, ev.device_limits,
                                    device, backend, timeout, ev.measure)
        self.timer = RayTimer(ray, self.timing)

    def outcomes(self, jobs: Sequence[Job]) -> Iterator[Outcome]:
        """Jobs dealt round-robin to the host actors (each answers its own in order), results
        taken in the jobs' order; a job whose actor died goes to a new actor."""
        from ray.exceptions import RayActorError

        n = len(self.actors)
        refs = [self.actors[i % n].run.remote(job) for i, job in enumerate(jobs)]
        for i, job in enumerate(jobs):
            for attempt in range(3):
                try:
                    data = self.ray.get(refs[i])
                    break
                except RayActorError:
                    if attempt == 2:
                        raise
                    k = i % n
                    self.actors[k] = self._host.remote(self._stages)
                    self.restarts += 1
                    for j in range(i, len(jobs), n):  # the dead actor's jobs, to the new one
                        refs[j] = self.actors[k].run.remote(jobs[j])
            yield pickle.loads(data)

    def close(self) -> None:
        for a in self.actors + [self.timing]:  # the jobs a finished search left queued too
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []
