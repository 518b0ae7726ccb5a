"""Where committed data are read and where outputs are written (never into an installed package).

Committed data (``figures/data``, ``validation/data``, ``validation/reports/data``) ship as package
data and are read where they are. Outputs go

* in a source checkout (the package directory is writable and sits next to the repository's
  ``pyproject.toml``): beside the committed data, so that refreshed data can be committed;
* otherwise (an installed package): under the user cache, ``$GIANTSTEP_CACHE`` if set, else
  ``$XDG_CACHE_HOME/giantstep`` or ``~/.cache/giantstep``.

A file written to the cache shadows the committed one of the same name.
"""

from __future__ import annotations

import os
from pathlib import Path


def in_checkout(directory: Path) -> bool:
    """True when ``directory`` (inside a package) belongs to a writable source checkout."""
    directory = Path(directory).resolve()
    for parent in directory.parents:
        if (parent / "pyproject.toml").is_file():
            return os.access(directory if directory.exists() else parent, os.W_OK) and \
                "site-packages" not in directory.parts and "dist-packages" not in directory.parts
    return False


def user_cache(*parts: str) -> Path:
    """The user cache directory of giantstep, joined with ``parts`` (not created)."""
    root = os.environ.get("GIANTSTEP_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(base) / "giantstep")
    return Path(root).joinpath(*parts)


def output_dir(committed: Path, *cache_parts: str) -> Path:
    """Where to write what belongs beside ``committed``: itself in a checkout, else the cache."""
    return Path(committed) if in_checkout(committed) else user_cache(*cache_parts)


def data_file(committed: Path, *cache_parts: str) -> tuple[Path, Path]:
    """``(read, write)`` paths of a data file: read the written copy if there is one, else the
    committed file; write to :func:`output_dir` of its folder."""
    committed = Path(committed)
    write = output_dir(committed.parent, *cache_parts) / committed.name
    return (write if write.exists() else committed), write
