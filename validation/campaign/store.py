"""The campaigns' store: one SQLite file (standard library ``sqlite3``, WAL journal), one table per
campaign in long format (one row per seed / repetition, one typed column per quantity, no joined
cells), and a table ``_tasks`` of the completed task keys.

Why SQLite rather than the CSV row store (:mod:`validation.protocol.rows`): a finished task's rows
and
its "done" mark go in one transaction, so a kill at any instant leaves either the whole task or
nothing -- what the CSV store needs an exclusive lock, per-line checksums, block sizes and a
torn-write cut on opening for is the database's atomic commit (and concurrent writers simply wait
for each other; a task stored twice is refused by the primary key). ``synchronous=NORMAL`` in WAL
mode survives any crash of the process; a power cut can lose the last commits but never leaves a
partial task, and lost tasks are simply recomputed. The committed artefact stays a CSV:
:meth:`Store.export_csv` writes it sorted, the same bytes whatever the order tasks finished in,
and beside it its *keys file* (``<name>.keys``: one line per task, the hash of the task's full
parameter record, :meth:`Campaign.task_hash`, then its place); :meth:`Store.import_csv` reads
it back, so a CSV's rows are reused only for a task whose parameters are the plan's (a CSV
without its keys file is read, but every task of it reruns).
"""

from __future__ import annotations

import csv
import io
import math
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.rows import exact_cell
from .spec import TYPES, Campaign

if TYPE_CHECKING:
    import pandas as pd

TASKS = "_tasks"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Store:
    """A SQLite file holding campaigns (module docstring); ``fresh=True`` drops what it holds;
    ``path=None``: in memory (a run that keeps nothing)."""

    def __init__(self, path: str | os.PathLike | None, *, timeout: float = 600.0,
                 fresh: bool = False) -> None:
        self.path = Path(path) if path is not None else Path(":memory:")
        if path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and path is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        self.conn = sqlite3.connect(":memory:" if path is None else self.path, timeout=timeout,
                                    isolation_level=None)
        try:
            if path is not None:
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":  # pragma: no cover - no shared memory here
                    raise ValueError(f"{self.path}: SQLite cannot use WAL here (got {mode})")
                self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {TASKS} (campaign TEXT NOT NULL, "
                              "key TEXT NOT NULL, rows INTEGER NOT NULL, seconds REAL, "
                              "hash TEXT, PRIMARY KEY (campaign, key))")
            cols = [r[1] for r in self.conn.execute(f"PRAGMA table_info({TASKS})")]
            if "hash" not in cols:  # a store written before tasks had keys: all rerun
                self.conn.execute(f"ALTER TABLE {TASKS} ADD COLUMN hash TEXT")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise ValueError(f"{self.path} is not a campaign store ({exc})") from None
        self._ready: set[str] = set()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tables ----------------------------------------------------------------------------------

    def ensure(self, campaign: Campaign) -> None:
        """Create the campaign's table, or check that the stored one has its columns."""
        if campaign.name in self._ready:
            return
        want = [(c, TYPES[t]) for c, (_, t) in zip(campaign.schema.sql_names,
                                                    campaign.schema.columns, strict=True)]
        want.append(("_task", "INTEGER"))
        have = [(r[1], r[2]) for r in
                self.conn.execute(f"PRAGMA table_info({_q(campaign.name)})")]
        if not have:
            cols = ", ".join(f"{_q(c)} {t}" + (" NOT NULL" if t != "REAL" else "")
                             for c, t in want)
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {_q(campaign.name)} ({cols})")
            self.conn.execute(f"CREATE INDEX IF NOT EXISTS {_q('_' + campaign.name + '_task')} "
                              f"ON {_q(campaign.name)} (_task)")
            self.conn.execute("COMMIT")
        elif have != want:
            raise ValueError(f"{self.path}: campaign {campaign.name} is stored with other "
                             f"columns {[c for c, _ in have[:-1]]} (another version?); expected "
                             f"{list(campaign.schema.names)}. Use another store")
        self._ready.add(campaign.name)

    # -- tasks -----------------------------------------------------------------------------------

    def hashes(self, campaign: Campaign) -> dict[str, str | None]:
        """``{place: key}`` of the stored tasks (the place :meth:`Campaign.row_key`, the key
        :meth:`Campaign.task_hash` of the setting that computed it; None: not known)."""
        return dict(self.conn.execute(
            f"SELECT key, hash FROM {TASKS} WHERE campaign = ?", (campaign.name,)))

    def done(self, campaign: Campaign) -> set[str]:
        """The places of the plan's tasks that are stored with the plan's key (the stored
        rows of a task whose setting has changed since are not done)."""
        want = campaign.plan_hashes()
        return {k for k, h in self.hashes(campaign).items() if h is not None and want.get(k) == h}

    def write(self, campaign: Campaign, key: tuple | str, rows: Sequence[Mapping[str, Any]],
              seconds: float = math.nan, task_hash: str | None = None) -> bool:
        """Store one finished task (its rows, its done mark and its key ``task_hash``) in one
        transaction. If its place is stored already: nothing is written (False) unless the
        stored task is stale (its key is not the plan's) and ``task_hash`` is another, known
        one -- then the stale rows are replaced in the same transaction. Every row must carry
        the place's values in the key columns."""
        self.ensure(campaign)
        ktext = key if isinstance(key, str) else campaign.row_key(
            dict(zip(campaign.key_columns, key, strict=True)))
        values = [campaign.schema.coerce(r) for r in rows]
        for v in values:
            row = dict(zip(campaign.schema.names, v, strict=True))
            if campaign.row_key(row) != ktext:
                raise ValueError(f"campaign {campaign.name}: a row of task {ktext} has key "
                                 f"{campaign.row_key(row)}")
        cols = ", ".join(_q(c) for c in (*campaign.schema.sql_names, "_task"))
        marks = ", ".join("?" * (len(campaign.schema.names) + 1))
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            old = c.execute(f"SELECT rowid, hash FROM {TASKS} WHERE campaign = ? AND key = ?",
                            (campaign.name, ktext)).fetchone()
            if old is not None:
                stale = old[1] is None or campaign.plan_hashes().get(ktext) != old[1]
                if task_hash is None or task_hash == old[1] or not stale:
                    c.execute("ROLLBACK")
                    return False
                c.execute(f"DELETE FROM {_q(campaign.name)} WHERE _task = ?", (old[0],))
                c.execute(f"DELETE FROM {TASKS} WHERE rowid = ?", (old[0],))
            cur = c.execute(f"INSERT INTO {TASKS} (campaign, key, rows, seconds, hash) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (campaign.name, ktext, len(values),
                             None if math.isnan(seconds) else seconds, task_hash))
            task_id = cur.lastrowid
            c.executemany(f"INSERT INTO {_q(campaign.name)} ({cols}) VALUES ({marks})",
                          [(*v, task_id) for v in values])
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise
        return True

    def forget(self, campaign: Campaign, keys: Iterable[tuple | str]) -> int:
        """Remove stored tasks (rows and done marks, one transaction); returns how many."""
        self.ensure(campaign)
        n = 0
        self.conn.execute("BEGIN IMMEDIATE")
        for k in keys:
            ktext = k if isinstance(k, str) else campaign.row_key(
                dict(zip(campaign.key_columns, k, strict=True)))
            row = self.conn.execute(f"SELECT rowid FROM {TASKS} WHERE campaign = ? AND key = ?",
                                    (campaign.name, ktext)).fetchone()
            if row:
                self.conn.execute(f"DELETE FROM {_q(campaign.name)} WHERE _task = ?", row)
                self.conn.execute(f"DELETE FROM {TASKS} WHERE rowid = ?", row)
                n += 1
        self.conn.execute("COMMIT")
        return n

    # -- reading and export ----------------------------------------------------------------------

    def rows(self, campaign: Campaign) -> Iterator[tuple]:
        """Every stored row as a tuple in schema order, sorted by ``campaign.sort_columns``, then
        the task key, then the task's own row order (independent of when tasks finished)."""
        for _, row in self._select(campaign):
            yield row

    def _select(self, campaign: Campaign) -> Iterator[tuple[str, tuple]]:
        """``(task key, row)`` in the order of :meth:`rows`."""
        self.ensure(campaign)
        sql = dict(zip(campaign.schema.names, campaign.schema.sql_names, strict=True))
        cols = ", ".join(f"r.{_q(c)}" for c in sql.values())
        order = ", ".join(f"r.{_q(sql[c])}" for c in campaign.sort_columns)
        if campaign.rank is not None:
            order = "t.key"
        cur = self.conn.execute(
            f"SELECT t.key, {cols} FROM {_q(campaign.name)} r JOIN {TASKS} t "
            f"ON t.rowid = r._task ORDER BY {order}, t.key, r.rowid")
        types = [t for _, t in campaign.schema.columns]
        rows = ((key, tuple(math.nan if (t is float and v is None) else bool(v) if t is bool
                            else v for v, t in zip(raw, types, strict=True)))
                for key, *raw in cur)
        if campaign.rank is None:
            yield from rows
            return
        tasks: dict[str, list[tuple]] = {}
        for key, row in rows:
            tasks.setdefault(key, []).append(row)
        names = campaign.schema.names

        def rank(item: tuple[str, list[tuple]]) -> tuple:
            return (campaign.rank(dict(zip(names, item[1][0], strict=True))), item[0])

        for key, task_rows in sorted(tasks.items(), key=rank):
            for row in task_rows:
                yield key, row

    def frame(self, campaign: Campaign, keys: Sequence[str] | None = None) -> pd.DataFrame:
        """The stored rows as a DataFrame with the schema's columns: sorted as :meth:`rows`, or
        the rows of the tasks ``keys`` (key texts) in that order (``KeyError`` for a key not
        stored)."""
        import pandas as pd

        if keys is None:
            rows = list(self.rows(campaign))
        else:
            by_task: dict[str, list[tuple]] = {}
            for key, row in self._select(campaign):
                by_task.setdefault(key, []).append(row)
            rows = [r for k in keys for r in by_task[k]]
        return pd.DataFrame(rows, columns=list(campaign.schema.names))

    def export_csv(self, campaign: Campaign, path: str | os.PathLike) -> int:
        """Write the campaign's rows as a CSV (header, then :meth:`rows`, cells by
        ``campaign.cell``), atomically; returns the number of rows. Deterministic: the same
        stored rows give the same bytes."""
        cell = campaign.cell or exact_cell
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        n = 0
        places: dict[str, None] = {}
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(campaign.schema.names)
            for place, r in self._select(campaign):
                w.writerow([cell(v) for v in r])
                places[place] = None
                n += 1
        hashes = self.hashes(campaign)
        write_keys(keys_path(path), campaign.name, {p: hashes.get(p) for p in places})
        os.replace(tmp, path)
        return n

    def import_csv(self, campaign: Campaign, path: str | os.PathLike) -> int:
        """Store the tasks of a CSV written by :meth:`export_csv` (or the committed data of a
        ported campaign: same columns) that the store lacks, one transaction per task; returns
        how many tasks were added. Rows are grouped into tasks by the key columns."""
        self.ensure(campaign)
        with open(path, newline="") as fh:
            text = fh.read()
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if header is None:
            return 0
        # a CSV of the former row store carries a per-line checksum column last: its cells are
        # the rows themselves, so it is read without that column
        legacy = header[-1:] == [LEGACY_CHECKSUM] and tuple(header[:-1]) == campaign.schema.names
        if legacy:
            header = header[:-1]
        if tuple(header) != campaign.schema.names:
            names = campaign.schema.names
            extra = [c for c in header if c not in names]
            missing = [c for c in names if c not in header]
            raise ValueError(f"{path}: its columns are not those of campaign {campaign.name} "
                             f"(not in the campaign: {extra or 'none'}; missing: "
                             f"{missing or 'none'}; or another order); move the file away to "
                             "recompute it")
        parse = [_parser(t) for _, t in campaign.schema.columns]
        groups: dict[str, list[dict]] = {}
        for line in reader:
            if legacy:
                line = line[:-1]
            row = {c: p(v) for c, p, v in zip(header, parse, line, strict=True)}
            groups.setdefault(campaign.row_key(row), []).append(row)
        return self.import_tasks(campaign, groups, read_keys(keys_path(Path(path))))

    def import_tasks(self, campaign: Campaign, groups: Mapping[str, Sequence[Mapping]],
                     keys: Mapping[str, str | None]) -> int:
        """Store the tasks ``{place: rows}`` with their keys ``{place: key}`` (a CSV's keys
        file) that the store lacks or holds stale; returns how many were added."""
        return sum(self.write(campaign, k, rows,
                              task_hash=keys.get(k) or campaign.place_hash(k))
                   for k, rows in groups.items())


#: the checksum column of the former CSV row store's sweep files
LEGACY_CHECKSUM = "crc"
_UNKNOWN = "unknown"


def keys_path(csv_path: str | os.PathLike) -> Path:
    """The keys file of a campaign's CSV: ``runs.csv`` -> ``runs.keys``."""
    return Path(csv_path).with_suffix(".keys")


def write_keys(path: Path, name: str, keys: Mapping[str, str | None]) -> None:
    """Write a keys file (atomically): a comment line, then ``<key> <place>`` per task."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as fh:
        fh.write(f"# campaign {name}: per task, the hash of its parameter record, then its "
                 "place (validation.campaign.spec)\n")
        for place, h in keys.items():
            fh.write(f"{h or _UNKNOWN} {place}\n")
    os.replace(tmp, path)


def read_keys(path: Path) -> dict[str, str | None]:
    """``{place: key}`` of a keys file (empty if there is none; None for an unknown key)."""
    if not path.exists():
        return {}
    out: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        h, place = line.split(" ", 1)
        out[place] = None if h == _UNKNOWN else h
    return out


def _parser(t: type):
    if t is bool:
        def parse_bool(v: str) -> bool:
            if v not in ("True", "False"):
                raise ValueError(f"not a boolean cell: {v!r}")
            return v == "True"
        return parse_bool
    if t is float:
        return lambda v: math.nan if v == "" else float(v)
    return t


def bad_store_arg(store: str | None) -> bool:
    """A command's ``--store``: True (after printing the one-line error to stderr; the command
    exits 2) unless it is None or names a ``.sqlite`` file."""
    if store is None or str(store).endswith(".sqlite"):
        return False
    print(f"error: --store must name a .sqlite file (the campaign's SQLite store), got {store}",
          file=sys.stderr)
    return True
