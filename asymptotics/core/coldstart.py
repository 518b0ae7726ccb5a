"""The first run on an empty numba cache: the kernels run interpreted while they compile elsewhere.

Compiling the theory's kernels takes one to a few minutes, far longer than the first number, so
every kernel is a :class:`ColdDispatcher` (made by :func:`kernel`, the project's ``njit``): a numba
dispatcher whose first call from Python in a process, when its signature is neither compiled here
nor in numba's on-disk cache, decides as follows (``GIANTSTEP_COLD_START`` unset or ``auto``):

1. nobody asked for the signature yet: run the kernel's Python source (``py_func``; the kernels it
   calls run interpreted too, unless compiled for those arguments already), queue the
   signature's *types* (:mod:`.compile_queue`) and start the background compiler when this
   process exits or :data:`DELAY` seconds later; stderr gets :data:`MESSAGE` once. Later calls
   in this process load the compiled kernel as soon as the cache has it.
2. another process queued it already: take the queue's lock, i.e. wait for the running compiler
   (one line, :data:`MESSAGE_WAIT`), then load the kernel it compiled; if it is still missing
   (no compiler ran, or it failed: one line naming its log), compile it here under the lock.
   So the second process on an empty cache computes compiled, at the latest.
3. no private queue directory (read-only cache, another owner) or a type outside the queue's
   grammar, or a pool worker (:func:`forbid_compiler`): compile here, under the lock if any.

Once a kernel holds a compiled signature it becomes a :class:`WarmDispatcher`, numba's own call
(no Python frame per call). The interpreted run is the same algorithm, not the same floating
point (numpy's sums and LAPACK instead of numba's loops move the last bits;
tests/test_coldstart.py compares). Where CPython
and numba disagree (a float division by zero raises in Python) the interpreted call fails and the
kernel is compiled here instead. ``GIANTSTEP_COLD_START=compile``: numba's behaviour (compile on
first call, here); ``interpret``: interpret what is not cached, queue nothing (tests). A numba
whose internals this module does not know gives plain ``numba.njit(cache=True)`` kernels.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
import sys
import threading
from pathlib import Path

import numba
import numpy as np

from asymptotics.core import compile_queue as cq
from asymptotics.core import numba_cache

ENV = "GIANTSTEP_COLD_START"
SPOOL = cq.SPOOL  # the queue directory's name, in the cache
MODES = ("auto", "compile", "interpret")
MESSAGE = ("giantstep: compiling the numba kernels in the background (once, a minute or two); "
           "until they are cached they run interpreted")
MESSAGE_NO_WORKER = ("giantstep: the numba kernels are not compiled yet; they run interpreted "
                     f"({ENV}=interpret)")
MESSAGE_WAIT = ("giantstep: waiting for another process that compiles the numba kernels "
                "(log: {log})")
MESSAGE_WAIT_PEER = ("giantstep: waiting for another process that compiles numba kernels into "
                     "the same cache ({cache})")
MESSAGE_FAILED = ("giantstep: the background compiler could not compile {what} ({err}); "
                  "compiling it in this process (log: {log})")
MESSAGE_HERE = ("giantstep: compiling the numba kernels in this process (once, a minute or "
                "two; {why})")
MESSAGE_NO_CACHE = ("giantstep: no writable directory for the numba kernels (tried {tried}); "
                    "they compile in every process (a minute or two; set NUMBA_CACHE_DIR)")


def mode() -> str:
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    return value if value in MODES else "auto"


_SAID: set[str] = set()
_LOCK = threading.Lock()
_NO_COMPILER = False
_MINE: set[str] = set()  # jobs this process queued (it interprets those until they are cached)


def say(key: str, line: str) -> None:
    """Print ``line`` on stderr once a process per ``key``."""
    with _LOCK:
        if key in _SAID:
            return
        _SAID.add(key)
    print(line, file=sys.stderr, flush=True)


def forbid_compiler() -> None:
    """This process (a pool worker) never starts a background compiler nor interprets: it
    compiles what is not cached itself, under the queue's lock (so a second worker loads)."""
    global _NO_COMPILER
    _NO_COMPILER = True


class _Local(threading.local):
    depth = 0


_LOCAL = _Local()

try:
    from numba.core import caching as _caching
    from numba.core.registry import CPUDispatcher as _Base

    class _Compiling(_Base):
        def _compile_for_args(self, *args, **kws):
            """numba's compile on a call no compiled signature matches, under the queue's lock
            (:func:`_compile_lock`); inside an interpreted kernel the source (numba calls it)."""
            if _LOCAL.depth:
                return lambda *a: self.py_func(*(x.value if _omitted(x) else x for x in a))
            with _compile_lock(self, args, kws):
                return super()._compile_for_args(*args, **kws)

    class WarmDispatcher(_Compiling):
        """A :class:`ColdDispatcher` once it holds a compiled signature: numba's own call."""

    class ColdDispatcher(_Compiling):
        """A numba CPU dispatcher that runs interpreted while its signature compiles in the
        background (see the module)."""

        def __call__(self, *args, **kws):
            if _LOCAL.depth:  # inside an interpreted kernel: stay interpreted
                return self.py_func(*args, **kws)
            if self.overloads or kws:
                if self.overloads:
                    self.__class__ = WarmDispatcher
                return _Base.__call__(self, *args, **kws)
            return _cold_call(self, args)

except Exception:  # noqa: BLE001 (a numba change: plain numba dispatchers)
    ColdDispatcher = None  # type: ignore[assignment,misc]


def kernel(*, cache: bool = True, **options):
    """``numba.njit(cache=..., **options)`` returning a :class:`ColdDispatcher` (numba's own
    dispatcher where this module does not know the installed numba)."""

    def wrap(fn):
        if numba.config.DISABLE_JIT:
            return fn
        if ColdDispatcher is None:
            return numba.njit(cache=cache and numba_cache.root() is not None, **options)(fn)
        targetoptions = {"nopython": True, "boundscheck": None, **options}
        try:
            disp = ColdDispatcher(py_func=fn, locals={}, targetoptions=targetoptions)
        except Exception:  # noqa: BLE001
            return numba.njit(cache=cache and numba_cache.root() is not None, **options)(fn)
        if cache:
            _enable_caching(disp)
        return disp

    return wrap


def _enable_caching(disp) -> None:
    """numba's cache for ``disp``, but never inside the package tree; a read-only cache is read."""
    try:
        if numba_cache.root() is None:
            raise OSError("no cache directory")
        disp.enable_caching()
        disp._cache.save_overload = cq.locked_save(disp._cache.save_overload)
        locator = disp._cache._impl.locator
        if numba_cache.INSTALLED and numba_cache.ours(disp.py_func.__code__.co_filename) and \
                type(locator).__name__ != "UserCacheLocator":
            raise OSError(f"numba would cache {disp.py_func.__name__} in {locator._cache_path}")
        if not numba_cache.writable():  # a read-only cache: load from it, never write
            disp._cache.save_overload = lambda sig, data: None
    except Exception:  # noqa: BLE001 (nowhere to cache, or a numba change: no cache)
        disp._cache = _caching.NullCache()
        tried = ", ".join(str(p) for p in numba_cache.candidates())
        say("nocache", MESSAGE_NO_CACHE.format(tried=tried))


def signature(disp, args: tuple) -> tuple:
    """The argument types numba compiles for ``disp(*args)``: the types of the arguments, then
    ``Omitted(default)`` for every parameter left to its default (numba's C dispatcher does so)."""
    params = list(inspect.signature(disp.py_func).parameters.values())
    if len(args) > len(params) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                      for p in params):
        raise TypeError("only positional parameters")
    sig = [disp.typeof_pyval(a) for a in args]
    for p in params[len(args):]:
        if p.default is p.empty:
            raise TypeError(f"missing argument {p.name}")
        sig.append(numba.core.types.Omitted(p.default))
    return tuple(sig)


def is_cached(disp, sig: tuple) -> bool:
    """Whether numba's on-disk cache holds ``sig`` for ``disp`` (this source, this machine)."""
    try:
        index = disp._cache._cache_file._load_index()
        magic = disp.targetctx.codegen().magic_tuple()
    except Exception:  # noqa: BLE001 (an unreadable index or a numba change: numba decides)
        return True
    return any(key[0] == sig and key[1] == magic for key in index)


_READY: set = set()


def kernel_ready(disp, args: tuple, queue, *, compile_mode_ready: bool = False) -> bool:
    """Whether ``disp(*args)`` runs compiled (in this process or from numba's on-disk cache);
    otherwise ``queue()`` (one tiny call of ``disp``) queues its compilation and the caller's
    numpy path runs meanwhile. ``compile_mode_ready``: in ``GIANTSTEP_COLD_START=compile`` mode
    the kernel counts as ready (it compiles on its first call)."""
    if id(disp) in _READY:
        return True
    if not hasattr(disp, "py_func") or getattr(disp, "overloads", None) \
            or (compile_mode_ready and mode() == "compile"):
        _READY.add(id(disp))
        return True
    try:
        ready = is_cached(disp, signature(disp, args))
    except Exception:  # noqa: BLE001 (a numba change: numba decides)
        ready = True
    if ready:
        _READY.add(id(disp))
    else:
        try:  # (its dummy inputs may be singular: numba's solve raises; the caller's path runs)
            queue()
        except Exception:  # noqa: BLE001
            pass
    return ready


def _omitted(arg) -> bool:
    """Whether numba passed ``arg`` for a parameter left to its default (an ``OmittedArg``)."""
    return type(arg).__name__ == "OmittedArg"


@contextlib.contextmanager
def _compile_lock(disp, args: tuple, kws: dict):
    """The kernel's lock in the queue (:func:`.compile_queue.kernel_lock`) around a compile of
    ``disp`` for ``args`` (omitted defaults come as ``OmittedArg``) whose signature numba's
    cache lacks (a cached one loads without it: numba replaces its files whole; its saves hold
    the save lock); none without a private queue directory."""
    try:
        sig = tuple(numba.core.types.Omitted(a.value) if _omitted(a) else disp.typeof_pyval(a)
                    for a in args)
        spool = None if kws or is_cached(disp, sig) else cq.spool_dir()
    except Exception:  # noqa: BLE001 (a numba change or an untypable argument: numba decides)
        spool = None
    lk = cq.lock(spool, cq.kernel_lock(disp.py_func)) if spool is not None else None
    if lk is not None and not lk.acquire(timeout=0):
        say("wait", MESSAGE_WAIT_PEER.format(cache=spool.parent))
        if not lk.acquire(timeout=3600):
            lk = None
    try:
        yield
    finally:
        if lk is not None:
            lk.release()


def _compile_here(disp, sig: tuple, spool: Path | None, why: str | None = None):
    """Compile ``sig`` in this process, holding the queue's lock where there is one (a compiler
    that runs finishes first; what it compiled then loads)."""
    lk = cq.lock(spool) if spool is not None else None
    if lk is not None and not lk.acquire(timeout=0):
        say("wait", MESSAGE_WAIT.format(log=spool / cq.LOG))
        if not lk.acquire(timeout=3600):
            lk = None
    try:
        if why is not None and not is_cached(disp, sig):
            say("here", MESSAGE_HERE.format(why=why))
        disp.compile(sig)
    finally:
        if lk is not None:
            lk.release()


def _cold_call(disp, args: tuple):
    how = mode()
    base = super(ColdDispatcher, disp).__call__
    if how == "compile" or isinstance(disp._cache, _caching.NullCache):
        return base(*args)
    try:
        sig = signature(disp, args)
        if is_cached(disp, sig):
            return base(*args)  # numba loads it
    except Exception:  # noqa: BLE001 (an argument numba types another way: numba's call)
        return base(*args)
    fn = disp.py_func
    spool = cq.spool_dir() if how == "auto" else None
    try:
        types_json = cq.encode(sig)
    except ValueError:
        _compile_here(disp, sig, spool, "an argument type the compile queue does not carry")
        return base(*args)
    name = cq.job_name(fn.__module__, fn.__qualname__, types_json)
    if how == "auto":
        if spool is None:
            _compile_here(disp, sig, None, "the numba cache is read-only or not private")
            return base(*args)
        failed = spool / f"{name}.failed"
        if failed.exists() and cq.stale(failed, fn.__code__.co_filename):
            failed.unlink(missing_ok=True)  # another install's job of the same name: not ours
        if failed.exists() or (spool / "worker.failed").exists():
            try:
                err = (failed if failed.exists() else spool / "worker.failed").read_text()
                err = err.split("\n" + cq.FAILED_FILE)[0].strip()
            except OSError:
                err = "?"
            say("failed", MESSAGE_FAILED.format(what=f"{fn.__module__}.{fn.__qualname__}",
                                                err=err, log=spool / cq.LOG))
            _compile_here(disp, sig, spool)
            failed.unlink(missing_ok=True)
            (spool / "worker.failed").unlink(missing_ok=True)
            return base(*args)
        if _NO_COMPILER:
            _compile_here(disp, sig, spool, "pool worker")
            return base(*args)
        if name not in _MINE and (spool / f"{name}.json").exists():
            _compile_here(disp, sig, spool, "no background compiler runs")  # another queued it
            return base(*args)
        try:
            cq.write_job(spool, name, {"module": fn.__module__, "name": fn.__qualname__,
                                       "file": fn.__code__.co_filename, "types": types_json,
                                       "sys_path": cq.sys_path()})
        except OSError:
            _compile_here(disp, sig, spool, "the compile queue cannot be written")
            return base(*args)
        _MINE.add(name)
        _schedule_worker(spool)
    say("interpret", MESSAGE if how == "auto" else MESSAGE_NO_WORKER)
    saved = [(a, a.copy()) for a in args if isinstance(a, np.ndarray) and a.flags.writeable]
    _LOCAL.depth = 1
    try:
        with np.errstate(all="ignore"):
            return disp.py_func(*args)
    except Exception:  # noqa: BLE001 (CPython's semantics, not numba's: compile here)
        for a, copy in saved:  # undo partial writes
            a[...] = copy
    finally:
        _LOCAL.depth = 0
    _compile_here(disp, sig, spool)
    return base(*args)


# ------------------------------------------------------------------------------------------------
# starting the background compiler

#: seconds after the first queued signature at which the background compiler starts if this
#: process still runs (else it starts when this process exits): a short first command keeps
#: both cores to itself, a long session gets its kernels compiled meanwhile
DELAY = 10.0
_SCHEDULED: dict[str, float] = {}
_CHILDREN: list = []


def _schedule_worker(spool: Path) -> None:
    """Start the compiler at exit or :data:`DELAY` seconds from the first job, whichever comes
    first; a job queued later in a long session starts one at once (unless one runs)."""
    import time

    with _LOCK:
        first = str(spool) not in _SCHEDULED
        if first:
            _SCHEDULED[str(spool)] = time.monotonic()
        fired = time.monotonic() - _SCHEDULED[str(spool)] > DELAY
    if first:
        atexit.register(start_worker, spool)
        timer = threading.Timer(DELAY, start_worker, args=(spool,))
        timer.daemon = True
        timer.start()
    elif fired:
        start_worker(spool)


def start_worker(spool: Path) -> None:
    """Start the compiler (:func:`.compile_queue.main`) detached, with this process's
    ``sys.path``, its output appended to the queue's log, if jobs wait and none runs."""
    import subprocess

    with _LOCK:
        _CHILDREN[:] = [p for p in _CHILDREN if p.poll() is None]  # reap the finished
        if not any(Path(spool).glob("*.json")):
            return
    held = None
    try:
        (spool / "worker.failed").unlink(missing_ok=True)
        log = spool / cq.LOG
        if log.exists() and log.stat().st_size > cq.LOG_MAX:
            log.write_text("")
        env = dict(os.environ, **{ENV: "compile"},
                   PYTHONPATH=os.pathsep.join(cq.sys_path()))
        argv = [sys.executable, "-c", "import sys; from asymptotics.core.compile_queue import "
                "main; sys.exit(main())", str(spool)]
        kw: dict = {}
        if os.name == "posix":
            kw["start_new_session"] = True
            held = open(spool / cq.LOCK, "a+")
            try:  # lock for the compiler, so no process finds the queue without one meanwhile
                cq.lock_fh(held)
                argv.append(str(held.fileno()))
                kw["pass_fds"] = (held.fileno(),)
            except OSError:  # a compiler runs (it takes the new jobs too) or a process compiles
                held.close()
                held = None
                return
        class Detached(subprocess.Popen):
            def __del__(self) -> None:  # not waited for: no "still running" warning
                pass

        with open(log, "a") as out:
            proc = Detached(argv, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, close_fds=True, env=env, **kw)
        _CHILDREN.append(proc)  # polled (reaped) at the next start, never waited for
    except Exception as exc:  # noqa: BLE001 (the queue stays; the next process compiles)
        say("nostart", f"giantstep: could not start the background compiler ({exc}); the next "
                       "process compiles the kernels itself")
    finally:
        if held is not None:
            held.close()  # the compiler's copy of the descriptor keeps the lock


def pending(spool: Path | None = None) -> bool:
    """Whether signatures are queued or a background compiler runs (benchmarks wait on it)."""
    spool = cq.spool_dir(create=False) if spool is None else Path(spool)
    return spool is not None and spool.is_dir() and cq.pending(spool)
