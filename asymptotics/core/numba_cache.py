"""Where numba keeps the compiled kernels of this distribution: never inside the package.

numba's default for a ``cache=True`` kernel is a ``__pycache__`` beside its source: inside
``site-packages`` after a non-editable install, where the files outlive an uninstall and can
shadow a later install. :func:`install` puts one locator in front of numba's own (after the
``NUMBA_CACHE_DIR`` one, which keeps its meaning): kernels whose source file lies in this
distribution's packages are cached under the user's cache directory,
``$XDG_CACHE_HOME/giantstep/numba`` (``~/.cache/giantstep/numba``; ``%LOCALAPPDATA%`` on
Windows, ``~/Library/Caches`` on macOS). Every other numba function keeps numba's rules. A cache
directory that cannot be created falls back to numba's next locator; no environment variable is
set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from numba.core import caching

#: the packages of the distribution whose kernels this locator places
PACKAGES = ("asymptotics", "validation", "figures")
_ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """The user-level directory of the compiled kernels (``NUMBA_CACHE_DIR`` overrides it)."""
    if sys.platform.startswith("win"):
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "giantstep" / "numba"


def _ours(py_file: str) -> bool:
    try:
        path = Path(py_file).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(_ROOT / name) for name in PACKAGES)


_Mixin = caching._SourceFileBackedLocatorMixin
_Base = caching._CacheLocator


class UserCacheLocator(_Mixin, _Base):
    """numba cache locator for this distribution's kernels: :func:`cache_root`, one
    sub-directory per source directory (numba's ``get_suitable_cache_subpath``)."""

    def __init__(self, py_func, py_file) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(cache_root() / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if not (os.path.exists(py_file) and _ours(py_file)):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install() -> None:
    """Put :class:`UserCacheLocator` right after numba's ``NUMBA_CACHE_DIR`` locator (once)."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    classes = impl._locator_classes
    if any(c.__name__ == UserCacheLocator.__name__ and c.__module__ == __name__
           for c in classes):
        return
    provided = [i for i, c in enumerate(classes) if "UserProvided" in c.__name__]
    classes.insert(provided[0] + 1 if provided else 0, UserCacheLocator)


install()
