"""The distribution's version, warnings shown as one line (commands and pool workers), BLAS
thread limits, and the three field groups every result type exposes."""

from __future__ import annotations

import sys


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
