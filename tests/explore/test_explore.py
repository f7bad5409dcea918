"""The exploration: tuning database, filters, candidate evaluation, the Monte-Carlo search on asum,
the plot and `liftkit explore` end to end — on PoCL's CPU device with small budgets.

The rules here are a handful written for these tests (seed 002 Fig. 6/7 in miniature), so the
search is tested independently of the full rule set; the CLI loads them by `file.py:ATTR`.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.arith import cst  # noqa: E402
from liftkit.arith.simplify import divides  # noqa: E402
from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices  # noqa: E402
from liftkit.dsl import (  # noqa: E402
    add, float32, fun, id, join, mapGlb, mapLcl, mapSeq, mapWrg, reduceSeq, size, split, toGlobal,
    toLocal, toPrivate,
)
from liftkit.dsl import abs as labs  # noqa: E402
from liftkit.explore import (  # noqa: E402
    DeviceLimits,
    EvalSettings,
    Evaluator,
    FilterContext,
    Problem,
    Record,
    RuleSpace,
    SearchSettings,
    TuningDB,
    best_for,
    check_sizes,
    load_rule_space,
    make_problem,
    program_text,
    search,
    tuning_key,
)
from liftkit.explore import filters as F  # noqa: E402
from liftkit.ir import patterns as P  # noqa: E402
from liftkit.ir.nodes import FunCall, Lambda, Param, walk  # noqa: E402
from liftkit.ir.typecheck import is_low_level  # noqa: E402
from liftkit.rewrite import Choice, Rule  # noqa: E402

DEVICES = list_devices()
HAS_CPU = any(d.type == "cpu" for d in DEVICES)
needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device (PoCL)")
N = size("N")
THIS = Path(__file__).resolve()
SRC = THIS.parents[2] / "src"


# ---------------------------------------------------------------------------------------------
# a miniature rule set: split-join, reduce decomposition, lowering, fusion


def _only(cls: type, site: Any) -> bool:
    return type(site.f) is cls


def _split_choices(site: Any) -> list[dict[str, int]]:
    if not _only(P.Map, site):
        return []
    n = site.arg_types[0].length
    return [{"n": k} for k in (4, 16, 64, 256) if divides(cst(k), n) is not False]


def _split_join(site: Any, n: int) -> Any:
    (xs,) = site.call.args
    return FunCall(P.Join(), (FunCall(P.Map(P.Map(site.f.f)), (FunCall(P.Split(cst(n)), (xs,)),)),))


def _part_choices(site: Any) -> list[dict[str, int]]:
    if not _only(P.Reduce, site):
        return []
    n = site.arg_types[1].length
    return [{"n": k} for k in (16, 256, 1024) if divides(cst(k), n) is not False]


def _part_red(site: Any, n: int) -> Any:
    init, xs = site.call.args
    c = Param("c")
    inner = Lambda((c,), FunCall(P.Reduce(site.f.f), (init, c)))
    chunks = FunCall(P.Map(inner), (FunCall(P.Split(cst(n)), (xs,)),))
    return FunCall(P.Reduce(site.f.f), (init, FunCall(P.Join(), (chunks,))))


def _has_parallel(node: Any) -> bool:
    return any(isinstance(n, P.ParallelMap) for n in walk(node))


def _glb_choices(site: Any) -> list[dict[str, Any]]:
    # only outermost maps: a mapGlb inside a sequential pattern races (every work-item runs it)
    ok = _only(P.Map, site) and not site.enclosing and not _has_parallel(site.f)
    return [{}] if ok else []


def _seq_choices(site: Any) -> list[dict[str, Any]]:
    return [{}] if _only(P.Map, site) and not _has_parallel(site.f) else []


def _red_choices(site: Any) -> list[dict[str, Any]]:
    return [{}] if _only(P.Reduce, site) else []


def _fuse_choices(site: Any) -> list[dict[str, Any]]:
    arg = site.call.args[1] if len(site.call.args) == 2 else None
    ok = _only(P.ReduceSeq, site) and isinstance(arg, FunCall) and type(arg.f) is P.MapSeq
    return [{}] if ok else []


def _fuse(site: Any) -> Any:
    init, inner = site.call.args
    acc, x = Param("acc"), Param("x")
    op = Lambda((acc, x), FunCall(site.f.f, (acc, FunCall(inner.f.f, (x,)))))
    return FunCall(P.ReduceSeq(op), (init, inner.args[0]))


TEST_RULES = [
    Rule("splitJoin", "map f = join ∘ map(map f) ∘ split n", _split_choices, _split_join),
    Rule("partialReduce", "reduce = reduce ∘ join ∘ map(reduce) ∘ split n", _part_choices, _part_red),
    Rule("mapGlb", "map f → mapGlb f", _glb_choices,
         lambda s: FunCall(P.MapGlb(s.f.f, 0), s.call.args), lowering=True),
    Rule("mapSeq", "map f → mapSeq f", _seq_choices,
         lambda s: FunCall(P.MapSeq(s.f.f), s.call.args), lowering=True),
    Rule("reduceSeq", "reduce → reduceSeq", _red_choices,
         lambda s: FunCall(P.ReduceSeq(s.f.f), s.call.args), lowering=True),
]
FUSION = Rule("fuseReduceMap", "reduceSeq f ∘ mapSeq g → reduceSeq (λ(a, x). f(a, g x))",
              _fuse_choices, _fuse, lowering=True)
# deliberately wrong: drops the mapped function (asum would sum x instead of |x|)
BROKEN = Rule("mapForgetsF", "map f → mapSeq id (WRONG)", _seq_choices,
              lambda s: FunCall(P.MapSeq(id), s.call.args), lowering=True)


def space() -> RuleSpace:
    return RuleSpace(TEST_RULES, [FUSION], "test")


# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture(scope="module")
def runner(cache_dir: Path) -> OpenCLRunner:
    if not HAS_CPU:
        pytest.skip("no OpenCL CPU device (PoCL)")
    return OpenCLRunner("cpu", KernelCache(cache_dir))


def asum_problem(n: int = 1 << 16) -> Problem:
    return make_problem("asum", {"N": n})


def a_record(time_: float | None, validity: str = "ok", key: str = "k", search_id: str = "s",
             seq: int = 0) -> Record:
    return Record((Choice("mapSeq", (0, 2)),), f"prog{seq}", validity, time_, key=key,
                  search_id=search_id, seq=seq)


# ---------------------------------------------------------------------------------------------
# database


def test_key_is_normalised_and_depends_on_sizes_and_device() -> None:
    a = fun([float32[N]], lambda x: reduceSeq(add, 0.0) << mapSeq(labs) << x)
    b = fun([float32[N]], lambda x: reduceSeq(add, 0.0) << mapSeq(lambda v: labs(v)) << x)
    assert program_text(a) == program_text(b)  # eta-expanded: the same program
    k = tuning_key(program_text(a), {"N": 1024}, "dev")
    assert k == tuning_key(program_text(b), {"N": 1024}, "dev") and len(k) == 64
    assert k != tuning_key(program_text(a), {"N": 2048}, "dev")
    assert k != tuning_key(program_text(a), {"N": 1024}, "other dev")
    assert tuning_key("p", {"M": 1, "N": 2}, "d") == tuning_key("p", {"N": 2, "M": 1}, "d")
    assert asum_problem().key("d") == make_problem("asum", {"N": 1 << 16}).key("d")


def test_best_query_and_search_order(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.register_key("k", "asum", "prog", {"N": 4}, "dev")
    s1 = db.start_search("k", {"seed": 0})
    for seq, (t, v) in enumerate([(3e-3, "ok"), (None, "wrong-result"), (1e-3, "ok"),
                                  (None, "filtered"), (2e-3, "ok")]):
        db.insert(a_record(t, v, search_id=s1, seq=seq))
    s2 = db.start_search("k", {"seed": 1})
    db.insert(a_record(5e-4, "wrong-result", search_id=s2, seq=0))  # fast but wrong: never best
    db.insert(a_record(9e-4, "ok", search_id=s2, seq=1))
    db.insert(a_record(1e-5, "ok", key="other", search_id=s2, seq=2))
    best = db.best("k")
    assert best is not None and best.time == 9e-4 and best.search_id == s2
    assert best.derivation == (Choice("mapSeq", (0, 2)),)
    assert [r.seq for r in db.candidates("k", s1)] == [0, 1, 2, 3, 4]
    in_order = [(s1, i) for i in range(5)] + [(s2, 0), (s2, 1)]
    assert [(r.search_id, r.seq) for r in db.candidates("k")] == in_order
    assert [s.candidates for s in db.searches("k")] == [5, 2]
    assert db.best("nothing") is None
    info = db.key_info("k")
    assert info is not None and info.sizes == {"N": 4} and info.name == "asum"
    with pytest.raises(ValueError):
        a_record(1.0, "great")


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {src!r})
    from liftkit.explore.db import Record, TuningDB
    from liftkit.rewrite import Choice
    db = TuningDB(sys.argv[1])
    db.register_key("shared", "asum", "prog", {{"N": 4}}, "dev")
    sid = db.start_search("shared", {{"writer": sys.argv[2]}})
    for i in range(40):
        t = 1e-3 + i * 1e-5 + (0 if sys.argv[2] == "a" else 5e-6)
        db.insert(Record((Choice("r", (0,), {{"n": i}}),), "p%d" % i, "ok", t, key="shared",
                         search_id=sid, seq=i))
""")


def test_two_processes_insert_to_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    code = WRITER.format(src=str(SRC))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), w], stderr=subprocess.PIPE,
                              text=True) for w in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    db = TuningDB(path)
    assert db.count("shared") == 80
    searches = db.searches("shared")
    assert len(searches) == 2 and all(s.candidates == 40 for s in searches)
    for s in searches:
        assert [r.seq for r in db.candidates("shared", s.search_id)] == list(range(40))
    assert db.best("shared").time == pytest.approx(1e-3)  # type: ignore[union-attr]
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ---------------------------------------------------------------------------------------------
# filters

GPU = DeviceLimits(is_gpu=True, local_mem_size=48 * 1024, max_work_group_size=1024, compute_units=132)
CPU = DeviceLimits(is_gpu=False, local_mem_size=2 << 20, max_work_group_size=4096, compute_units=2)


def ctx(program: Lambda, n: int, device: DeviceLimits = GPU) -> FilterContext:
    from liftkit.rewrite import normalize

    return FilterContext(normalize(program), {"N": n}, device)  # type: ignore[arg-type]


def _tree(chunk: int, local: int) -> Lambda:
    """Each work-group: `local` threads sum chunk/local elements each into local memory."""
    return fun([float32[N]], lambda x: join << mapWrg(0)(
        join << toGlobal(mapLcl(0)(mapSeq(id))) << split(local)
        << join << toLocal(mapLcl(0)(reduceSeq(add, 0.0))) << split(chunk // local)
    ) << split(chunk) << x)


def test_filters_each_give_a_reason() -> None:
    high = make_problem("asum", {"N": 4096}).program
    assert "high-level" in (F.still_high_level(ctx(high, 4096)) or "")

    glb3 = fun([float32[N]], lambda x: join << mapGlb(0)(mapSeq(labs)) << split(3) << x)
    assert "split 3" in (F.sizes_not_divisible(ctx(glb3, 4096)) or "")
    assert F.sizes_not_divisible(ctx(glb3, 3 * 4096)) is None

    wide = _tree(8192, 2048)
    assert "2048 work-items" in (F.work_group_too_large(ctx(wide, 1 << 20)) or "")
    assert F.work_group_too_large(ctx(_tree(8192, 256), 1 << 20)) is None

    # a local array of 64 Ki floats (256 KiB) per work-group, and one of 256 floats
    big_local = fun([float32[N]], lambda x: join << mapWrg(0)(
        join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1) << toLocal(mapLcl(0)(id))) << split(65536) << x)
    assert "local memory" in (F.local_memory_too_large(ctx(big_local, 1 << 20)) or "")
    assert F.local_memory_too_large(ctx(_tree(8192, 256), 1 << 20)) is None

    def private(k: int) -> Lambda:
        return fun([float32[N]], lambda x: join << mapGlb(0)(
            lambda c: mapSeq(id) << toPrivate(mapSeq(labs)) << c) << split(k) << x)

    assert "private memory" in (F.private_memory_too_large(ctx(private(512), 1 << 20)) or "")
    assert F.private_memory_too_large(ctx(private(64), 1 << 20)) is None

    few = _tree(1024, 64)  # N/1024 work-groups
    assert "4 work-group(s) for 132 compute units" in (F.too_few_work_items(ctx(few, 4096)) or "")
    assert F.too_few_work_items(ctx(few, 1 << 20)) is None
    assert F.too_few_work_items(ctx(few, 4096, CPU)) is None  # CPUs want little parallelism
    seq = fun([float32[N]], lambda x: reduceSeq(add, 0.0) << mapSeq(labs) << x)
    assert "single work-item" in (F.too_few_work_items(ctx(seq, 1 << 20)) or "")

    reason = F.first_rejection(ctx(wide, 1 << 20))
    assert reason is not None and reason.startswith("work_group_too_large: ")
    assert F.first_rejection(ctx(_tree(8192, 256), 1 << 24)) is None


def test_check_sizes_scale_down_but_keep_divisibility() -> None:
    from liftkit.codegen import compile_program
    from liftkit.programs import PROGRAMS

    intel = compile_program(PROGRAMS["asum_intel"].program)  # N a multiple of 32768
    small, note = check_sizes(intel, {"N": 1 << 24})
    assert small == {"N": 32768} and note == ""
    tree = compile_program(_tree(1024, 64))
    assert check_sizes(tree, {"N": 1 << 24}, target=1)[0] == {"N": 1024}
    assert check_sizes(tree, {"N": 1 << 24}, target=3000)[0] == {"N": 3072}
    # split into N/512 chunks: undefined below N = 512, then any even N works
    chunks = compile_program(fun([float32[N]], lambda x: join << mapGlb(0)(mapSeq(labs))
                                 << split(N // 512) << x))
    assert check_sizes(chunks, {"N": 1 << 24})[0] == {"N": 1024}
    none, why = check_sizes(intel, {"N": 1 << 24}, max_elements=1000)
    assert none is None and "32768" in why


# ---------------------------------------------------------------------------------------------
# evaluation


@needs_cpu
def test_evaluation_times_a_correct_candidate(runner: OpenCLRunner) -> None:
    problem = asum_problem()
    ev = Evaluator(problem, runner, EvalSettings(repeat=2))
    sp = space()
    prog = sp.prepare(problem.program)
    for c in (Choice("reduceSeq", (0,)), Choice("mapSeq", (0, 2))):
        prog = sp.apply(prog, c)
    rec = ev.evaluate(prog, (Choice("reduceSeq", (0,)), Choice("mapSeq", (0, 2))))
    assert rec.ok and rec.time > 0, rec.label()  # type: ignore[operator]
    assert rec.params["check_sizes"] == {"N": 1024} and rec.params["launches"]
    assert rec.params["runs"] == 2 and "kernel void" in rec.source
    # far slower than the best so far: timed once, not K times
    slow = ev.evaluate(prog, best=rec.time * 1e-6)  # type: ignore[operator]
    assert slow.ok and slow.params["runs"] == 1 and "timed once" in slow.reason
    assert ev.evaluate(problem.program).validity == "filtered"


@needs_cpu
def test_a_broken_rule_is_caught_and_recorded(runner: OpenCLRunner, tmp_path: Path) -> None:
    problem = asum_problem()
    ev = Evaluator(problem, runner, EvalSettings(repeat=1))
    broken = RuleSpace([BROKEN, TEST_RULES[4]], name="broken")
    prog = broken.apply(broken.apply(broken.prepare(problem.program), Choice("reduceSeq", (0,))),
                        Choice("mapForgetsF", (0, 2)))
    rec = ev.evaluate(prog)
    assert rec.validity == "wrong-result" and "differ" in rec.reason and rec.time is None

    db = TuningDB(tmp_path / "t.sqlite")
    result = search(problem, broken, ev, SearchSettings(budget=5, walks=2, seed=0), db)
    assert result.best is None and result.records
    stored = db.candidates(result.key, result.search_id)
    assert [r.validity for r in stored] == [r.validity for r in result.records]
    assert "wrong-result" in {r.validity for r in stored}
    assert db.best(result.key) is None


# ---------------------------------------------------------------------------------------------
# search


def _fake_time(compiled: Any) -> float:
    """A deterministic stand-in timer: shorter kernels 'run faster'."""
    return 1e-6 * (len(compiled.source) + 100 * len(compiled.kernels))


@needs_cpu
def test_search_on_asum_reaches_a_valid_low_level_program(runner: OpenCLRunner, tmp_path: Path) -> None:
    problem = asum_problem()
    db = TuningDB(tmp_path / "t.sqlite")
    settings = SearchSettings(budget=12, walks=2, max_choices=4, seed=3)
    ev = Evaluator(problem, runner, EvalSettings(repeat=2))
    result = search(problem, space(), ev, settings, db)
    assert result.best is not None and result.best.ok
    assert len(result.records) <= 12
    assert [r.seq for r in result.records] == list(range(len(result.records)))
    steps = [r.step for r in result.records]
    assert steps == sorted(steps)
    assert result.best.time == min(r.time for r in result.records if r.ok)  # type: ignore[type-var]
    stored = db.candidates(result.key)
    assert [(r.seq, r.low_level, r.validity) for r in stored] == \
        [(r.seq, r.low_level, r.validity) for r in result.records]
    assert db.best(result.key).low_level == result.best.low_level  # type: ignore[union-attr]

    # the derivation replays to the recorded program, and --tuned finds it
    replayed = space().replay(problem.program, result.best.derivation)
    assert is_low_level(replayed) and program_text(replayed) == result.best.low_level
    found = best_for(make_problem("asum").program, {"N": 1 << 16}, runner.device, db)
    assert found is not None and program_text(found[0]) == result.best.low_level
    assert found[1] == result.best.derivation
    assert best_for(problem.program, {"N": 1 << 10}, runner.device, db) is None

    # the same seed explores the same candidates (before timings decide anything)
    again = search(problem, space(), ev, settings, TuningDB(tmp_path / "t.sqlite"))
    first = [(r.low_level, r.derivation) for r in result.records if r.step == 0]
    assert [(r.low_level, r.derivation) for r in again.records if r.step == 0] == first
    assert len(db.searches(result.key)) == 2


@needs_cpu
def test_search_is_reproducible_for_a_seed(runner: OpenCLRunner) -> None:
    problem = asum_problem()
    ev = Evaluator(problem, runner, EvalSettings(repeat=1), measure=_fake_time)

    def run(seed: int) -> list[tuple[str, tuple[Choice, ...], str]]:
        r = search(problem, space(), ev, SearchSettings(budget=10, walks=2, max_choices=3, seed=seed))
        assert r.best is not None
        return [(x.low_level, x.derivation, x.validity) for x in r.records]

    a = run(7)
    assert run(7) == a
    assert run(8) != a


@needs_cpu
def test_walks_do_not_end_in_programs_the_compiler_refuses(runner: OpenCLRunner) -> None:
    """The CPU rules lower gemv's rows to nested parallel maps read by a reduceSeq in the same
    kernel, which the compiler refuses; the walks go past them instead of spending the budget
    (before: 6 of 15 candidates of this search were compile errors)."""
    problem = make_problem("gemv", {"N": 64, "M": 128})
    ev = Evaluator(problem, runner, EvalSettings(repeat=1), measure=_fake_time)
    r = search(problem, load_rule_space("cpu"), ev,
               SearchSettings(budget=8, walks=3, max_choices=12, seed=0))
    assert r.records and all(x.validity != "compile-error" for x in r.records), \
        [x.reason for x in r.records]


def test_rule_sets_by_name(tmp_path: Path) -> None:
    sp = load_rule_space(f"{THIS}:TEST_RULES")
    assert [r.name for r in sp.rules] == [r.name for r in TEST_RULES]
    with pytest.raises(Exception, match="unknown rule set"):
        load_rule_space("nonsense")
    with pytest.raises(Exception, match="no attribute"):
        load_rule_space(f"{THIS}:NOPE")
    with pytest.raises(Exception, match="two rules"):
        RuleSpace([TEST_RULES[0], Rule("splitJoin", "", lambda s: [], lambda s: s.call)])


# ---------------------------------------------------------------------------------------------
# plot and CLI


def test_plot_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from liftkit.explore.plot import best_so_far, plot_search

    recs = [a_record(t, v, seq=i, search_id="s") for i, (t, v) in enumerate(
        [(3e-3, "ok"), (None, "wrong-result"), (1e-3, "ok"), (None, "filtered"), (2e-3, "ok"),
         (None, "compile-error"), (None, "runtime-error")])]
    recs = [Record(r.derivation, r.low_level, r.validity, r.time, step=i // 3, seq=i)
            for i, r in enumerate(recs)]
    assert best_so_far(recs) == [3e-3, 3e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3]
    out = plot_search(recs, tmp_path / "sub" / "plot.png", "asum")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_search([], tmp_path / "empty.png").stat().st_size > 0


def _cli(*args: str, cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LIFTKIT_CACHE_DIR=str(cache), PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "liftkit.cli.explore", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300, check=False)


@needs_cpu
def test_cli_explore_end_to_end(tmp_path: Path, cache_dir: Path) -> None:
    from liftkit.cli.explore import tuned_program
    from liftkit.cli.resolve import CliError, resolve

    db, plot, out = tmp_path / "db.sqlite", tmp_path / "plot.png", tmp_path / "out"
    has_mpl = importlib.util.find_spec("matplotlib") is not None
    r = _cli("asum", "--device", "cpu", "--size", "N=8192", "--budget", "6", "--seed", "1",
             "--db", str(db), "--out", str(out), "--repeat", "1", "--rules", f"{THIS}:TEST_RULES",
             "--quiet", *(["--plot", str(plot)] if has_mpl else []), cache=cache_dir, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "asum on " in r.stdout and "best: " in r.stdout and "database: " in r.stdout
    if has_mpl:
        assert plot.read_bytes()[:4] == b"\x89PNG"
    import json

    doc = json.loads((out / "derivation.json").read_text())
    assert doc["program"] == "asum" and doc["sizes"] == {"N": 8192} and doc["steps"]
    assert "kernel void" in (out / "kernel.cl").read_text()
    assert (out / "program.lift").read_text().strip() == doc["low_level"]

    low, derivation = tuned_program(resolve("asum"), {"N": 8192}, "cpu", str(db))
    assert program_text(low) == doc["low_level"] and len(derivation) == len(doc["steps"])
    with pytest.raises(CliError, match="nothing is tuned for asum at --size N=4096"):
        tuned_program(resolve("asum"), {"N": 4096}, "cpu", str(db))

    bad = _cli("asum", "--device", "cpu", "--rules", "nonsense", "--db", str(db), cache=cache_dir,
               cwd=tmp_path)
    assert bad.returncode == 1 and bad.stderr.startswith("liftkit: error: unknown rule set")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_choice_lists_are_cached_by_program_text() -> None:
    """Random walks revisit programs: the second listing of an equal program (a fresh copy,
    same text) comes from the cache, and callers get their own list to change."""
    from liftkit.explore.space import load_rule_space
    from liftkit.programs import PROGRAMS

    space = load_rule_space("gpu")
    first = space.choices(space.prepare(PROGRAMS["gemv"].program))
    again = space.choices(space.prepare(PROGRAMS["gemv"].program))
    assert again == first and again is not first
    again.clear()
    assert space.choices(space.prepare(PROGRAMS["gemv"].program)) == first
    assert len(space._choice_cache) == 1
