"""Parameter sweeps at scale: theory curves and Monte Carlo over grids, resumable and exact.

``sweep(kind, grid, store=..., **fixed)`` runs every combination of the ``grid`` values (any
parameter of the theory or of the simulations) with the ``fixed`` ones, and returns a DataFrame.

Units of work (tasks):

- ``theory``: one curve along alpha (``asymptotics.risk_curve``: warm starts and continuation
  along the grid's alphas), one task per combination of the other parameters;
- ``network`` / ``srf`` / ``rf``: one Monte Carlo repetition
  (``validation.simulator.simulate_grid_once``: one first layer, nested ridge batches along alpha,
  every lam), one task per combination of the other parameters and repetition ``rep < seeds``.

Seeds come from the parameters, never from the order of work: repetition ``rep`` uses
``SeedSequence(entropy, spawn_key=(rep,))`` with ``entropy`` = 128 bits of the SHA-256 of the
simulation parameters (all but ``alpha`` and ``lam``, ``seed`` a salt; not the model, so
``network``, ``srf`` and ``rf`` at the same parameters share their random streams: paired).
Each task runs with one BLAS thread, so results are bit-identical whatever the scheduler and
worker count (on the same BLAS build).

Schedulers: ``local`` (default) is joblib's loky process pool sized to the machine (``n_jobs``
workers; ``n_jobs = 1`` runs in this process); ``dask`` runs on ``dask.distributed``: a
``LocalCluster`` of ``n_jobs`` single-threaded worker processes, or the existing cluster at
``address`` (optional extra ``giantstep[dask]``; remote workers need giantstep installed).

Store (``store=path.csv``): one CSV row per point, appended atomically per task (one ``write``
of the task's whole block of rows, then ``fsync``), under an exclusive lock. Columns: ``key``
(hash of the point's parameters), ``task`` (hash of the task), ``task_rows`` (rows in the task's
block), ``kind``, every parameter, the result (``risk`` NaN unless ``converged``), ``seconds``
and ``cpu_seconds`` (the task's wall and CPU time), ``version`` (giantstep's) and ``crc``
(CRC-32 of the rest of the line).
On restart the tasks already stored are skipped (a theory task's hash covers its whole alpha
list, since warm starts tie a curve's points together: a new alpha grid recomputes the curves;
simulation repetitions are keyed by their own parameters, so ``seeds`` can grow); a torn write
at the end of the file (a process killed mid-write: a line without its newline, a bad checksum, a
block short of ``task_rows``) is cut off with a warning and its task recomputed. Damage followed
by good rows is not a torn write and raises ``ValueError``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

KINDS = ("theory", "network", "srf", "rf")
SCHEDULERS = ("local", "dask")
THEORY_PARAMS = ("sigma", "target", "beta", "alpha0", "eta", "delta", "lam", "alpha")
SIM_PARAMS = ("sigma", "target", "beta", "alpha0", "eta", "delta", "d", "n_test", "seed", "lam",
              "alpha")
# name -> (type, lower bound, whether the bound is allowed)
RULES: dict[str, tuple[type, float, bool]] = {
    "alpha": (float, 0.0, False), "alpha0": (float, 0.0, False), "beta": (float, 0.0, False),
    "eta": (float, 0.0, True), "lam": (float, 0.0, True), "delta": (float, 0.0, True),
    "d": (int, 2, True), "n_test": (int, 0, True), "seed": (int, 0, True),
}
DEFAULTS: dict[str, Any] = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01,
                                beta=1.0, delta=0.0, d=500, n_test=0, seed=0)
META = ("key", "task", "task_rows", "kind")
TAIL = ("seconds", "cpu_seconds", "version", "crc")
SIM_RESULT = ("rep", "p", "n", "n0", "n_test_used", "entropy", "risk", "converged")
STRING_COLUMNS = ("key", "task", "kind", "sigma", "target", "measure", "status", "message",
                  "version", "entropy", "crc")


def _theory_result_columns() -> tuple[str, ...]:
    from dataclasses import fields

    from asymptotics.api import RiskResult

    # "p" (the finite-width theory) is not a sweep parameter: sweeps are the p -> infinity limit
    skip = set(THEORY_PARAMS) | {"state", "p"}
    first = ("risk", "converged", "iterations", "residual")
    rest = tuple(f.name for f in fields(RiskResult) if f.name not in skip and f.name not in first)
    return first + rest


def params_of(kind: str) -> tuple[str, ...]:
    """The parameters a sweep of ``kind`` takes (grid or fixed), in their canonical order."""
    _check_kind(kind)
    return THEORY_PARAMS if kind == "theory" else SIM_PARAMS


def columns(kind: str) -> tuple[str, ...]:
    """The store's columns for ``kind`` (its header line)."""
    result = _theory_result_columns() if kind == "theory" else SIM_RESULT
    return META + params_of(kind) + result + TAIL


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")


# ------------------------------------------------------------------------------------------------
# parameters and grids


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses (so ``sigma=max(z,0),tanh`` has two values)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        depth += (ch == "(") - (ch == ")")
        cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def check_value(name: str, value: Any) -> Any:
    """One parameter value, normalised (float, int or function spec) or a ValueError that says
    what is allowed."""
    if name in ("sigma", "target"):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a function name or an expression in z, got {value!r}")
        _function_ok(name, value.strip())
        return value.strip()
    if name not in RULES:
        raise ValueError(f"unknown parameter {name!r}; sweepable: {', '.join(SIM_PARAMS)}")
    typ, low, inclusive = RULES[name]
    if isinstance(value, (bool, str)) or not hasattr(value, "__float__"):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value) + 0.0  # + 0.0: -0.0 -> 0.0, one hash per point
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if typ is int:
        if v != int(v) or v < low:
            raise ValueError(f"{name} must be an integer >= {low:g}, got {value!r}")
        return int(v)
    if not (v > low or (inclusive and v == low)):
        raise ValueError(f"{name} must be {'>=' if inclusive else '>'} {low:g}, got {v:g}")
    return v


@lru_cache(maxsize=256)
def _function_ok(name: str, spec: str) -> None:
    from asymptotics.functions import get_function

    get_function(spec)  # raises ValueError naming the registered functions


def parse_values(name: str, text: str) -> list:
    """``a,b,c`` (a list) or ``START:STOP:NUM`` (numpy.linspace, NUM >= 1); for sigma/target a
    comma list of function names or expressions."""
    text = text.strip()
    if name in ("sigma", "target"):
        values = _split_top_level(text)
    elif ":" in text:
        import numpy as np

        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"grid {name} must be a comma list (0.5,1,2) or START:STOP:NUM "
                             f"(0.2:5:50), got {text!r}") from None
        values = [float(v) for v in np.linspace(start, stop, num)]
        if RULES.get(name, (float,))[0] is int:
            values = [round(v) for v in values]
    else:
        values = []
        for piece in _split_top_level(text):
            try:
                values.append(float(piece))
            except ValueError:
                raise ValueError(f"grid {name} values must be numbers, got {piece!r}") from None
    if not values:
        raise ValueError(f"grid {name} must contain at least one value, got {text!r}")
    return [check_value(name, v) for v in values]


def parse_grid_spec(text: str) -> tuple[str, list]:
    """``NAME=SPEC`` of the command line (``alpha=0.2:5:50``, ``sigma=tanh,relu``)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            f"grid must be NAME=START:STOP:NUM or NAME=a,b,c, got {text!r}")
    if name not in SIM_PARAMS:
        raise argparse.ArgumentTypeError(
            f"grid parameter must be one of {', '.join(SIM_PARAMS)}, got {name!r}")
    try:
        return name, parse_values(name, spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _normalise_grid(kind: str, grid: Mapping[str, Any] | None,
                    fixed: Mapping[str, Any]) -> tuple[dict[str, list], dict[str, Any]]:
    allowed = params_of(kind)
    out_grid: dict[str, list] = {}
    for name, values in (grid or {}).items():
        if name not in allowed:
            raise ValueError(f"grid parameter {name!r} is not one of the {kind} parameters: "
                             f"{', '.join(allowed)}")
        if isinstance(values, str):
            values = parse_values(name, values)
        else:
            values = [check_value(name, v) for v in values]
        if not values:
            raise ValueError(f"grid {name} must contain at least one value")
        if len(set(values)) != len(values):
            raise ValueError(f"grid {name} has repeated values: {values}")
        out_grid[name] = values
    base: dict[str, Any] = {}
    for name, value in fixed.items():
        if name not in allowed:
            raise ValueError(f"{name!r} is not a {kind} parameter; allowed: {', '.join(allowed)}")
        if value is not None:
            base[name] = check_value(name, value)
    for name in allowed:
        if name in out_grid or name in base:
            continue
        if name == "alpha":
            raise ValueError("alpha must be given: grid={'alpha': [...]} or alpha=...")
        base[name] = DEFAULTS[name]
    for name in out_grid:
        base.pop(name, None)
    return out_grid, base


# ------------------------------------------------------------------------------------------------
# tasks


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
                          ).hexdigest()


@dataclass(frozen=True)
class Task:
    """One unit of work: ``params`` fixed, all ``alphas`` (and, for simulations, ``lams``)."""

    kind: str
    params: tuple[tuple[str, Any], ...]
    alphas: tuple[float, ...]
    lams: tuple[float, ...] = ()
    rep: int = 0

    @property
    def key(self) -> str:
        body: dict[str, Any] = dict(kind=self.kind, params=dict(self.params),
                                    alphas=list(self.alphas))
        if self.kind != "theory":
            body.update(lams=list(self.lams), rep=self.rep)
        return _digest(body)[:20]

    @property
    def entropy(self) -> int:
        """Root entropy of the repetitions: 128 bits of the hash of the simulation parameters."""
        return int(_digest(dict(self.params))[:32], 16)

    def point_key(self, alpha: float, lam: float | None = None) -> str:
        params = dict(self.params, alpha=alpha)
        if lam is not None:
            params["lam"] = lam
        body: dict[str, Any] = dict(kind=self.kind, params=params)
        if self.kind != "theory":
            body["rep"] = self.rep
        return _digest(body)[:20]

    @property
    def n_rows(self) -> int:
        return len(self.alphas) * (len(self.lams) if self.kind != "theory" else 1)


def plan(kind: str, grid: Mapping[str, Any] | None = None, *, seeds: int = 4,
         **fixed: Any) -> list[Task]:
    """The tasks of a sweep, in grid order (canonical parameter order, alpha innermost)."""
    _check_kind(kind)
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    g, base = _normalise_grid(kind, grid, fixed)
    inner = ("alpha",) if kind == "theory" else ("lam", "alpha")
    axes_of = {n: g[n] if n in g else [base[n]] for n in params_of(kind)}
    alphas = tuple(axes_of["alpha"])
    lams = tuple(axes_of["lam"]) if kind != "theory" else ()
    outer = [n for n in params_of(kind) if n not in inner]
    axes = [axes_of[n] for n in outer]
    tasks = []
    for combo in itertools.product(*axes):
        params = tuple(zip(outer, combo, strict=True))
        if kind == "theory":
            tasks.append(Task(kind, params, alphas))
        else:
            _check_setting(kind, dict(params), alphas, lams)
            tasks += [Task(kind, params, alphas, lams, rep) for rep in range(int(seeds))]
    return tasks


def _check_setting(kind: str, params: dict, alphas: Sequence[float], lams: Sequence[float]) -> None:
    from validation.simulator import Setting

    p = dict(params)
    p.pop("seed")
    for a in alphas:
        Setting(model=kind, alpha=a, lam=lams[0], **p)  # raises ValueError naming the problem


@lru_cache(maxsize=1)
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("giantstep")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from asymptotics import __version__

        return __version__


def run_task(task: Task) -> tuple[str, list[dict], float]:
    """Compute one task (in a worker): ``(task key, rows, wall seconds)``; one BLAS thread."""
    from threadpoolctl import threadpool_limits

    if task.kind != "theory":
        import validation.simulator  # noqa: F401  (load scipy's BLAS before limiting it)
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1):
        rows = _theory_rows(task) if task.kind == "theory" else _simulation_rows(task)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    version = package_version()
    for r in rows:
        r.update(key=task.point_key(r["alpha"], r.get("lam") if task.kind != "theory" else None),
                 task=task.key, task_rows=task.n_rows, kind=task.kind, seconds=seconds,
                 cpu_seconds=cpu, version=version)
    return task.key, rows, seconds


def _theory_rows(task: Task) -> list[dict]:
    from asymptotics import risk_curve

    params = dict(task.params)
    df = risk_curve(list(task.alphas), progress=False, **params)
    rows = []
    for rec, a in zip(df.to_dict("records"), task.alphas, strict=True):
        rec.update(params, alpha=a)  # the parameters as given (sigma spec, not its display name)
        rows.append(rec)
    return rows


def _simulation_rows(task: Task) -> list[dict]:
    import numpy as np

    from validation.simulator import Setting, simulate_grid_once

    params = dict(task.params)
    sim = {k: v for k, v in params.items() if k != "seed"}
    setting = Setting(model=task.kind, alpha=task.alphas[0], lam=task.lams[0], **sim)
    seed = np.random.SeedSequence(task.entropy, spawn_key=(task.rep,))
    values = simulate_grid_once(setting, task.alphas, task.lams, seed)
    rows = []
    for i, a in enumerate(task.alphas):
        for j, lam in enumerate(task.lams):
            v = float(values[i, j])
            ok = math.isfinite(v)
            rows.append(dict(params, alpha=a, lam=lam, rep=task.rep, p=setting.p,
                             n=max(1, int(round(a * setting.d))), n0=setting.n0,
                             n_test_used=setting.n_test_used, entropy=f"{task.entropy:032x}",
                             risk=v if ok else math.nan, converged=ok))
    return rows


# ------------------------------------------------------------------------------------------------
# the store


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


# ------------------------------------------------------------------------------------------------
# schedulers


def _local_results(tasks: Sequence[Task], n_jobs: int) -> Iterator[tuple[str, list[dict], float]]:
    if n_jobs == 1:
        for t in tasks:
            yield run_task(t)
        return
    from joblib import Parallel, delayed

    yield from Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered",
                        batch_size=1, pre_dispatch="2*n_jobs")(delayed(run_task)(t)
                                                              for t in tasks)


def _dask_results(tasks: Sequence[Task], n_jobs: int,
                  address: str | None) -> Iterator[tuple[str, list[dict], float]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ImportError("scheduler 'dask' needs dask.distributed: pip install "
                          "'giantstep[dask]' (or use the default local scheduler)") from None
    import logging

    cluster = None
    if address:
        client = Client(address, timeout="30s")
    else:
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        futures = [client.submit(run_task, t, key=f"giantstep-sweep-{t.key}", pure=False)
                   for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ------------------------------------------------------------------------------------------------
# the runner


def sweep(
    kind: str = "theory",
    grid: Mapping[str, Iterable[Any] | str] | None = None,
    *,
    store: str | os.PathLike | None = None,
    seeds: int = 4,
    n_jobs: int | None = None,
    scheduler: str = "local",
    address: str | None = None,
    progress: bool | None = None,
    summary: bool = True,
    **fixed: Any,
) -> pd.DataFrame:
    """Run a sweep and return its rows (grid order) as a DataFrame with every parameter.

    ``grid`` maps parameter names to values (a list, or the text ``"START:STOP:NUM"`` /
    ``"a,b,c"``); ``fixed`` sets the others (defaults: sigma = target = tanh, alpha0 = 2, eta = 1,
    lam = 0.01, beta = 1, delta = 0; simulations d = 500, n_test = 0 (default size), seed = 0);
    alpha must be given. Theory rows: ``risk`` (NaN unless ``converged``) and every order
    parameter. Simulations: one row per repetition (``summary=False``) or, by default, per point
    with ``risk`` (mean over ``seeds`` repetitions), ``se``, ``seeds`` and the ``values``.
    ``store``: resumable CSV (see the module docstring). ``n_jobs``: workers (default: all
    cores). ``scheduler``: ``local`` (loky pool) or ``dask`` (``LocalCluster``, or ``address``).
    """
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
    if address and scheduler != "dask":
        raise ValueError("address is for scheduler='dask'")
    tasks = plan(kind, grid, seeds=seeds, **fixed)
    if n_jobs is None:
        from joblib import cpu_count

        n_jobs = cpu_count()
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    cols = columns(kind)
    db = Store(store, cols) if store is not None else None
    try:
        blocks: dict[str, list[str]] = {}
        if db is not None:
            blocks.update({t.key: db.blocks[t.key] for t in tasks if t.key in db.blocks})
        todo = [t for t in tasks if t.key not in blocks]
        if todo:
            from tqdm.auto import tqdm

            results = (_local_results(todo, int(n_jobs)) if scheduler == "local"
                       else _dask_results(todo, int(n_jobs), address))
            bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), unit="task",
                       desc=f"sweep {kind}", file=sys.stderr, leave=False,
                       disable=None if progress is None else not progress)
            with bar:
                for key, rows, _ in results:
                    lines = format_rows(rows, cols)
                    if db is not None:
                        db.append(key, lines)
                    blocks[key] = lines
                    bar.update(1)
    finally:
        if db is not None:
            db.close()
    df = _frame(cols, [ln for t in tasks for ln in blocks[t.key]])
    if kind != "theory" and summary:
        df = summarize(df)
    return _reorder(df)


def _reorder(df: pd.DataFrame) -> pd.DataFrame:
    """alpha, risk, converged first; bookkeeping (hashes, timings, version) last."""
    first = [c for c in ("alpha", "risk", "se", "converged", "seeds") if c in df]
    last = [c for c in ("key", "task", "task_rows", "seconds", "cpu_seconds", "version")
            if c in df]
    return df[first + [c for c in df.columns if c not in first + last] + last]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Simulation rows (one per repetition) -> one row per point: ``risk`` = mean over the
    repetitions (NaN if any is NaN), ``se`` (NaN for one repetition), ``seeds``, ``values``."""
    import numpy as np
    import pandas as pd

    keys = ["kind", *SIM_PARAMS, "p", "n", "n0", "n_test_used", "entropy", "version"]
    out = []
    for group, sub in df.groupby(keys, sort=False):
        v = sub.sort_values("rep")["risk"].to_numpy(dtype=np.float64)
        ok = bool(np.all(np.isfinite(v)))
        mean = float(v.mean()) if ok else math.nan
        se = float(v.std(ddof=1) / math.sqrt(v.size)) if ok and v.size > 1 else math.nan
        row = dict(zip(keys, group, strict=True))
        row.update(risk=mean, se=se, converged=ok, seeds=int(v.size),
                   values=";".join(repr(float(x)) for x in v), seconds=float(sub["seconds"].sum()),
                   cpu_seconds=float(sub["cpu_seconds"].sum()))
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------------
# heat map


def grid_axes(grid: Mapping[str, Sequence[Any]]) -> tuple[str, str]:
    """The two axes of a 2-D grid (x = alpha when it is one of them), or a ValueError."""
    varying = [n for n, v in grid.items() if len(v) > 1]
    if len(varying) != 2:
        raise ValueError("a heat map needs exactly two grid parameters with more than one value, "
                         f"got {', '.join(varying) or 'none'}")
    x, y = varying
    if y == "alpha":
        x, y = y, x
    return x, y


def plot_heatmap(df: pd.DataFrame, x: str, y: str, path: str | os.PathLike,
                 value: str = "risk") -> None:
    """``value`` over the (x, y) grid as a colour map (grey: not converged)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm

    table = df.pivot_table(index=y, columns=x, values=value, aggfunc="first", dropna=False)
    z = np.ma.masked_invalid(table.to_numpy(dtype=np.float64))
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.8")
    norm = None
    if z.count() and z.min() > 0 and z.max() / z.min() > 20:
        norm = LogNorm(z.min(), z.max())
    fig, ax = plt.subplots(figsize=(5.8, 4.4), constrained_layout=True)
    mesh = ax.pcolormesh(table.columns.to_numpy(float), table.index.to_numpy(float), z,
                         shading="nearest", cmap=cmap, norm=norm)
    fig.colorbar(mesh, ax=ax, label=value)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fixed = [f"{c}={df[c].iloc[0]}" for c in ("sigma", "target", "alpha0", "eta", "lam", "beta",
                                                 "delta", "d") if c in df and c not in (x, y)]
    ax.set_title(f"{df['kind'].iloc[0]}: " + ", ".join(fixed), fontsize=8)
    n_bad = int(z.mask.sum()) if np.ma.is_masked(z) else 0
    if n_bad:
        ax.text(0.01, 0.01, f"grey: {n_bad} not converged", transform=ax.transAxes, fontsize=7)
    fig.savefig(path, dpi=150, metadata={"Software": None})
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# command line


DEFAULT_ALPHAS = "0.2:5:50"


def add_subparser(subparsers, *, theory_only: bool = False) -> argparse.ArgumentParser:
    """Register ``sweep``: ``python -m validation sweep`` (all kinds) or, with ``theory_only``,
    ``python -m asymptotics sweep``."""
    from asymptotics.cli import CONVENTIONS, add_model_arguments

    p = subparsers.add_parser(
        "sweep", help="parameter grids: local pool or Dask, resumable CSV store",
        description="Run a grid of theory curves or Monte Carlo repetitions. Grid values: "
                    "NAME=START:STOP:NUM (numpy.linspace) or NAME=a,b,c; every parameter not in "
                    "a grid takes its option's value. Results: CSV (--out, or stdout without "
                    "--store); --store makes the sweep resumable.",
        epilog=CONVENTIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = THEORY_PARAMS if theory_only else SIM_PARAMS
    if not theory_only:
        p.add_argument("--kind", choices=KINDS, default="network",
                       help="theory curves, or a simulated model (default: network)")
    p.add_argument("--grid", action="append", type=parse_grid_spec, default=[],
                   metavar="NAME=VALUES",
                   help=f"a grid axis, repeatable; NAME one of {', '.join(names)} "
                        f"(alpha default: {DEFAULT_ALPHAS})")
    add_model_arguments(p)
    if not theory_only:
        p.add_argument("--d", type=int, default=DEFAULTS["d"],
                       help=f"dimension d of the simulations (default: {DEFAULTS['d']})")
        p.add_argument("--n-test", type=int, default=0,
                       help="test inputs per repetition (default 0: max(10000, 2d))")
        p.add_argument("--seeds", type=int, default=4,
                       help="repetitions per point (default: 4)")
        p.add_argument("--seed", type=int, default=0,
                       help="salt of the parameter-hash seeds (default: 0)")
    p.add_argument("--store", help="resumable CSV store: finished tasks are skipped on restart")
    p.add_argument("--out", help="write the result CSV here")
    p.add_argument("--scheduler", choices=SCHEDULERS, default="local",
                   help="local: loky process pool (default); dask: dask.distributed")
    p.add_argument("--scheduler-address", metavar="tcp://HOST:PORT",
                   help="an existing Dask scheduler (implies --scheduler dask)")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="worker processes (default: all cores)")
    p.add_argument("--plot", help="PNG heat map of the risk (needs a 2-D grid)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_cli, sweep_kind="theory" if theory_only else None)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """``sweep`` subcommand: returns the exit status (2 on bad input, with one line)."""
    kind = args.sweep_kind or args.kind
    grid: dict[str, list] = {}
    for name, values in args.grid:
        if name in grid:
            raise ValueError(f"grid {name} given twice")
        grid[name] = values
    if "alpha" not in grid:
        grid["alpha"] = parse_values("alpha", DEFAULT_ALPHAS)
    names = params_of(kind)
    fixed = {n: getattr(args, n) for n in names if n not in grid and hasattr(args, n)}
    scheduler = "dask" if args.scheduler_address else args.scheduler
    axes = grid_axes(grid) if args.plot else None
    t0 = time.perf_counter()
    try:
        df = sweep(kind, grid, store=args.store, seeds=getattr(args, "seeds", 1),
                   n_jobs=args.n_jobs, scheduler=scheduler, address=args.scheduler_address,
                   progress=False if args.quiet else None, **fixed)
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = df.to_csv(index=False, float_format="%.12g")
    if args.out:
        Path(args.out).write_text(text)
    if not args.out and not args.store:
        sys.stdout.write(text)
    n_bad = int((~df["converged"]).sum())
    print(f"sweep {kind}: {len(df)} points, {len(df) - n_bad} converged, "
          f"{time.perf_counter() - t0:.1f} s" + (f"; store {args.store}" if args.store else ""),
          file=sys.stderr)
    if axes is not None:
        plot_heatmap(df, *axes, args.plot)
    return 0
