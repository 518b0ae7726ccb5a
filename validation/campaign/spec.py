"""What a campaign is: a named plan of settings, a task function and a row schema.

A *setting* is one unit of work. Its *place* is the tuple of the values of the campaign's key
columns (the same values the task writes in those columns of each of its rows): where its rows
go. Its *key* is the computation: :meth:`Campaign.task_hash`, a hash of its full parameter
record (:meth:`Campaign.record_of`: the campaign, its protocol ``version``, the place and every
field of the setting -- repetitions, d, seeds, the model's parameters). A stored task is reused
only when its key is the plan's: a changed setting, another number of repetitions or a new
protocol version reruns it, and an old row is never read as a new one.
The task function maps a setting to its rows (a list of dicts, one per seed / repetition: the
long format, no joined cells) and must be a module-level function for ``n_jobs > 1``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the Python types a column may hold and their SQLite storage classes
TYPES: dict[type, str] = {int: "INTEGER", float: "REAL", str: "TEXT", bool: "INTEGER"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Schema:
    """The columns of a campaign's rows, in order, each with its type (``int``, ``float``,
    ``str`` or ``bool``). A ``float`` cell may be NaN; no cell may be missing."""

    columns: tuple[tuple[str, type], ...]

    @classmethod
    def of(cls, **columns: type) -> Schema:
        """``Schema.of(name=str, d=int, risk=float)``."""
        return cls(tuple(columns.items()))

    def __post_init__(self) -> None:
        names = [c for c, _ in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"repeated column in {names}")
        for c, t in self.columns:
            if not _NAME.match(c) or c.startswith("_"):
                raise ValueError(f"column names are identifiers not starting with '_', got {c!r}")
            if t not in TYPES:
                raise ValueError(f"column {c!r}: type must be one of int, float, str, bool, "
                                 f"got {t!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    @property
    def sql_names(self) -> tuple[str, ...]:
        """The columns' names in SQL, where identifiers ignore case: a name that another one
        equals but for case gets its position as a suffix (``K``, ``k`` -> ``K__3``, ``k__5``)."""
        low = [c.lower() for c in self.names]
        return tuple(c if low.count(c.lower()) == 1 else f"{c}__{i}"
                     for i, c in enumerate(self.names))

    def type_of(self, column: str) -> type:
        return dict(self.columns)[column]

    def coerce(self, row: Mapping[str, Any]) -> tuple:
        """The row's values in column order as plain Python values (numpy scalars converted);
        ``ValueError`` for a missing or extra column or a value of the wrong kind."""
        extra = set(row) - set(self.names)
        missing = [c for c in self.names if c not in row]
        if extra or missing:
            raise ValueError(f"row does not match the schema: missing {missing}, "
                             f"extra {sorted(extra)}")
        out = []
        for c, t in self.columns:
            v = row[c]
            if v is None:
                raise ValueError(f"column {c!r}: no value (None); use NaN for a missing float")
            try:
                if t is bool:
                    if v not in (True, False, 0, 1):
                        raise TypeError
                    out.append(bool(v))
                elif t is int:
                    iv = int(v)
                    if iv != v:
                        raise TypeError
                    out.append(iv)
                elif t is float:
                    if isinstance(v, str | bytes):
                        raise TypeError
                    out.append(float(v))
                else:
                    if not isinstance(v, str):
                        raise TypeError
                    out.append(v)
            except (TypeError, ValueError):
                raise ValueError(f"column {c!r} holds {t.__name__}, got {v!r}") from None
        return tuple(out)


def key_text(key: Hashable) -> str:
    """The canonical text of a task key (JSON of the tuple; floats exact)."""
    def plain(v: Any) -> Any:
        if isinstance(v, tuple | list):
            return [plain(x) for x in v]
        if hasattr(v, "item") and not isinstance(v, str):  # numpy scalar
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"a key holds a non-finite float: {key!r}")
        if not isinstance(v, bool | int | float | str):
            raise ValueError(f"a key holds {type(v).__name__}: {key!r}")
        return v

    return json.dumps(plain(key if isinstance(key, tuple) else (key,)), separators=(",", ":"))


def record_of(value: Any) -> Any:
    """A value as plain JSON data, exact and canonical: a dataclass as its type's name and every
    field, a mapping with sorted text keys, sequences and arrays as lists, numpy scalars as
    Python numbers, a non-finite float as its text, a function by its qualified name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"_type": type(value).__name__,
                **{f.name: record_of(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, enum.Enum):
        return record_of(value.value)
    if isinstance(value, Mapping):
        return {str(k): record_of(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if hasattr(value, "tolist"):  # numpy scalar or array
        return record_of(value.tolist())
    if isinstance(value, tuple | list | range):
        return [record_of(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((record_of(v) for v in value), key=repr)
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    raise ValueError(f"a setting holds {type(value).__name__}, which has no parameter record: "
                     f"{value!r}")


def digest(record: Any) -> str:
    """The hash of a parameter record: SHA-256 of its canonical JSON, 24 hex digits."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Campaign:
    """A named plan of settings, a task function and a row schema.

    - ``name``: the campaign's table in the store (an identifier);
    - ``settings``: the plan, in the order tasks are started;
    - ``task``: ``task(setting) -> list of row dicts`` (module-level for ``n_jobs > 1``);
    - ``schema``: the rows' columns; ``key_columns``: the columns whose values in every row of
      a task are the task's key; ``key(setting)`` must return those values as a tuple;
    - ``order``: the columns the exported CSV is sorted by (default: the key columns), then the
      task key and the task's own row order;
    - ``cell``: how a value becomes a CSV cell on export (default exact ``repr`` floats);
    - ``nan_key``: the fixed token a NaN in a float key column stands for in the task's key
      text (a JSON string, so never equal to a number; e.g. the ``a2`` of a one-step run of the
      spectra experiment); default None: a NaN key is refused;
    - ``version``: the protocol's version, part of every task's key: raise it when the task
      computes something else from the same setting (stored tasks then rerun);
    - ``record``: ``record(setting)`` -> the setting's parameter record (default: every field
      of the setting, :func:`record_of`); a custom one may leave out what does not change the
      rows (a description), never a parameter;
    - ``rank``: ``rank(first row of a task)`` -> a sortable tuple: when given, the export
      orders tasks by it (then by place) instead of by ``order`` (e.g. the plan's order of
      settings, which no column sorts);
    - ``place_is_record``: the place is itself a hash of the task's full parameter record (the
      sweep's ``task`` column), so the key is the place's (with the protocol version) and a CSV
      needs no keys file.
    """

    name: str
    settings: Sequence[Any]
    task: Callable[[Any], list[dict]]
    schema: Schema
    key_columns: tuple[str, ...]
    key: Callable[[Any], tuple]
    order: tuple[str, ...] = ()
    cell: Callable[[Any], str] | None = None
    nan_key: str | None = None
    version: str = "1"
    record: Callable[[Any], Any] | None = None
    place_is_record: bool = False
    rank: Callable[[Mapping[str, Any]], tuple] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or self.name.startswith("_"):
            raise ValueError(f"a campaign's name is an identifier, got {self.name!r}")
        unknown = [c for c in (*self.key_columns, *self.order) if c not in self.schema.names]
        if unknown:
            raise ValueError(f"campaign {self.name}: columns {unknown} are not in the schema")
        if not self.key_columns:
            raise ValueError(f"campaign {self.name}: no key columns")

    @property
    def sort_columns(self) -> tuple[str, ...]:
        return self.order or self.key_columns

    def key_text(self, setting: Any) -> str:
        """The canonical text of a setting's key, its values in the key columns' types (so that
        ``16`` and ``16.0`` in a float column are one key)."""
        return self.row_key(dict(zip(self.key_columns, self.key(setting), strict=True)))

    def row_key(self, row: Mapping[str, Any]) -> str:
        """The key text of the task a row belongs to (its key columns, in their types)."""
        types = dict(self.schema.columns)
        out = []
        for c in self.key_columns:
            v = row[c]
            t = types[c]
            if hasattr(v, "item") and not isinstance(v, str):  # numpy scalar
                v = v.item()
            if (self.nan_key is not None and t is float and not isinstance(v, str)
                    and math.isnan(float(v))):
                out.append(self.nan_key)
                continue
            out.append(bool(v) if t is bool else int(v) if t is int else
                       float(v) if t is float else v)
        return key_text(tuple(out))

    def record_of(self, setting: Any) -> dict:
        """The task's full parameter record: campaign, protocol version, place and setting."""
        out = {"campaign": self.name, "version": self.version,
               "place": json.loads(self.key_text(setting))}
        if not self.place_is_record:
            out["setting"] = record_of(self.record(setting) if self.record is not None
                                       else setting)
        return out

    def task_hash(self, setting: Any) -> str:
        """The task's key: the hash (:func:`digest`) of :meth:`record_of`."""
        return digest(self.record_of(setting))

    def place_hash(self, place: str) -> str | None:
        """The key of the task at ``place`` when the place is its record (``place_is_record``),
        else None (the setting is needed)."""
        if not self.place_is_record:
            return None
        return digest({"campaign": self.name, "version": self.version,
                       "place": json.loads(place)})

    def plan_hashes(self) -> dict[str, str]:
        """``{place: key}`` of the plan's tasks (computed once per campaign object)."""
        cached = self.__dict__.get("_plan_hashes")
        if cached is None:
            cached = {self.key_text(s): self.task_hash(s) for s in self.settings}
            object.__setattr__(self, "_plan_hashes", cached)
        return cached

    def with_settings(self, settings: Sequence[Any]) -> Campaign:
        """The same campaign over another plan (a subset, another d, ...)."""
        from dataclasses import replace

        return replace(self, settings=tuple(settings))
