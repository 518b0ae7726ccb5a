"""The first run on an empty numba cache: the kernels run interpreted while they compile elsewhere.

Compiling the theory's kernels takes about a minute (far longer than the first number itself),
so every kernel is a :class:`ColdDispatcher` (made by :func:`kernel`, the project's ``njit``): a
numba dispatcher whose call from Python, when the signature is neither compiled in this process
nor in numba's on-disk cache, runs the kernel's own Python source (``py_func``: the same code,
executed by CPython; the kernels it calls run interpreted too) and queues the signature for a
background process (``python -m asymptotics.core.coldstart``, started when this process exits
or :data:`DELAY` seconds later, whichever is first) that compiles it into the cache.
The next call that finds the signature in the cache loads it as usual, in this process too.
While a kernel runs interpreted, stderr gets one line saying so (once a process).

The interpreted run is the same algorithm, but not the same floating point: numpy's pairwise
sums and LAPACK calls instead of numba's loops move the last bits (the solver tolerance is 1e-10;
tests/test_coldstart.py checks interpreted against compiled). Where CPython and numba disagree
on semantics (a float division by zero raises in Python, ``math.sqrt`` of a negative number
raises), the interpreted call fails and the kernel is compiled in this process instead: the
answer is never different, only slower. The mode is ``GIANTSTEP_COLD_START``:

- ``auto`` (default): as above (where no queue can be written, numba's behaviour);
- ``compile``: numba's behaviour (compile on first call, in this process);
- ``interpret``: interpret what is not cached, start no background compilation (tests).

The cache is numba's (``cache=True``): ``NUMBA_CACHE_DIR`` or :func:`numba_cache.cache_root`. The
queue of signatures to compile is the directory ``giantstep-compile`` there (one pickle of the
arguments a kernel, ``worker.pid`` while a compiler runs). Only a kernel's first call in a
process is checked: once it has a compiled signature, a new signature compiles in-process as
with numba.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np
from numba.core import caching
from numba.core.registry import CPUDispatcher

ENV = "GIANTSTEP_COLD_START"
MODES = ("auto", "compile", "interpret")
SPOOL = "giantstep-compile"
PIDFILE = "worker.pid"
MESSAGE = ("giantstep: compiling the numba kernels in the background (once, a minute or two); "
           "until they are cached they run interpreted")
MESSAGE_NO_WORKER = ("giantstep: the numba kernels are not compiled yet; they run interpreted "
                     f"({ENV}=interpret)")


def mode() -> str:
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    return value if value in MODES else "auto"


class _Local(threading.local):
    depth = 0


_LOCAL = _Local()
_ANNOUNCED = False
_LOCK = threading.Lock()


class ColdDispatcher(CPUDispatcher):
    """A numba CPU dispatcher that runs interpreted, and queues a background compilation, while
    the signature of a call from Python is not compiled (see the module)."""

    def __call__(self, *args, **kws):
        if _LOCAL.depth:  # inside an interpreted kernel: stay interpreted
            return self.py_func(*args, **kws)
        if self.overloads or kws:
            return super().__call__(*args, **kws)
        return _cold_call(self, args)


def kernel(*, cache: bool = True, **options):
    """``numba.njit(cache=..., **options)`` returning a :class:`ColdDispatcher`."""
    targetoptions = {"nopython": True, "boundscheck": None, **options}

    def wrap(fn):
        if numba.config.DISABLE_JIT:
            return fn
        disp = ColdDispatcher(py_func=fn, locals={}, targetoptions=targetoptions)
        if cache:
            disp.enable_caching()
        return disp

    return wrap


def _signature(disp: ColdDispatcher, args: tuple) -> tuple:
    return tuple(disp.typeof_pyval(a) for a in args)


def is_cached(disp: ColdDispatcher, sig: tuple) -> bool:
    """Whether numba's on-disk cache holds ``sig`` for ``disp`` (for this source)."""
    try:
        index = disp._cache._cache_file._load_index()
    except Exception:  # an unreadable index: numba decides
        return True
    return any(key[0] == sig for key in index)


def _cold_call(disp: ColdDispatcher, args: tuple):
    how = mode()
    if how == "compile" or isinstance(disp._cache, caching.NullCache):
        return CPUDispatcher.__call__(disp, *args)
    try:
        sig = _signature(disp, args)
    except Exception:
        return CPUDispatcher.__call__(disp, *args)
    if is_cached(disp, sig):
        return CPUDispatcher.__call__(disp, *args)  # numba loads it
    if how == "auto" and not _queue(disp, args, sig):
        return CPUDispatcher.__call__(disp, *args)  # nobody would compile it: numba's way
    _announce(how)
    saved = [(a, a.copy()) for a in args if isinstance(a, np.ndarray) and a.flags.writeable]
    _LOCAL.depth = 1
    try:
        with np.errstate(all="ignore"):
            return disp.py_func(*args)
    except Exception:
        for a, copy in saved:  # undo partial writes, then compile here
            a[...] = copy
    finally:
        _LOCAL.depth = 0
    return CPUDispatcher.__call__(disp, *args)


def _announce(how: str) -> None:
    global _ANNOUNCED
    with _LOCK:
        if _ANNOUNCED:
            return
        _ANNOUNCED = True
    print(MESSAGE if how == "auto" else MESSAGE_NO_WORKER, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# the queue and the background compiler

def spool_dir() -> Path:
    from asymptotics.core.numba_cache import cache_root

    base = os.environ.get("NUMBA_CACHE_DIR") or str(cache_root())
    return Path(base) / SPOOL


def _queue(disp: ColdDispatcher, args: tuple, sig: tuple) -> bool:
    """Queue ``sig`` for the background compiler and make sure one runs; False if impossible
    (a read-only cache directory, an argument that cannot be pickled)."""
    fn = disp.py_func
    try:
        spool = spool_dir()
        spool.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha1(f"{fn.__module__}.{fn.__name__}{sig}".encode()).hexdigest()[:20]
        job = spool / f"{name}.pkl"
        if not job.exists():
            tmp = spool / f".{name}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                readonly = [i for i, a in enumerate(args)
                            if isinstance(a, np.ndarray) and not a.flags.writeable]
                pickle.dump((fn.__module__, fn.__name__, args, readonly), fh)
            os.replace(tmp, job)
    except Exception:
        return False
    _schedule_worker(spool)
    return True


#: seconds after the first queued signature at which the background compiler starts if this
#: process still runs (else it starts when this process exits): a short first command keeps
#: both cores to itself, a long session gets its kernels compiled meanwhile
DELAY = 10.0
_SCHEDULED: set[str] = set()


def _schedule_worker(spool: Path) -> None:
    with _LOCK:
        if str(spool) in _SCHEDULED:
            return
        _SCHEDULED.add(str(spool))
    atexit.register(_start_worker, spool)
    timer = threading.Timer(DELAY, _start_worker, args=(spool,))
    timer.daemon = True
    timer.start()


def _start_worker(spool: Path) -> None:
    try:
        _ensure_worker(spool)
    except Exception:  # the queue stays: the next cold run starts a compiler
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


#: a pid file not touched for this long is stale (its pid may belong to another process now)
STALE = 1800.0


def worker_pid(spool: Path) -> int | None:
    """The pid of the running background compiler of ``spool``, or None."""
    path = spool / PIDFILE
    try:
        pid = int(path.read_text().strip())
        if time.time() - path.stat().st_mtime > STALE:
            return None
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


class _Detached(subprocess.Popen):
    """The background compiler: deliberately not waited for (no "still running" warning when
    this process ends first; reaped by :func:`_ensure_worker` if it ends first)."""

    def __del__(self) -> None:
        pass


_WORKERS: list[_Detached] = []


def _ensure_worker(spool: Path) -> None:
    with _LOCK:
        _WORKERS[:] = [p for p in _WORKERS if p.poll() is None]
        if worker_pid(spool) is not None:
            return
        env = dict(os.environ, **{ENV: "compile"})
        kw = {"start_new_session": True} if os.name == "posix" else {}
        proc = _Detached([sys.executable, "-m", "asymptotics.core.coldstart", str(spool)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, close_fds=True, env=env, **kw)
        _WORKERS.append(proc)
        (spool / PIDFILE).write_text(f"{proc.pid}\n")


def pending(spool: Path | None = None) -> bool:
    """Whether signatures are queued or a background compiler runs (benchmarks wait on it)."""
    spool = spool_dir() if spool is None else spool
    return worker_pid(spool) is not None or any(spool.glob("*.pkl"))


def work(spool: Path, idle: float = 2.0) -> int:
    """The background compiler: compile every queued signature (oldest first) into numba's cache;
    stop after ``idle`` seconds without work. Returns the number compiled."""
    done = 0
    last = time.monotonic()
    while True:
        jobs = sorted(spool.glob("*.pkl"), key=lambda p: p.stat().st_mtime)
        if not jobs:
            if time.monotonic() - last > idle:
                return done
            time.sleep(0.2)
            continue
        for job in jobs:
            try:
                with open(job, "rb") as fh:
                    module, name, args, readonly = pickle.load(fh)
                for i in readonly:  # a read-only array is its own numba type
                    args[i].flags.writeable = False
                disp = getattr(importlib.import_module(module), name)
                disp.compile(_signature(disp, args))
                done += 1
            except Exception:  # a job that cannot compile here compiles in the caller later
                pass
            try:
                job.unlink()
                os.utime(spool / PIDFILE)  # still alive (see STALE)
            except OSError:
                pass
            last = time.monotonic()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spool = Path(argv[0]) if argv else spool_dir()
    me = os.getpid()
    try:
        # a job's kernel module imports the package first: the cache locator, the guard
        work(spool)
    finally:
        try:
            if int((spool / PIDFILE).read_text().strip()) == me:
                (spool / PIDFILE).unlink()
        except (OSError, ValueError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
