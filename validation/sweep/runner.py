"""The runner: the sweep as a :class:`validation.campaign.Campaign` on
:func:`validation.campaign.run_campaign` (plan, skip what the store holds, schedule the rest,
one transaction per task), collected as a DataFrame in grid order."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from .params import DEFAULT_KIND, DEFAULT_SEEDS, SCHEDULERS, SIM_PARAMS, is_theory
from .tasks import campaign, plan


def sweep(
    kind: str = DEFAULT_KIND,
    grid: Mapping[str, Iterable[Any] | str] | None = None,
    *,
    store: str | os.PathLike | None = None,
    csv: str | os.PathLike | None = None,
    seeds: int = DEFAULT_SEEDS,
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
    lam = 0.01, beta = 1, delta = 0; simulations d = 1000, n_test = 0 (default size), seed = 0:
    the parameter table's, ``validation.sweep.params.DEFAULTS``);
    alpha must be given. Theory rows: ``risk`` (NaN unless ``converged``) and every order
    parameter. Simulations: one row per repetition (``summary=False``) or, by default, per point
    with ``risk`` (mean over ``seeds`` repetitions), ``se``, ``seeds`` and the ``values``.
    ``store``: resumable SQLite store (see the module docstring); ``csv``: every row of the
    store's ``kind`` exported there after the run (sorted by the parameters), and read into the
    store first when it exists. ``n_jobs``: workers (default: all cores). ``scheduler``:
    ``local`` (process pool) or ``dask`` (a local cluster, or ``address``).
    """
    from validation.campaign import Store, run_campaign

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
    c = campaign(kind, tasks)
    with Store(store) as st:
        if csv is not None and os.path.exists(csv):
            st.import_csv(c, csv)
        run_campaign(c, st, n_jobs=int(n_jobs), scheduler=scheduler, address=address,
                     progress=progress is not False)
        df = st.frame(c, keys=[c.key_text(t) for t in tasks])
        if csv is not None:
            st.export_csv(c, csv)
    if not is_theory(kind) and summary:
        df = summarize(df)
    return _reorder(df)


def read_store(path: str | os.PathLike, kind: str) -> pd.DataFrame:
    """Every stored row of a sweep of ``kind`` (sorted by the parameters)."""
    from validation.campaign import Store

    with Store(path) as st:
        return st.frame(campaign(kind))


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


