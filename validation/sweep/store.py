"""The sweep's store: :class:`validation.store.Store` with the sweep's layout (blocks = tasks,
keyed by the ``task`` column, ``task_rows`` rows each, a CRC-32 per line, exact floats)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

from validation import store as _store

from .params import STRING_COLUMNS, columns

LAYOUT = _store.Layout(block=lambda row: row["task"], size=lambda row: int(row["task_rows"]),
                       checksum=True)


def format_rows(rows: Sequence[Mapping], cols: Sequence[str]) -> list[str]:
    """CSV lines (with their newline) ending in the CRC-32 of the rest of the line."""
    return _store.format_rows(rows, cols, LAYOUT)


def Store(path: str | os.PathLike, cols: Sequence[str], *,  # noqa: N802  (a constructor)
          warn: Callable[[str], None] | None = None) -> _store.Store:
    """The sweep store at ``path`` (locked until closed)."""
    return _store.Store(path, cols, LAYOUT, warn=warn, what="store", owner="sweep")


def read_store(path: str | os.PathLike, kind: str) -> pd.DataFrame:
    """All intact rows of a store (read only: a torn end is skipped here, cut when resuming)."""
    cols = columns(kind)
    try:
        blocks = _store.read_blocks(path, cols, LAYOUT)
    except ValueError:
        raise ValueError(f"{path} is not a {kind} sweep store (other header)") from None
    return _frame(cols, [ln for b in blocks.values() for ln in b])


def _frame(cols: Sequence[str], lines: Sequence[str]) -> pd.DataFrame:
    dtype = {c: str for c in STRING_COLUMNS if c in cols}
    df = _store.frame(cols, lines, dtype=dtype, keep_default_na=True)
    for c in dtype:
        df[c] = df[c].fillna("")
    if "converged" in df:
        df["converged"] = df["converged"].astype(bool)
    return df.drop(columns=["crc"])
