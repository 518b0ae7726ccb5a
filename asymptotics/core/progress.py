"""Long work: progress reports and worker processes that end with their parent.

:class:`Progress` is the one progress mechanism of the package: a tqdm bar when stderr is a
terminal, otherwise one-line reports on stderr (CI logs, pipes) ``desc: done/total unit (x%),
N s elapsed, ~M s left`` every :data:`INTERVAL` seconds -- at an update, or from a heartbeat
thread while one long unit of work runs -- and a last line. Used by the theory's curves and
grids, the simulations, every campaign and every command line. :func:`watch_parent` ends a pool
worker when the process that started it is gone. Bottom layer.

Silence: ``enabled=False`` (the API's ``progress=False``) silences one report;
:func:`set_quiet` (what every command's ``--quiet`` calls) or the environment variable
``GIANTSTEP_QUIET=1`` silences every report of the process. ``GIANTSTEP_PROGRESS_INTERVAL``
(seconds) overrides the interval of the one-line reports (0: a line at every update).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: seconds between two one-line reports when stderr is not a terminal
INTERVAL = 10.0
_STATE: dict[str, bool] = {"quiet": False}


def set_quiet(quiet: bool = True) -> None:
    """Silence (or allow again) every progress report of this process (``--quiet``)."""
    _STATE["quiet"] = bool(quiet)


def is_quiet() -> bool:
    """True after :func:`set_quiet` or with ``GIANTSTEP_QUIET`` set to a non-empty value other
    than ``0``: progress reports print nothing."""
    env = os.environ.get("GIANTSTEP_QUIET", "").strip()
    return _STATE["quiet"] or env not in ("", "0")


def report_interval(interval: float | None = None) -> float:
    """The seconds between one-line reports: ``GIANTSTEP_PROGRESS_INTERVAL`` when set, else
    ``interval`` (default :data:`INTERVAL`)."""
    env = os.environ.get("GIANTSTEP_PROGRESS_INTERVAL", "").strip()
    if env:
        try:
            return max(0.0, float(env))
        except ValueError:
            pass
    return INTERVAL if interval is None else float(interval)


def shown(progress: bool | None) -> bool:
    """Whether a report asked for with ``progress`` (None = automatic = on) prints anything."""
    return progress is not False and not is_quiet()


class Progress:
    """Progress over ``total`` units: a tqdm bar when stderr is a terminal, otherwise one line
    ``desc: done/total unit (x%), elapsed, ~ETA`` on stderr every ``interval`` seconds (default
    :data:`INTERVAL`, see :func:`report_interval`; at an update, or from the heartbeat thread
    while no update comes) and a last line at the end when a report was printed before.
    ``enabled=False`` -- or :func:`is_quiet` -- is silent. Use as a context manager (the
    heartbeat stops at :meth:`close`); ``update(n)`` advances."""

    def __init__(self, total: int | None, desc: str, *, unit: str = "it",
                 enabled: bool | None = True, interval: float | None = None, initial: int = 0,
                 stream=None) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n = initial
        self.interval = report_interval(interval)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = shown(enabled)
        self._printed: int | None = None  # the count of the last line printed
        self._bar = None
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._last = self._t0
        if self.enabled and _isatty(self.stream):
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False,
                             file=self.stream)
        elif self.enabled and self.interval > 0:
            _heartbeat(self)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.enabled:
            self._beat()

    def _beat(self) -> None:
        """A line if ``interval`` seconds passed since the last one (updates and heartbeat)."""
        with self._lock:
            now = time.monotonic()
            if self.enabled and now - self._last >= self.interval:
                self._last = now
                self._line()

    def write(self, text: str) -> None:
        """Print a line of output on the stream (above the bar on a terminal), also when the
        report itself is silent."""
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            _say(self.stream, text)

    def iter(self, items: Iterable[T]) -> Iterator[T]:
        """Yield ``items``, advancing by one as each item's work is done (at the next item)."""
        for item in items:
            yield item
            self.update(1)

    def _line(self, final: bool = False) -> None:
        el = time.monotonic() - self._t0
        if self.total:
            frac = self.n / self.total
            left = f", ~{el / frac * (1 - frac):.0f} s left" if 0 < frac < 1 and not final else ""
            text = (f"{self.desc}: {self.n}/{self.total} {self.unit} ({100 * frac:.0f}%), "
                    f"{el:.0f} s elapsed{left}")
        else:
            text = f"{self.desc}: {self.n} {self.unit}, {el:.0f} s elapsed"
        self._printed = self.n
        _say(self.stream, text)

    def close(self) -> None:
        _ACTIVE.discard(self)
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        with self._lock:
            if self.enabled and self._printed != self.n and (
                    self._printed is not None
                    or time.monotonic() - self._t0 >= self.interval):
                self._line(final=True)
            self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# one daemon thread serves every open report: a line every ``interval`` s also while a single
# long unit of work runs (no update), so that a CI log never goes quiet
_ACTIVE: weakref.WeakSet[Progress] = weakref.WeakSet()
_HEART: dict[str, threading.Thread] = {}
_TICK = 1.0


def _heartbeat(bar: Progress) -> None:
    _ACTIVE.add(bar)
    thread = _HEART.get("thread")
    if thread is None or not thread.is_alive():
        thread = threading.Thread(target=_beats, name="giantstep-progress", daemon=True)
        _HEART["thread"] = thread
        thread.start()


def _beats() -> None:
    while True:
        time.sleep(_TICK)
        for bar in list(_ACTIVE):
            try:
                bar._beat()
            except (OSError, ValueError):  # the stream was closed (interpreter exit)
                _ACTIVE.discard(bar)


def _say(stream, text: str) -> None:
    """One line in one write (the heartbeat thread's lines never split another line)."""
    stream.write(text + "\n")
    stream.flush()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_iter(items: Iterable[T], total: int | None, desc: str, *, unit: str = "it",
                  enabled: bool | None = True, interval: float | None = None) -> Iterator[T]:
    """Iterate ``items`` under a :class:`Progress`."""
    with Progress(total, desc, unit=unit, enabled=enabled, interval=interval) as bar:
        yield from bar.iter(items)


# ------------------------------------------------------------------------------------------------
# worker processes die with their parent

_WATCHDOG: dict[str, int] = {}


def watch_parent(parent_pid: int | None = None, interval: float = 0.25) -> None:
    """In a pool worker: start (once) a daemon thread that ends this process as soon as the
    process ``parent_pid`` (default: the current parent) is gone, so that a SIGKILL of the
    command leaves no orphaned workers. Parent gone = this process was re-parented, or
    ``parent_pid`` no longer exists. A no-op in the parent itself."""
    import threading

    me = os.getpid()
    if _WATCHDOG.get("pid") == me:
        return
    pid = os.getppid() if parent_pid is None else int(parent_pid)
    if pid == me:
        return
    first_ppid = os.getppid()
    _WATCHDOG["pid"] = me

    def gone() -> bool:
        if first_ppid == pid and os.getppid() != pid:
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        return False

    def loop() -> None:
        while True:
            if gone():
                os._exit(70)
            time.sleep(interval)

    if gone():
        os._exit(70)
    threading.Thread(target=loop, name="giantstep-parent-watchdog", daemon=True).start()
