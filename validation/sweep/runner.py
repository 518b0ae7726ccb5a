"""The runner: plan, skip what the store holds, schedule the rest, collect a DataFrame."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from validation.pool import run_tasks

from .params import SCHEDULERS, SIM_PARAMS, columns, is_theory
from .store import Store, _frame, format_rows
from .tasks import plan, run_task


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
    cores). ``scheduler``: ``local`` (process pool) or ``dask`` (a local cluster, or ``address``).
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
            from asymptotics.core.progress import Progress

            results = run_tasks(run_task, todo, int(n_jobs), scheduler=scheduler,
                                address=address, name=lambda t: f"sweep-{t.key}")
            bar = Progress(len(tasks), f"sweep {kind}", unit="task", enabled=progress,
                           initial=len(tasks) - len(todo))
            with bar:
                for _, (key, rows, _) in results:
                    lines = format_rows(rows, cols)
                    if db is not None:
                        db.append(key, lines)
                    blocks[key] = lines
                    bar.update(1)
    finally:
        if db is not None:
            db.close()
    df = _frame(cols, [ln for t in tasks for ln in blocks[t.key]])
    if not is_theory(kind) and summary:
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


