"""The distribution's version, warnings shown as one line (commands and pool workers), BLAS
thread limits, work buffers reused per thread, and the three field groups every result type
exposes."""

from __future__ import annotations

import math
import sys
import threading

import numpy as np


def version() -> str:
    """The installed distribution's version (``giantstep``), or the source tree's fallback."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as _version

        try:
            return _version("giantstep")
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    return "0.1.0"


def one_line_warnings() -> None:
    """Show Python warnings as ``warning: message`` on one line of stderr (no file path, no
    source line): what a command-line user needs, numpy's floating-point warnings included.
    Each distinct message once."""
    import warnings

    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        if text not in seen:
            seen.add(text)
            print(f"warning: {text}", file=file or sys.stderr, flush=True)

    warnings.showwarning = show
    warnings.simplefilter("default")


_BLAS: list = []  # the threadpoolctl controller, made once (it inspects the loaded libraries)


def blas_limit(threads: int | None):
    """A context in which BLAS runs on ``threads`` threads (None: the process's setting, a
    no-op). Small products gain nothing from more threads, and threads spinning idle on a shared
    machine cost CPU time; a product split by rows and columns (not along its sums) gives the same
    numbers on any count."""
    import contextlib

    if threads is None:
        return contextlib.nullcontext()
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=threads, user_api="blas")


_SCRATCH = threading.local()  # per thread: its work buffers (byte arrays) by the callers' keys
#: work buffers kept per key and thread, the largest one and all of a thread's together (bytes;
#: beyond: np.empty's)
SCRATCH_PER_KEY = 4
SCRATCH_MAX = 1 << 27
SCRATCH_TOTAL = 1 << 28


def scratch(key: str, shape: int | tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
    """An uninitialised array, as ``np.empty(shape, dtype)``, on one of this thread's buffers
    kept for ``key`` (one caller's array: its sizes grow and shrink together) that no live array
    views (each view holds its buffer: one is reused only when every array on it is gone). A
    step's work arrays are freed and asked for again at about the same sizes: the allocator would
    return their pages to the system and fault them in again; kept, they are written in place (a
    thread keeps at most :data:`SCRATCH_TOTAL` bytes, the largest sizes it was asked for, until
    it ends). Any other case: a fresh ``np.empty``."""
    dt = np.dtype(dtype)
    need = math.prod(shape if isinstance(shape, tuple) else (shape,)) * dt.itemsize
    if need <= 0 or need > SCRATCH_MAX:
        return np.empty(shape, dt)
    pool = getattr(_SCRATCH, "pool", None)
    if pool is None:
        pool = _SCRATCH.pool = {}
    bufs = pool.setdefault(key, [])
    use = -1
    for i in range(len(bufs)):  # free: held by the list and getrefcount's argument only
        if sys.getrefcount(bufs[i]) <= 2:
            use = i
            if bufs[i].shape[0] >= need:
                return bufs[i][:need].view(dt).reshape(shape)
    if use < 0 and len(bufs) >= SCRATCH_PER_KEY:
        return np.empty(shape, dt)
    held = sum(b.shape[0] for x in pool.values() for b in x) - (bufs[use].shape[0] if use >= 0
                                                                 else 0)
    if held + need > SCRATCH_TOTAL:
        return np.empty(shape, dt)
    buf = np.empty(need, np.uint8)  # a free one too small replaced, or one more
    if use >= 0:
        bufs[use] = buf
    else:
        bufs.append(buf)
    return buf.view(dt).reshape(shape)


def release_scratch() -> None:
    """Drop this thread's work buffers of :func:`scratch` (arrays still viewing one keep it)."""
    pool = getattr(_SCRATCH, "pool", None)
    if pool is not None:
        pool.clear()


class FieldGroups:
    """``parameters``, ``solution``, ``diagnostics`` of a result dataclass from its class tuples
    ``PARAMETERS``, ``SOLUTION``, ``DIAGNOSTICS`` (what produced the point, what the equations
    give, how the solve went): one definition for every result type."""

    PARAMETERS: tuple[str, ...] = ()
    SOLUTION: tuple[str, ...] = ()
    DIAGNOSTICS: tuple[str, ...] = ()

    @property
    def parameters(self) -> dict:
        """Every parameter that produced the point."""
        return {k: getattr(self, k) for k in self.PARAMETERS}

    @property
    def solution(self) -> dict:
        """The risk and the order parameters."""
        return {k: getattr(self, k) for k in self.SOLUTION}

    @property
    def diagnostics(self) -> dict:
        """Whether and how the solver converged."""
        return {k: getattr(self, k) for k in self.DIAGNOSTICS}
