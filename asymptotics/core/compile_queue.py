"""The queue of kernel signatures to compile and the background compiler that empties it.

The queue is the directory ``giantstep-compile`` beside the compiled kernels
(:func:`asymptotics.core.numba_cache.root`), created private (mode 0700) and used only when
this user owns it and nobody else may read it. A job is one JSON file: the kernel's module,
name and source file, the argument *types* as numba typed them for the call (never the
arguments; no pickle), and the caller's ``sys.path``. The compiler (:func:`main`, a detached
process started by :mod:`.coldstart`) holds the file ``lock`` of the queue while it runs: one
compiler at a time across processes. A process that compiles a kernel itself takes that kernel's
lock (:func:`kernel_lock`; the compiler takes it too for each job), so a second process that asks
for the same kernel waits and then loads what the first compiled, while other kernels compile in
other processes at once; every write to numba's cache holds the one lock ``lock.save``
(:func:`locked_save`: numba's index has no lock between processes, numba/numba#10128, and two
saves of one function's index at once could file one signature's code under another's name; the
nested kernels a compile compiles save into their own indexes). Everything the compiler does
goes to ``worker.log`` in the queue (kept); a job it cannot compile leaves ``<job>.failed``
(the error, then the job's file) for the caller to report; a record whose file is not the
caller's (another install sharing the cache) is dropped unreported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

FAILED_FILE = "job file: "  # the second line of a <job>.failed record
SPOOL = "giantstep-compile"
LOCK = "lock"
SAVE_LOCK = "lock.save"  # held while a process writes numba's cache (an index, then its data)
LOG = "worker.log"
LOG_MAX = 1 << 20  # a log larger than this is cut when a compiler starts


# ------------------------------------------------------------------------------------------------
# argument types <-> JSON (a fixed grammar: scalars, arrays of scalars, tuples, omitted defaults)

def _scalars() -> dict:
    from numba.core import types

    return {str(t): t for t in (*types.number_domain, types.boolean)}


def encode(sig: tuple) -> list:
    """JSON-able form of a tuple of numba types; ValueError for a type outside the grammar."""
    from numba.core import types

    scalars = _scalars()

    def one(t):
        if isinstance(t, types.Array) and str(t.dtype) in scalars:
            return {"array": [str(t.dtype), t.ndim, t.layout, not t.mutable, t.aligned]}
        if isinstance(t, types.Omitted):
            v = t.value
            if v is None or isinstance(v, (bool, int, float, str)):
                return {"omitted": v}
        if isinstance(t, types.BaseTuple):
            return {"tuple": [one(x) for x in t.types]}
        if str(t) in scalars and scalars[str(t)] == t:
            return str(t)
        raise ValueError(f"no JSON form for the numba type {t}")

    out = [one(t) for t in sig]
    if decode(out) != tuple(sig):  # the compiler must compile exactly what the caller looks up
        raise ValueError(f"the numba types {sig} do not survive JSON")
    return out


def decode(data: list) -> tuple:
    """The numba types of :func:`encode`'s output (nothing but the grammar is ever built)."""
    from numba.core import types

    scalars = _scalars()

    def one(d):
        if isinstance(d, str):
            return scalars[d]
        if "array" in d:
            dtype, ndim, layout, readonly, aligned = d["array"]
            return types.Array(scalars[dtype], int(ndim), str(layout), readonly=bool(readonly),
                               aligned=bool(aligned))
        if "omitted" in d:
            return types.Omitted(d["omitted"])
        if "tuple" in d:
            return types.BaseTuple.from_types([one(x) for x in d["tuple"]])
        raise ValueError(f"unknown type {d!r}")

    return tuple(one(d) for d in data)


def job_name(module: str, name: str, sig_json: list) -> str:
    text = json.dumps([module, name, sig_json], sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:20]


# ------------------------------------------------------------------------------------------------
# the private queue directory and its lock

def spool_dir(create: bool = True) -> Path | None:
    """The queue directory, private to this user; None where there is none (no writable cache,
    another owner, a directory others may read or write)."""
    from asymptotics.core import numba_cache

    base = numba_cache.root()
    if base is None or not numba_cache.writable():
        return None
    path = Path(base) / SPOOL
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
        if hasattr(os, "getuid"):
            if st.st_uid != os.getuid():
                return None
            if st.st_mode & 0o077:
                os.chmod(path, 0o700)
    except OSError:
        return None
    return path


class FileLock:
    """An exclusive lock on ``path`` across processes (``fcntl.flock``; ``msvcrt`` on Windows);
    re-entrant in a process (a thread lock in front, a count)."""

    _PROCESS = threading.RLock()

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh = None
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> bool:
        if not self._PROCESS.acquire(timeout=-1 if timeout is None else timeout):
            return False
        if self._depth:
            self._depth += 1
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            fh = open(self.path, "a+")
        except OSError:
            self._PROCESS.release()
            raise
        while True:
            try:
                lock_fh(fh)
                break
            except OSError:
                if deadline is not None and time.monotonic() >= deadline:
                    fh.close()
                    self._PROCESS.release()
                    return False
                time.sleep(0.1)
        self._fh, self._depth = fh, 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if not self._depth:
            with contextlib.suppress(OSError):
                unlock_fh(self._fh)
            self._fh.close()
            self._fh = None
        self._PROCESS.release()

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lock now (this process must not hold it)."""
        try:
            fh = open(self.path, "a+")
        except OSError:
            return False
        try:
            lock_fh(fh)
        except OSError:
            return True
        finally:
            with contextlib.suppress(OSError):
                unlock_fh(fh)
            fh.close()
        return False


def lock_fh(fh) -> None:
    if os.name == "nt":
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def unlock_fh(fh) -> None:
    if os.name == "nt":
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


_LOCKS: dict[str, FileLock] = {}


def lock(spool: Path, name: str = LOCK) -> FileLock:
    """The lock file ``name`` of the queue (the compiler's by default), one object a process."""
    path = Path(spool) / name
    return _LOCKS.setdefault(str(path), FileLock(path))


def kernel_lock(fn) -> str:
    """The name of the lock a compile of kernel ``fn`` (its Python function) holds."""
    text = f"{fn.__module__}.{fn.__qualname__}"
    return f"{LOCK}.{hashlib.sha1(text.encode()).hexdigest()[:16]}"


def locked_save(save):
    """numba's ``save_overload`` of a kernel's cache under the queue's :data:`SAVE_LOCK` (no
    queue directory: numba's own); a lock not had within 600 s: nothing saved (the kernel stays
    compiled in this process alone)."""

    def save_overload(sig, data):
        spool = spool_dir()
        if spool is None:
            return save(sig, data)
        lk = lock(spool, SAVE_LOCK)
        if not lk.acquire(timeout=600):
            return None
        try:
            return save(sig, data)
        finally:
            lk.release()

    return save_overload


def stale(record: Path, file: str) -> bool:
    """A ``.failed`` record whose job was another file's (an install sharing the cache)."""
    try:
        lines = record.read_text().splitlines()
    except OSError:
        return False
    for line in lines[1:]:
        if line.startswith(FAILED_FILE):
            return line[len(FAILED_FILE):] != file
    return False


def sys_path() -> list[str]:
    """``sys.path``'s directories, absolute (a job's imports in the compiler)."""
    out = []
    for p in sys.path:
        p = os.path.abspath(p or os.getcwd())
        if os.path.isdir(p) and p not in out:
            out.append(p)
    return out


def write_job(spool: Path, name: str, job: dict) -> Path:
    path = spool / f"{name}.json"
    if not path.exists():
        tmp = spool / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, path)
    return path


def pending(spool: Path) -> bool:
    """Whether signatures are queued or a compiler runs (tests and benchmarks wait on it)."""
    return any(Path(spool).glob("*.json")) or lock(spool).held_elsewhere()


# ------------------------------------------------------------------------------------------------
# the background compiler

def _log(msg: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {msg}", flush=True)


def _compile(job: dict, spool: Path | None = None) -> str:
    import importlib

    for p in job.get("sys_path", []):
        if p not in sys.path:
            sys.path.append(p)
    module = importlib.import_module(job["module"])
    disp = getattr(module, job["name"])
    here = os.path.realpath(getattr(disp, "py_func", None).__code__.co_filename)
    if here != os.path.realpath(job["file"]):
        raise RuntimeError(f"{job['module']}.{job['name']} is {here} here, {job['file']} in "
                           "the calling process (different sys.path)")
    sig = decode(job["types"])
    lk = lock(spool, kernel_lock(disp.py_func)) if spool is not None else None
    if lk is not None:
        lk.acquire()
    try:
        disp.compile(sig)
    finally:
        if lk is not None:
            lk.release()
    if sig not in disp.overloads:
        raise RuntimeError(f"compiled, but not under the queued signature {sig}")
    return str(sig)


def work(spool: Path, idle: float = 2.0, locked: int | None = None) -> int:
    """Compile every queued signature (oldest first) into numba's cache, holding the queue's
    lock (``locked``: the descriptor of the lock file the starting process locked for this
    compiler); stop after ``idle`` seconds without work. Returns the number compiled."""
    spool = Path(spool)
    lk = lock(spool)
    if locked is not None:
        FileLock._PROCESS.acquire()
        lk._fh, lk._depth = os.fdopen(locked, "a+"), 1
    else:
        lk.acquire()
    done = 0
    try:
        _log(f"compiler started (python {sys.executable}, numba cache {spool.parent})")
        last = time.monotonic()
        while True:
            jobs = []
            for p in spool.glob("*.json"):
                with contextlib.suppress(OSError):
                    jobs.append((p.stat().st_mtime, p))
            if not jobs:
                if time.monotonic() - last > idle:
                    _log(f"compiler done: {done} signatures")
                    return done
                time.sleep(0.2)
                continue
            for _, path in sorted(jobs):
                t0 = time.monotonic()
                try:
                    job = json.loads(path.read_text())
                except FileNotFoundError:
                    continue
                except (OSError, ValueError) as exc:
                    job = {"module": "?", "name": path.name}
                    err = f"unreadable job {path.name}: {exc}"
                else:
                    try:
                        sig = _compile(job, spool)
                        err = None
                        done += 1
                        _log(f"compiled {job['module']}.{job['name']}{sig} "
                             f"in {time.monotonic() - t0:.1f} s")
                    except Exception as exc:  # noqa: BLE001 (reported to the caller, logged)
                        err = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
                        _log(f"FAILED {job.get('module')}.{job.get('name')}:\n"
                             + traceback.format_exc())
                if err is not None:
                    with contextlib.suppress(OSError):
                        path.with_suffix(".failed").write_text(
                            err + "\n" + FAILED_FILE + str(job.get("file", "?")) + "\n")
                path.unlink(missing_ok=True)
                last = time.monotonic()
    finally:
        lk.release()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spool = Path(argv[0])
    try:
        work(spool, locked=int(argv[1]) if len(argv) > 1 else None)
    except Exception:  # noqa: BLE001 (the log is where the caller's message points)
        _log("compiler crashed:\n" + traceback.format_exc())
        with contextlib.suppress(OSError):
            (spool / "worker.failed").write_text(traceback.format_exc().splitlines()[-1] + "\n")
        return 1
    return 0


