"""Crash-safe builds: a kernel not known to build is built first in a forked build server, so a
device compiler that crashes on it is one error line, not the end of the user's process; keys
known to build are remembered on disk and built in process; the binary the server built is
loaded, not built a second time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import BuildError, CompilerCrash, KernelCache, OpenCLRunner, list_devices  # noqa: E402
from liftkit.backends.opencl import cache as cache_mod  # noqa: E402
from liftkit.backends.opencl import safebuild  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CRASH_CL = REPO / "results" / "issue11" / "intel_vplan_crash.cl"
CPU = next((d for d in list_devices() if d.type == "cpu"), None)
needs_cpu = pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
INTEL = CPU is not None and "intel" in CPU.platform.lower()

GOOD = """kernel void K(const global float* restrict x, global float* out, int n) {
  float acc = 0.0f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) { acc = acc + fabs(x[i]); }
  out[get_global_id(0)] = acc;
}
"""


def fresh(source: str = GOOD) -> str:
    """A source no cache has seen (neither liftkit's nor pyopencl's)."""
    return f"// {time.time_ns()} {os.getpid()}\n{source}"


@pytest.fixture()
def runner(tmp_path: Path) -> OpenCLRunner:
    if CPU is None:
        pytest.skip("no OpenCL CPU device")
    return OpenCLRunner(CPU, KernelCache(tmp_path / "kernels", disk=False, safe_builds=True))


def _build(runner: OpenCLRunner, source: str) -> object:
    return runner.cache.get(runner.context, runner.device, source, ())


@needs_cpu
def test_a_crashing_compiler_is_one_error_and_the_next_build_works(
        runner: OpenCLRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    real = safebuild._child_build

    def segfault(context: object, device: object, source: str, options: object) -> bytes:
        if "CRASH" in source:  # as a compiler crashes (past any handler the driver installed)
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(context, device, source, options)  # type: ignore[arg-type]

    monkeypatch.setattr(safebuild, "_child_build", segfault)
    with pytest.raises(CompilerCrash) as info:
        _build(runner, fresh(GOOD.replace("kernel void K", "kernel void CRASH")))
    text = str(info.value)
    assert "crashed (SIGSEGV) building kernel CRASH" in text and "\n" not in text
    assert "another device" in text and info.value.validity == "compile-error"
    _build(runner, fresh())  # a new server takes the next build
    assert runner.cache.stats().probes == 2


@needs_cpu
def test_a_hung_compiler_is_stopped(runner: OpenCLRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safebuild, "_child_build", lambda *a: time.sleep(60))
    runner.cache.probe_timeout = 0.5
    t0 = time.monotonic()
    with pytest.raises(CompilerCrash, match="did not finish within 0.5 s"):
        _build(runner, fresh())
    assert time.monotonic() - t0 < 10


@needs_cpu
def test_a_compile_error_stays_a_build_error(runner: OpenCLRunner) -> None:
    with pytest.raises(BuildError) as info:
        _build(runner, fresh("kernel void K(global float* o) { o[0] = ; }"))
    assert not isinstance(info.value, CompilerCrash) and "error" in str(info.value)
    _build(runner, fresh())  # the server survived the error
    assert runner.cache.stats().probes == 2


@needs_cpu
def test_known_good_keys_are_built_in_process_and_binaries_not_built_twice(
        tmp_path: Path, runner: OpenCLRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    built_here: list[str] = []
    real = cache_mod.build_from_source

    def counting(context: object, device: object, source: str, options: object = ()) -> object:
        built_here.append(source)
        return real(context, device, source, options)  # type: ignore[arg-type]

    monkeypatch.setattr(cache_mod, "build_from_source", counting)
    source = fresh()
    disk = OpenCLRunner(CPU, KernelCache(tmp_path / "kernels", safe_builds=True))
    prog = _build(disk, source)
    assert disk.cache.stats().probes == 1 and built_here == []  # the server's binary, loaded
    assert cl.Kernel(prog, "K").num_args == 3
    key = cache_mod.cache_key(source, disk.device, ())
    assert (tmp_path / "kernels" / "known-good" / key).exists()
    (tmp_path / "kernels" / f"{key}.bin").unlink()  # no binary: it must be built again

    # another process's cache (same directory): known good, so built here without a server
    again = OpenCLRunner(CPU, KernelCache(tmp_path / "kernels", safe_builds=True))
    monkeypatch.setattr(safebuild.BuildServer, "build", lambda *a, **k: pytest.fail("probed twice"))
    _build(again, source)
    assert again.cache.stats().probes == 0 and built_here == [source]

    # a memory-only cache writes nothing and remembers for this process
    mem = OpenCLRunner(CPU, KernelCache(tmp_path / "mem", disk=False, safe_builds=True))
    mem.cache.known_good.add("k")
    assert "k" in mem.cache.known_good and not (tmp_path / "mem").exists()

    off = OpenCLRunner(CPU, KernelCache(tmp_path / "other", disk=False, safe_builds=False))
    _build(off, fresh())  # LIFTKIT_SAFE_BUILD=0 / safe_builds=False: no server
    assert off.cache.stats().probes == 0


def test_the_switch() -> None:
    env = dict(os.environ, LIFTKIT_SAFE_BUILD="0")
    out = subprocess.run([sys.executable, "-c", "from liftkit.backends.opencl import KernelCache; "
                          "print(KernelCache(disk=False).safe_builds)"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


_CRASH_CHILD = textwrap.dedent("""
    import sys
    from liftkit.backends.opencl import CompilerCrash, KernelCache, OpenCLRunner
    r = OpenCLRunner("cpu", KernelCache(disk=False))
    try:
        r.cache.get(r.context, r.device, open(sys.argv[1]).read(), ())
        print("built")
    except CompilerCrash as err:
        print("crash:", err)
""")

_PROGRAM = textwrap.dedent("""
    from liftkit.dsl import *
    asum96 = fun([float32[96]], lambda x: toGlobal(mapSeq(id)) << reduceSeq(absAndSumUp, 0.0) << x)
""")


@pytest.mark.skipif(not INTEL, reason="the reproducer crashes Intel's CPU compiler only")
def test_intel_compiler_crash_reproducer_is_one_error(tmp_path: Path) -> None:
    """results/issue11/intel_vplan_crash.cl, and a liftkit program whose kernel is that loop,
    in a child process each: the process lives and says what happened in one line."""
    env = dict(os.environ, LIFTKIT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO / "src")]))
    env.pop("LIFTKIT_SAFE_BUILD", None)
    proc = subprocess.run([sys.executable, "-c", _CRASH_CHILD, str(CRASH_CL)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("crash:") and "crashed (SIGSEGV) building kernel K" in proc.stdout
    assert "vplan-vec" in proc.stdout  # the compiler's last words

    (tmp_path / "crashprog.py").write_text(_PROGRAM)
    np.save(tmp_path / "x.npy", np.arange(96, dtype=np.float32) - 40)
    proc = subprocess.run([sys.executable, "-m", "liftkit", "run", "crashprog:asum96", "--device",
                           "cpu", "--input", f"x={tmp_path / 'x.npy'}"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "crashprog:asum96: the OpenCL compiler" in err and "other sizes" in err
