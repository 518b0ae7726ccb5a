"""The resumable CSV store: atomic appends under a lock, checksums, torn-write recovery."""

from __future__ import annotations

import csv
import io
import os
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from .params import STRING_COLUMNS, columns


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return repr(float(v))  # shortest round-trip text: exact float64 on reading
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


def format_rows(rows: Sequence[dict], cols: Sequence[str]) -> list[str]:
    """CSV lines (with their newline) ending in the CRC-32 of the rest of the line."""
    out = []
    for r in rows:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow([_cell(r[c]) for c in cols[:-1]])
        body = buf.getvalue()
        out.append(f"{body},{zlib.crc32(body.encode()):08x}\n")
    return out


def _parse_line(line: bytes, ncols: int) -> list[str] | None:
    """Fields of a complete, intact store line, or None."""
    if not line.endswith(b"\n"):
        return None
    try:
        text = line[:-1].decode()
    except UnicodeDecodeError:
        return None
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


class Store:
    """An append-only CSV of whole task blocks, locked for the lifetime of the object."""

    def __init__(self, path: str | os.PathLike, cols: Sequence[str], *,
                 warn: Callable[[str], None] | None = None) -> None:
        import fcntl

        self.path = Path(path)
        self.cols = tuple(cols)
        self.header = ",".join(self.cols) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise ValueError(f"store {self.path} is in use by another running sweep; wait for it "
                             "or use another store") from None
        self.warn = warn or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.blocks: dict[str, list[str]] = {}
        try:
            self._load()
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

    def _load(self) -> None:
        data = self._read_all()
        head = self.header.encode()
        if not data.startswith(head):
            if head.startswith(data):  # empty, or a header torn by a kill: start afresh
                os.ftruncate(self.fd, 0)
                self._write(head)
                return
            first = data.split(b"\n", 1)[0].decode(errors="replace")[:200]
            raise ValueError(f"store {self.path} has other columns (another kind or version of "
                             f"the sweep): {first!r}; expected {self.header.strip()[:200]!r}. "
                             "Use another store")
        ncols = len(self.cols)
        pos, line_no = len(head), 1
        good_end = pos
        block: list[str] = []
        block_task, block_rows, block_start, block_line = None, 0, pos, 2
        bad_line = None
        while pos < len(data):
            nl = data.find(b"\n", pos)
            end = len(data) if nl < 0 else nl + 1
            raw = data[pos:end]
            line_no += 1
            fields = _parse_line(raw, ncols)
            if fields is None:
                bad_line = line_no
                break
            task, n_rows = fields[1], fields[2]
            if block_task is None:
                block_task, block_start, block_line = task, pos, line_no
                try:
                    block_rows = int(n_rows)
                except ValueError:
                    bad_line = line_no
                    break
            elif task != block_task:
                bad_line = line_no
                break
            block.append(raw.decode())
            pos = end
            if len(block) == block_rows:
                self.blocks.setdefault(block_task, block)  # a repeated block: the first counts
                good_end, block, block_task = pos, [], None
        if bad_line is None and block_task is None:
            return
        cut = block_start if block_task is not None else pos
        cut_line = block_line if block_task is not None else bad_line
        for rest in data[cut:].splitlines(keepends=True):
            f = _parse_line(rest, ncols)
            if f is not None and f[1] != block_task:
                raise ValueError(f"store {self.path} is damaged at line {bad_line or cut_line} "
                                 "and intact rows follow it (not a torn last write: edited or "
                                 "written concurrently?); repair or remove it")
        assert cut >= good_end
        os.ftruncate(self.fd, cut)
        self.warn(f"store {self.path}: dropped a torn write at the end (line {cut_line} on, "
                  f"{len(data) - cut} bytes); its task is recomputed")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        os.fsync(self.fd)

    def append(self, task_key: str, lines: Sequence[str]) -> None:
        """Append one task's block of lines in one write, then fsync."""
        self._write("".join(lines).encode())
        self.blocks[task_key] = list(lines)


def read_store(path: str | os.PathLike, kind: str) -> pd.DataFrame:
    """All intact rows of a store (read only: a torn end is skipped here, cut when resuming)."""
    cols = columns(kind)
    data = Path(path).read_bytes()
    head = (",".join(cols) + "\n").encode()
    if not data.startswith(head):
        raise ValueError(f"{path} is not a {kind} sweep store (other header)")
    blocks: dict[str, list[str]] = {}
    cur: list[str] = []
    cur_task = None
    for raw in data[len(head):].splitlines(keepends=True):
        f = _parse_line(raw, len(cols))
        if f is None:
            break
        if f[1] != cur_task:
            cur, cur_task = [], f[1]
        cur.append(raw.decode())
        if len(cur) == int(f[2]):
            blocks.setdefault(f[1], cur)
            cur, cur_task = [], None
    return _frame(cols, [ln for b in blocks.values() for ln in b])


def _frame(cols: Sequence[str], lines: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    text = ",".join(cols) + "\n" + "".join(lines)
    dtype = {c: str for c in STRING_COLUMNS if c in cols}
    df = pd.read_csv(io.StringIO(text), dtype=dtype, keep_default_na=True)
    for c in dtype:
        df[c] = df[c].fillna("")
    if "converged" in df:
        df["converged"] = df["converged"].astype(bool)
    return df.drop(columns=["crc"])


