"""The first run on an empty numba cache (asymptotics.core.coldstart): the kernels run interpreted
and give the compiled numbers within the solver's tolerance; one line on stderr says so; the
background compiler fills the cache so that the next run is compiled and silent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import asymptotics as A
from asymptotics.core import coldstart

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = [
    dict(),  # the defaults: the network theory at p = inf
    dict(sigma="relu", target="sin", alpha0=0.5, eta=3.0, lam=0.1, beta=0.5),
    dict(model="srf", sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=2.0),
    dict(model="rf", sigma="erf", target="he2", eta=0.0, lam=0.001),
    dict(sigma="tanh", target="tanh", p=500),
]
ALPHAS = [0.3, 2.0, 5.0]
CODE = """
import json, sys
import asymptotics as A
settings, alphas = json.loads(sys.argv[1])
out = [[A.risk(a, **kw).risk for a in alphas] for kw in settings]
df = A.risk_curve([0.5, 1.0, 2.0, 4.0])
print(json.dumps({"points": out, "curve": df.risk.tolist()}))
"""


def _run(code: str, cache: Path, mode: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), GIANTSTEP_COLD_START=mode,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=str(ROOT))


def test_interpreted_first_run_gives_the_compiled_numbers(tmp_path):
    out = _run(CODE, tmp_path / "numba", "interpret", json.dumps([SETTINGS, ALPHAS]))
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [coldstart.MESSAGE_NO_WORKER]  # one line, nothing else
    got = json.loads(out.stdout)
    assert not (tmp_path / "numba" / coldstart.SPOOL).exists()  # no background compiler
    for kw, row in zip(SETTINGS, got["points"], strict=True):
        want = [A.risk(a, **kw).risk for a in ALPHAS]
        assert np.all(np.isfinite(want))
        np.testing.assert_allclose(row, want, rtol=1e-10, atol=0)
    want = A.risk_curve([0.5, 1.0, 2.0, 4.0]).risk.to_numpy()
    np.testing.assert_allclose(got["curve"], want, rtol=1e-10, atol=0)


def test_compile_mode_is_silent():
    code = "import asymptotics as A; print(A.risk(2.0, model='rf', eta=0.0, lam=0.1).risk)"
    out = _run(code, Path(os.environ["NUMBA_CACHE_DIR"]), "compile")  # the suite's cache
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert float(out.stdout) == A.risk(2.0, model="rf", eta=0.0, lam=0.1).risk


def test_interpreted_failure_falls_back_to_the_compiled_kernel(monkeypatch):
    """A kernel whose interpreted run raises (CPython's semantics, not numba's) is compiled and
    gives the compiled answer; arrays it wrote into are restored first."""
    from asymptotics.measures.channels import population_bulk

    rho = np.linspace(0.5, 2.0, 7)
    F = np.full(7, 1.0 / 7)
    want = np.zeros(14)
    got = want.copy()
    population_bulk(want, 0.7, rho, F, 0.1, 1.0, True)

    calls = []

    def boom(out, beta, lam, wts, s0, s1, full):  # population_bulk's parameters
        calls.append(1)
        out[:] = 123.0
        raise ZeroDivisionError

    disp = coldstart.ColdDispatcher(py_func=population_bulk.py_func, locals={},
                                 targetoptions=dict(population_bulk.targetoptions))
    monkeypatch.setattr(disp, "py_func", boom)
    monkeypatch.setattr(coldstart, "is_cached", lambda d, sig: False)
    monkeypatch.setenv(coldstart.ENV, "interpret")

    class Cache:  # not numba's NullCache, so the cold path is taken; never on disk
        def load_overload(self, sig, ctx):
            return None

        def save_overload(self, sig, cres):
            pass

    disp._cache = Cache()
    disp(got, 0.7, rho, F, 0.1, 1.0, True)
    assert calls == [1]
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_background_compiler_fills_the_cache(tmp_path):
    cache = tmp_path / "numba"
    code = "import asymptotics as A; print(repr(A.risk(2.0).risk))"
    first = _run(code, cache, "auto")
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [coldstart.MESSAGE]
    spool = cache / coldstart.SPOOL
    deadline = time.monotonic() + 900
    while coldstart.pending(spool):
        assert time.monotonic() < deadline
        time.sleep(2)
    second = _run(code, cache, "auto")
    assert second.returncode == 0, second.stderr
    assert second.stderr == ""  # everything the first point needs is cached
    assert abs(float(second.stdout) - float(first.stdout)) <= 1e-10 * abs(float(first.stdout))


class _Recorder:
    """A stand-in for the queue's file lock that records whether it is held."""

    def __init__(self) -> None:
        self.held, self.acquired = 0, 0

    def acquire(self, timeout: float | None = None) -> bool:
        self.held += 1
        self.acquired += 1
        return True

    def release(self) -> None:
        self.held -= 1


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("how", ["compile", "auto"])
def test_a_compile_from_a_call_holds_the_queues_lock(monkeypatch, tmp_path, how, cached):
    """Every compile numba starts from a call (the first signature in compile mode, a second
    signature of a kernel already compiled in any mode) holds the queue's lock unless the
    signature is cached (numba's cache has no lock between processes); a cached one loads
    without waiting for it."""
    from asymptotics.core import compile_queue

    lock = _Recorder()
    monkeypatch.setenv(coldstart.ENV, how)
    monkeypatch.setattr(compile_queue, "spool_dir", lambda create=True: tmp_path)
    names = []
    monkeypatch.setattr(compile_queue, "lock",
                        lambda spool, name=compile_queue.LOCK: names.append(name) or lock)
    monkeypatch.setattr(coldstart, "is_cached", lambda d, sig: cached)

    def twice(x, y=2):
        return x * y

    disp = coldstart.kernel(cache=False)(twice)
    held = []
    original = disp.compile

    def compile_(sig):
        held.append(lock.held)
        return original(sig)

    monkeypatch.setattr(disp, "compile", compile_)
    disp.compile(tuple(coldstart.signature(disp, (1.5,))))  # a first signature, compiled
    held.clear()
    assert disp(3) == 6  # a second signature (int, Omitted(2)): numba compiles it on the call
    assert held and all(h == (0 if cached else 1) for h in held)
    assert lock.held == 0 and lock.acquired == (0 if cached else 1)
    assert names == ([] if cached else [compile_queue.kernel_lock(twice)])  # the kernel's own


def test_a_compiled_kernel_takes_numbas_call_and_stays_interpreted_in_an_interpreted_one(
        monkeypatch):
    """Once compiled, a kernel is numba's own dispatcher (no Python frame per call); a
    signature it lacks, called from inside an interpreted kernel, runs its source (omitted
    defaults filled in) instead of compiling there."""
    monkeypatch.setenv(coldstart.ENV, "compile")

    def scaled(x, y=2.0):
        return x * y

    disp = coldstart.kernel(cache=False)(scaled)
    assert type(disp) is coldstart.ColdDispatcher
    assert disp(1.5) == 3.0 and disp(2.5) == 5.0
    assert type(disp) is coldstart.WarmDispatcher and len(disp.overloads) == 1
    coldstart._LOCAL.depth = 1
    try:
        assert disp(np.int32(3)) == 6.0  # int32: not compiled; the source, y = 2.0
        assert disp(1.5, 3.0) == 4.5  # float, float: not compiled either
    finally:
        coldstart._LOCAL.depth = 0
    assert len(disp.overloads) == 1
    assert disp(np.int32(3)) == 6.0 and len(disp.overloads) == 2  # outside: compiled


def test_a_queue_call_that_raises_is_not_the_callers(monkeypatch):
    """``kernel_ready``'s tiny call only queues a compile: where it raises (dummy inputs that are
    singular: numba's solve raises LinAlgError once compiled) the caller gets False (its numpy
    path), not the exception (seen on a first run: the coupling's ``_ready``)."""

    class Kernel:
        py_func = staticmethod(lambda: None)
        overloads: dict = {}

    def singular():
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")

    monkeypatch.setattr(coldstart, "mode", lambda: "auto")
    monkeypatch.setattr(coldstart, "signature", lambda disp, args: ())
    monkeypatch.setattr(coldstart, "is_cached", lambda disp, sig: False)
    assert coldstart.kernel_ready(Kernel(), (), singular, compile_mode_ready=True) is False
