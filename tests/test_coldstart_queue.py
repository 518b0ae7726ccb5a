"""The default cold start (``GIANTSTEP_COLD_START`` unset) on an empty cache, with a toy kernel
module imported through ``sys.path`` as a notebook would: the first process runs interpreted and
queues the signatures (JSON types, a private queue), the background compiler compiles exactly
those (a non-contiguous array, a read-only array, a default argument), the second process waits
for it and computes compiled, the third finds everything cached and says nothing. Failures are
reported once with the log's path; a pool worker compiles itself and starts no compiler; no
writable cache, a read-only cache and an unknown numba all keep ``import asymptotics`` working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from asymptotics.core import coldstart, compile_queue, numba_cache

ROOT = Path(__file__).resolve().parents[1]
TOY = '''
from asymptotics.core.coldstart import kernel


@kernel(cache=True, error_model="numpy")
def inner(x):
    return 2.0 * x


@kernel(cache=True, error_model="numpy")
def total(a, n, scale=1.0):
    s = 0.0
    for i in range(a.shape[0]):
        s += inner(a[i]) * scale
    return s * n


@kernel(cache=True, error_model="numpy")
def bad(x):
    return x * float(int.from_bytes(b"\\x01", "little"))
'''
RUN = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import toykern
a = np.arange(10.0)[::2]
ro = np.arange(4.0)
ro.flags.writeable = False
out = [toykern.total(a, 3), toykern.total(a, 3), toykern.total(ro, 2)]
if len(sys.argv) > 2:  # a kernel that runs in Python but that numba cannot compile
    try:
        out.append(toykern.bad(2.0))
    except Exception as exc:
        out.append(type(exc).__name__)
print(json.dumps({"r": out, "sigs": [str(s) for s in toykern.total.signatures],
                  "misses": sum(toykern.total.stats.cache_misses.values())}))
'''


def _toy(tmp: Path) -> Path:
    mods = tmp / "mods"
    mods.mkdir()
    (mods / "toykern.py").write_text(TOY)
    return mods


def _run(code: str, cache: Path, *args: str, mode: str | None = None, **env_extra: str):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.update(env_extra)
    env.pop(coldstart.ENV, None)  # the default mode
    if mode is not None:
        env[coldstart.ENV] = mode
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, timeout=300, cwd=str(cache.parent))
    assert out.returncode == 0, out.stderr
    return out


def _wait(spool: Path, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while coldstart.pending(spool):
        assert time.monotonic() < deadline, "the background compiler did not finish"
        time.sleep(0.2)


def test_default_mode_is_compiled_from_the_second_process_on(tmp_path):
    mods, cache = _toy(tmp_path), tmp_path / "cache"
    spool = cache / compile_queue.SPOOL
    log = spool / compile_queue.LOG
    want = [120.0, 120.0, 24.0]
    first = _run(RUN, cache, str(mods), "bad")
    assert first.stderr.splitlines() == [coldstart.MESSAGE]
    got = json.loads(first.stdout)
    assert got["r"] == [*want, 2.0] and got["sigs"] == []  # interpreted
    assert spool.stat().st_mode & 0o777 == 0o700
    assert not list(spool.glob("*.pkl"))
    # started right away: the compiler may still run; this process waits for it, then loads;
    # the kernel it could not compile is reported once, with the log, and raises numba's error
    second = _run(RUN, cache, str(mods), "bad")
    lines = second.stderr.splitlines()
    # the wait line, when the compiler is still at work on another kernel, comes before or after
    # the failure line (the order of the compiler's jobs; seen both ways on a loaded machine)
    wait = coldstart.MESSAGE_WAIT.format(log=log)
    assert lines.count(wait) <= 1, lines
    lines = [line for line in lines if line != wait]
    assert len(lines) == 1, lines
    assert lines[0].startswith("giantstep: the background compiler could not compile "
                               "toykern.bad (TypingError") and str(log) in lines[0]
    got = json.loads(second.stdout)
    assert got["r"] == [*want, "TypingError"]
    assert len(got["sigs"]) == 2 and got["misses"] == 0  # loaded: compiled by the compiler
    _wait(spool)
    third = _run(RUN, cache, str(mods))
    assert third.stderr == ""
    got = json.loads(third.stdout)
    assert got["r"] == want and len(got["sigs"]) == 2 and got["misses"] == 0
    text = log.read_text()
    assert text.count("compiled toykern.total(") == 2  # exactly the queued signatures, once
    assert "'A'" in text and "omitted(default=1.0)" in text and "FAILED toykern.bad" in text


def _toy_in_process(tmp_path, monkeypatch, writable: bool = True):
    """Import the toy module in this process with its own cache (``tmp_path / 'cache'``)."""
    mods, cache = _toy(tmp_path), tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setattr(numba_cache, "candidates", lambda: [cache])
    monkeypatch.setattr(numba_cache, "ours", lambda f: True)
    monkeypatch.setattr(numba_cache, "_CHOICE", {(cache,): (cache, writable)})
    monkeypatch.syspath_prepend(str(mods))
    monkeypatch.delitem(sys.modules, "toykern", raising=False)
    import toykern

    return toykern, cache


def test_a_pool_worker_compiles_itself_and_starts_no_compiler(tmp_path, monkeypatch, capsys):
    toykern, cache = _toy_in_process(tmp_path, monkeypatch)
    monkeypatch.delenv(coldstart.ENV)
    monkeypatch.setattr(coldstart, "_NO_COMPILER", False)
    monkeypatch.setattr(coldstart, "_SAID", set())
    coldstart.forbid_compiler()
    assert toykern.total(np.arange(3.0), 1) == 6.0 and len(toykern.total.signatures) == 1
    assert capsys.readouterr().err.splitlines() == [
        coldstart.MESSAGE_HERE.format(why="pool worker")]
    spool = cache / compile_queue.SPOOL
    assert not list(spool.glob("*.json")) and not (spool / compile_queue.LOG).exists()
    assert not coldstart._SCHEDULED  # no compiler, now or at exit
    src = (ROOT / "validation" / "protocol" / "pool.py").read_text()
    assert "forbid_compiler()" in src.split("def _worker_init")[1].split("\ndef ")[0]


def test_a_dask_worker_task_also_forbids_the_compiler(monkeypatch):
    """dask workers run no initializer: the task wrapper itself marks the process a worker."""
    from validation.protocol import pool

    monkeypatch.setattr(coldstart, "_NO_COMPILER", False)
    assert pool._call(lambda task: (task, coldstart._NO_COMPILER), 7) == (7, True)


def test_the_lock_excludes_another_process(tmp_path):
    code = ("import fcntl, sys, time\n"
            "fh = open(sys.argv[1], 'a+'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
            "print('held', flush=True); time.sleep(1.5)\n")
    path = tmp_path / compile_queue.LOCK
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        lk = compile_queue.FileLock(path)
        assert lk.held_elsewhere() and compile_queue.pending(tmp_path)
        assert not lk.acquire(timeout=0.3)
        assert lk.acquire(timeout=30)  # once the other process is done
        assert lk.acquire(timeout=0)  # re-entrant in a process
        lk.release()
        lk.release()
        assert not lk.held_elsewhere()
    finally:
        proc.wait(timeout=30)


def test_jobs_are_types_in_json_and_survive_exactly():
    from numba.core import types

    arr = np.zeros((4, 6))[:, ::2]
    ro = np.zeros(3)
    ro.flags.writeable = False
    sig = (numba_typeof(arr), numba_typeof(ro), types.int64, types.float64, types.boolean,
           types.UniTuple(types.float64, 2), types.Omitted(1e12), types.Omitted(None))
    data = compile_queue.encode(sig)
    assert compile_queue.decode(json.loads(json.dumps(data))) == sig
    assert data[0] == {"array": ["float64", 2, "A", False, True]}
    for unsupported in ([types.pyobject], [types.unicode_type]):
        try:
            compile_queue.encode(tuple(unsupported))
        except ValueError:
            continue
        raise AssertionError(f"{unsupported} encoded")


def numba_typeof(x):
    import numba

    return numba.typeof(x)


def test_no_writable_cache_imports_and_says_so_once(tmp_path):
    code = ("import asymptotics, numba.core.caching as c\n"
            "from asymptotics.core.kernel_cache import KERNEL_MODULES\n"
            "import importlib\n"
            "ds = [d for m in KERNEL_MODULES for d in vars(importlib.import_module(m)).values()\n"
            "      if hasattr(d, '_cache')]\n"
            "print(len(ds), all(isinstance(d._cache, c.NullCache) for d in ds))\n")
    out = _run(code, tmp_path / "unused", NUMBA_CACHE_DIR="/dev/null/numba",
               XDG_CACHE_HOME="/dev/null/cache")
    n, all_null = out.stdout.split()
    assert int(n) > 10 and all_null == "True"  # nothing cached, so nothing in the package tree
    tried = "/dev/null/numba, /dev/null/cache/giantstep/numba"
    assert out.stderr.splitlines() == [coldstart.MESSAGE_NO_CACHE.format(tried=tried)]


def test_an_unknown_numba_degrades_to_numba_njit(tmp_path):
    mods = _toy(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "import numba.core.caching as c, numba.core.registry as r\n"
            "del c._SourceFileBackedLocatorMixin, r.CPUDispatcher  # a numba that changed\n"
            "import numpy as np, asymptotics, toykern\n"
            "from asymptotics.core import numba_cache\n"
            "print(type(toykern.total).__name__, numba_cache.INSTALLED,\n"
            "      toykern.total(np.arange(3.0), 1))\n")
    out = _run(code, tmp_path / "cache", str(mods))
    assert out.stdout.split() == ["CPUDispatcher", "False", "6.0"]
    assert out.stderr == ""


def test_a_read_only_cache_is_read_and_never_written(tmp_path, monkeypatch):
    import importlib

    monkeypatch.setenv(coldstart.ENV, "compile")
    toykern, cache = _toy_in_process(tmp_path, monkeypatch)
    assert type(toykern.total._cache._impl.locator).__name__ == "UserCacheLocator"
    assert toykern.total(np.arange(3.0), 1) == 6.0
    files = sorted(p.name for p in cache.rglob("*"))
    monkeypatch.setitem(numba_cache._CHOICE, (cache,), (cache, False))
    reader = importlib.reload(toykern).total  # a process on the read-only cache
    assert reader(np.arange(3.0), 1) == 6.0
    assert sum(reader.stats.cache_hits.values()) == 1  # loaded from the read-only cache
    assert reader(np.arange(3), 1) == 6.0  # a new signature compiles, is not written
    assert sorted(p.name for p in cache.rglob("*")) == files


def test_a_failure_record_of_another_install_is_not_reported(tmp_path, monkeypatch, capsys):
    """Two installs sharing a cache queue jobs of the same name; a ``.failed`` record carries its
    job's file, and a record of another file is dropped without a word (ours is reported)."""
    toykern, cache = _toy_in_process(tmp_path, monkeypatch)
    monkeypatch.delenv(coldstart.ENV, raising=False)
    monkeypatch.setattr(coldstart, "_SAID", set())
    monkeypatch.setattr(coldstart, "_NO_COMPILER", False)
    monkeypatch.setattr(coldstart, "_schedule_worker", lambda spool: None)  # no compiler here
    spool = compile_queue.spool_dir()
    a = np.arange(3.0)
    sig = coldstart.signature(toykern.total, (a, 1))
    name = compile_queue.job_name("toykern", "total", compile_queue.encode(sig))
    record = spool / f"{name}.failed"
    other = "/other/toykern.py"
    record.write_text("TypingError: elsewhere\n" + compile_queue.FAILED_FILE + other + "\n")
    assert toykern.total(a, 1) == 6.0
    assert "could not compile" not in capsys.readouterr().err
    assert not record.exists()
    mine = toykern.total.py_func.__code__.co_filename
    record.write_text("TypingError: here\n" + compile_queue.FAILED_FILE + mine + "\n")
    monkeypatch.setattr(coldstart, "is_cached", lambda *a: False)
    assert toykern.total(a + 1.0, 1) == 12.0
    err = capsys.readouterr().err
    assert "could not compile toykern.total (TypingError: here)" in err and "job file" not in err


def test_kernels_compile_while_another_process_compiles_another_and_saves_hold_one_lock(
        tmp_path, monkeypatch):
    """A compile holds its kernel's lock, not the queue's: with another process holding the
    compiler's lock and another kernel's, a kernel compiles here at once; every save into numba's
    cache holds the queue's save lock (numba's index has no lock between processes)."""
    import threading

    monkeypatch.setenv(coldstart.ENV, "compile")
    toykern, cache = _toy_in_process(tmp_path, monkeypatch)
    spool = compile_queue.spool_dir()
    names = [compile_queue.LOCK, compile_queue.kernel_lock(toykern.bad.py_func)]
    assert compile_queue.kernel_lock(toykern.total.py_func) not in names
    code = ("import fcntl, sys, time\n"
            "fhs = [open(p, 'a+') for p in sys.argv[1:]]\n"
            "[fcntl.flock(fh, fcntl.LOCK_EX) for fh in fhs]\n"
            "print('held', flush=True); time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, *(str(spool / n) for n in names)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        out = []
        worker = threading.Thread(target=lambda: out.append(toykern.total(np.arange(3.0), 1)),
                                  daemon=True)
        worker.start()
        worker.join(timeout=60)
        assert out == [6.0]  # compiled (and saved) while the other process held its locks
        assert compile_queue.FileLock(spool / names[1]).held_elsewhere()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert (spool / compile_queue.SAVE_LOCK).exists()
    held = []
    save = compile_queue.locked_save(
        lambda sig, data: held.append(compile_queue.lock(spool, compile_queue.SAVE_LOCK)._depth))
    save(None, None)
    assert held == [1] and compile_queue.lock(spool, compile_queue.SAVE_LOCK)._depth == 0
