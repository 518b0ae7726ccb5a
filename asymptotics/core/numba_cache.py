"""Where numba keeps the compiled kernels of this distribution: never inside the package.

numba's default for a ``cache=True`` kernel is a ``__pycache__`` beside its source: inside
``site-packages`` after a non-editable install, where the files outlive an uninstall and can
shadow a later install. :func:`install` puts one locator first in numba's list: kernels whose
source file lies in this distribution's packages are cached under :func:`root`, the first of
``NUMBA_CACHE_DIR`` and :func:`cache_root` (``$XDG_CACHE_HOME/giantstep/numba``,
``~/.cache/giantstep/numba``; ``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on macOS) that
is writable, else the first that already holds a cache (read-only: used as it is, nothing is
written). With neither, :func:`root` is None and the kernels are not cached at all (compiled in
every process, one stderr line says so; :mod:`asymptotics.core.coldstart`; plain ``numba.njit``
kernels of the distribution get a temporary directory removed at exit): never the package tree.
Every other numba function keeps numba's rules. This reaches into numba's private
cache-locator classes; if they change, :func:`install` does nothing (numba's own behaviour).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

#: the packages of the distribution whose kernels this locator places
PACKAGES = ("asymptotics", "validation", "figures")
_ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """The user-level directory of the compiled kernels (``NUMBA_CACHE_DIR`` comes first)."""
    if sys.platform.startswith("win"):
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "giantstep" / "numba"


def candidates() -> list[Path]:
    env = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    return ([Path(env)] if env else []) + [cache_root()]


def _is_writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


_CHOICE: dict[tuple, tuple[Path | None, bool]] = {}


def _choose() -> tuple[Path | None, bool]:
    key = tuple(candidates())
    if key not in _CHOICE:
        choice: tuple[Path | None, bool] = (None, False)
        for path in key:
            if _is_writable(path):
                choice = (path, True)
                break
        else:
            for path in key:
                try:
                    if path.is_dir() and any(path.iterdir()):
                        choice = (path, False)
                        break
                except OSError:
                    pass
        _CHOICE[key] = choice
    return _CHOICE[key]


def root() -> Path | None:
    """The directory of this distribution's compiled kernels (None: nowhere to cache)."""
    return _choose()[0]


def writable() -> bool:
    """Whether :func:`root` can be written (False for a read-only cache, or none)."""
    return _choose()[1]


_SCRATCH: list[str] = []


def _scratch() -> Path:
    """A per-process directory for the plain njit kernels where no cache is writable."""
    if not _SCRATCH:
        import atexit
        import shutil

        _SCRATCH.append(tempfile.mkdtemp(prefix="giantstep-numba-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return Path(_SCRATCH[0])


def ours(py_file: str) -> bool:
    try:
        path = Path(py_file).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(_ROOT / name) for name in PACKAGES)


def _locator_class():
    from numba.core import caching

    class UserCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """numba cache locator for this distribution's kernels: :func:`root`, one sub-directory
        per source directory (numba's ``get_suitable_cache_subpath``, as ``NUMBA_CACHE_DIR``)."""

        def __init__(self, py_func, py_file) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            sub = self.get_suitable_cache_subpath(py_file)
            base = root()
            self._scratch = base is None or (not writable() and not (base / sub).is_dir())
            self._cache_path = str((_scratch() if self._scratch else base) / sub)

        def get_cache_path(self) -> str:
            return self._cache_path

        def ensure_cache_path(self) -> None:
            if writable() or self._scratch:
                os.makedirs(self._cache_path, exist_ok=True)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not (os.path.exists(py_file) and ours(py_file)):
                return None
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    UserCacheLocator.__module__ = __name__
    return UserCacheLocator


def install() -> bool:
    """Put the locator first in numba's list (once). False, and numba unchanged, where numba's
    private classes are not the ones this was written against."""
    try:
        from numba.core import caching

        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        classes = impl._locator_classes
        if any(c.__name__ == "UserCacheLocator" and c.__module__ == __name__ for c in classes):
            return True
        classes.insert(0, _locator_class())
    except Exception:  # noqa: BLE001 (a numba change: numba's own locators)
        return False
    return True


INSTALLED = install()
