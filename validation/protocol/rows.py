"""The CSV row store: a keyed, append-only, resumable CSV of blocks of rows.

Every validation runner is on :mod:`validation.campaign` (whose SQLite store replaces this
one's locks, checksums and torn-write cuts with transactions); only the figures' simulation
cache (``figures/cache.py``) still keeps its rows through :class:`Store` (the campaigns use this
module's cell formats, :func:`exact_cell`, :func:`g10_cell`, :func:`g12_cell`). A *block* is
the rows of one unit of work (a task, a repetition, a configuration, a curve); a
:class:`Layout` says which block a row belongs to (its key, from the row's own cells), how many
rows a complete block has, and how cells are written. The store

- appends a block in one ``write`` followed by ``fsync``, under an exclusive lock held while the
  store is open (a second writer is refused);
- on opening, reads the complete blocks (a block stored twice: the first counts) and cuts a
  torn write at the end (a line without its newline, a bad checksum where the layout has one, a
  block short of its rows) with a warning, so its unit of work is recomputed; damage followed by
  intact rows is not a torn write and raises ``ValueError``;
- writes numbers with ``repr`` (exact float64) unless the layout says otherwise (the caches keep
  the ``%.10g`` text of their committed files).

:class:`TableCache` is the thin layer of the caches whose columns are those of their rows (the
figures' curves): the header is the committed file's, or the first block's, and
widens (a one-time rewrite that appends empty cells) when a block brings new columns.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def exact_cell(v: Any) -> str:
    """A cell's text: booleans ``True``/``False``, integers, floats as ``repr`` (read back to the
    same float64), anything else as text on one line."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return repr(float(v))
    try:
        import numpy as np

        if isinstance(v, np.bool_):
            return "True" if v else "False"
        if isinstance(v, np.integer):
            return str(int(v))
        if isinstance(v, np.floating):
            return repr(float(v))
    except ImportError:  # pragma: no cover
        pass
    return str(v).replace("\r", " ").replace("\n", " ")


def exact_or_empty_cell(v: Any) -> str:
    """As :func:`exact_cell`, with a float NaN as an empty cell (what pandas reads back as NaN)."""
    return "" if isinstance(v, float) and math.isnan(v) else exact_cell(v)


def g_cell(v: Any, digits: int = 10) -> str:
    """A cell as ``pandas.DataFrame.to_csv(float_format=f"%.{digits}g")`` writes it (NaN and
    None empty): the format of the committed figure and experiment data."""
    if v is None:
        return ""
    if isinstance(v, float) or (type(v).__module__ == "numpy" and hasattr(v, "dtype")
                                and v.dtype.kind == "f"):
        return "" if math.isnan(v) else f"{float(v):.{digits}g}"
    return exact_cell(v)


def g10_cell(v: Any) -> str:
    """:func:`g_cell` with 10 significant digits."""
    return g_cell(v, 10)


def g12_cell(v: Any) -> str:
    """:func:`g_cell` with 12 significant digits."""
    return g_cell(v, 12)


@dataclass(frozen=True)
class Layout:
    """How a store's rows form blocks: ``block(row)`` the key of the block of a row and
    ``size(row)`` its number of rows (``row``: column name -> cell text), whether the last column
    is a CRC-32 of the rest of the line, and how values become cells."""

    block: Callable[[Mapping[str, str]], str]
    size: Callable[[Mapping[str, str]], int]
    checksum: bool = False
    cell: Callable[[Any], str] = exact_cell

    def key_of(self, record: Mapping[str, Any]) -> str:
        """The block key of a row given as values (formatted as the store would write them)."""
        return self.block({k: self.cell(v) for k, v in record.items()})


def format_rows(rows: Sequence[Mapping[str, Any]], cols: Sequence[str], layout: Layout,
                ) -> list[str]:
    """CSV lines (with their newline); with a checksum, the last column is the CRC-32 of the
    rest of the line. A value missing from a row is an empty cell."""
    out = []
    body_cols = cols[:-1] if layout.checksum else cols
    for r in rows:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(
            [layout.cell(r[c]) if c in r else "" for c in body_cols])
        body = buf.getvalue()
        out.append(f"{body},{zlib.crc32(body.encode()):08x}\n" if layout.checksum
                   else body + "\n")
    return out


def parse_line(line: bytes, ncols: int, checksum: bool) -> list[str] | None:
    """Fields of a complete, intact line, or None."""
    if not line.endswith(b"\n"):
        return None
    try:
        text = line[:-1].decode()
    except UnicodeDecodeError:
        return None
    if not checksum:
        fields = next(csv.reader([text]), [])
        return fields if len(fields) == ncols else None
    body, sep, crc = text.rpartition(",")
    if not sep or len(crc) != 8:
        return None
    try:
        if int(crc, 16) != zlib.crc32(body.encode()):
            return None
    except ValueError:
        return None
    fields = next(csv.reader([body]), [])
    return fields + [crc] if len(fields) == ncols - 1 else None


def _scan(data: bytes, start: int, cols: Sequence[str], layout: Layout):
    """Complete blocks from ``start``: ``(blocks, good_end, cut, bad, torn)``; ``cut`` is where
    a torn or damaged tail begins (``len(data)`` if none), ``bad`` its line number (or None),
    ``torn`` the key of the unfinished block there (or None)."""
    ncols = len(cols)
    blocks: dict[str, list[str]] = {}
    pos, line_no, good_end = start, data.count(b"\n", 0, start), start
    block: list[str] = []
    block_key, block_rows, block_start, block_line = None, 0, pos, 0
    bad = None
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        raw = data[pos:end]
        line_no += 1
        fields = parse_line(raw, ncols, layout.checksum)
        if fields is None:
            bad = line_no
            break
        row = dict(zip(cols, fields, strict=True))
        try:
            key, rows = layout.block(row), int(layout.size(row))
        except (ValueError, KeyError):
            bad = line_no
            break
        if block_key is None:
            block_key, block_rows, block_start, block_line = key, rows, pos, line_no
        elif key != block_key:
            bad = line_no
            break
        block.append(raw.decode())
        pos = end
        if len(block) >= block_rows:
            blocks.setdefault(block_key, block)  # a repeated block: the first counts
            good_end, block, block_key = pos, [], None
    if block_key is not None:  # an unfinished block: cut from its start
        return blocks, good_end, block_start, bad or block_line, block_key
    return blocks, good_end, pos, bad, None


def header_of(path: str | os.PathLike) -> list[str] | None:
    """The column names of an existing store (None if it is missing or empty)."""
    p = Path(path)
    if not p.exists():
        return None
    with open(p, newline="") as fh:
        line = fh.readline()
    if not line.endswith("\n"):
        return None
    return next(csv.reader([line[:-1]]))


def read_blocks(path: str | os.PathLike, cols: Sequence[str],
                layout: Layout) -> dict[str, list[str]]:
    """The complete blocks of a store, read only (a torn end is skipped; it is cut when the store
    is next opened for writing)."""
    data = Path(path).read_bytes()
    head = _header_line(cols).encode()
    if not data.startswith(head):
        raise ValueError(f"{path} has other columns than {','.join(cols)[:200]!r}")
    return _scan(data, len(head), cols, layout)[0]


def frame(cols: Sequence[str], lines: Iterable[str], **read_csv: Any) -> pd.DataFrame:
    """The rows ``lines`` as ``pandas.read_csv`` reads them (as if they were the whole file)."""
    import pandas as pd

    text = _header_line(cols) + "".join(lines)
    return pd.read_csv(io.StringIO(text), **read_csv)


def _header_line(cols: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cols)
    return buf.getvalue()


class Store:
    """An append-only CSV of whole blocks (module docstring), locked while it is open.

    ``fresh=True`` empties the file first (a forced recomputation)."""

    def __init__(self, path: str | os.PathLike, cols: Sequence[str], layout: Layout, *,
                 fresh: bool = False, warn: Callable[[str], None] | None = None,
                 what: str = "store", owner: str = "process") -> None:
        import fcntl

        self.path = Path(path)
        self.cols = tuple(cols)
        self.layout = layout
        self.header = _header_line(self.cols)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise ValueError(f"{what} {self.path} is in use by another running {owner}; wait "
                             f"for it or use another {what}") from None
        self.warn = warn or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.blocks: dict[str, list[str]] = {}
        try:
            if fresh:
                os.ftruncate(self.fd, 0)
            self._load(what)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # releases the lock
            self.fd = -1

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_all(self) -> bytes:
        os.lseek(self.fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self.fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

    def _load(self, what: str) -> None:
        data = self._read_all()
        head = self.header.encode()
        if not data.startswith(head):
            if head.startswith(data):  # empty, or a header torn by a kill: start afresh
                os.ftruncate(self.fd, 0)
                self._write(head)
                return
            first = data.split(b"\n", 1)[0].decode(errors="replace")[:200]
            raise ValueError(f"{what} {self.path} has other columns (another kind or version): "
                             f"{first!r}; expected {self.header.strip()[:200]!r}. Use another "
                             f"{what}")
        self.blocks, good_end, cut, bad, torn = _scan(data, len(head), self.cols, self.layout)
        if cut >= len(data):
            return
        for rest in data[cut:].splitlines(keepends=True):
            f = parse_line(rest, len(self.cols), self.layout.checksum)
            if f is not None and self._key(f) != torn:
                raise ValueError(f"{what} {self.path} is damaged at line {bad} and intact rows "
                                 "follow it (not a torn last write: edited or written "
                                 "concurrently?); repair or remove it")
        assert cut >= good_end
        os.ftruncate(self.fd, cut)
        self.warn(f"{what} {self.path}: dropped a torn write at the end (line {bad} on, "
                  f"{len(data) - cut} bytes); its work is recomputed")

    def _key(self, fields: list[str]) -> str | None:
        try:
            return self.layout.block(dict(zip(self.cols, fields, strict=True)))
        except (ValueError, KeyError):
            return None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        os.fsync(self.fd)

    def append(self, key: str, lines: Sequence[str]) -> None:
        """Append one block of formatted lines in one write, then fsync."""
        self._write("".join(lines).encode())
        self.blocks[key] = list(lines)

    def add(self, rows: Sequence[Mapping[str, Any]]) -> str:
        """Format and append one block of rows (all of one block key); returns the key."""
        lines = format_rows(rows, self.cols, self.layout)
        key = self.layout.key_of(rows[0])
        self.append(key, lines)
        return key


class TableCache:
    """The rows of a cache whose columns are those of its rows (module docstring): read from
    ``read`` (the committed data, or an earlier written copy), written at ``write`` through a
    :class:`Store` opened on the first :meth:`add` (the file at ``read`` copied there first when
    they differ). The header is the file's, or the first block's, and widens when a block brings
    new columns. ``fresh=True`` ignores what is stored and starts the file afresh."""

    def __init__(self, read: str | os.PathLike, write: str | os.PathLike, layout: Layout, *,
                 fresh: bool = False, what: str = "cache") -> None:
        self.read, self.write = Path(read), Path(write)
        self.layout, self.what, self.fresh = layout, what, fresh
        self.store: Store | None = None
        cols = None if fresh else header_of(self.read)
        self.cols: tuple[str, ...] = tuple(cols or ())
        self.blocks = read_blocks(self.read, self.cols, layout) if cols else {}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> TableCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> list[str] | None:
        """The stored lines of block ``key`` (None if it is not stored)."""
        return self.blocks.get(key)

    def _open(self, cols: Sequence[str]) -> None:
        if self.fresh:
            self.write.unlink(missing_ok=True)
        elif self.read != self.write and self.read.exists():
            self.write.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.read, self.write)
        self.store = Store(self.write, cols, self.layout, what=self.what)
        self.blocks = self.store.blocks

    def add(self, rows: Sequence[Mapping[str, Any]]) -> str:
        """Append one block (rows of one key), widening the header first if needed."""
        new = list(dict.fromkeys(c for r in rows for c in r if c not in self.cols))
        if self.store is None:
            self._open(self.cols or new)
            new = [c for c in new if c not in self.cols] if self.cols else []
        if new:
            self._widen(new)
        assert self.store is not None
        self.cols = self.store.cols
        return self.store.add(rows)

    def _widen(self, new: Sequence[str]) -> None:
        assert self.store is not None
        cols = (*self.store.cols, *new)
        pad = "," * len(new)
        lines = [ln[:-1] + pad + "\n" for b in self.store.blocks.values() for ln in b]
        tmp = self.write.with_name(self.write.name + ".tmp")
        tmp.write_text(_header_line(cols) + "".join(lines))
        os.replace(tmp, self.write)  # the old store keeps its lock on the old file until closed
        self.store.close()
        self.store = Store(self.write, cols, self.layout, what=self.what)
        self.blocks = self.store.blocks

    def frame(self, keys: Iterable[str], **read_csv: Any) -> pd.DataFrame:
        """The blocks ``keys`` (in that order) as one DataFrame, as ``pandas.read_csv`` reads
        them."""
        return frame(self.cols, [ln for k in keys for ln in self.blocks[k]], **read_csv)
