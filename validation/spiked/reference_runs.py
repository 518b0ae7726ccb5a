"""The semi-empirical reference values of the campaign points (:mod:`.reference` on the bulk of
repetition 0 of each setting, and of a few more repetitions where one bulk is noisy): a
:class:`validation.campaign.Campaign`, one task per (setting, d, seed, repetition) with a row per
alpha, exported sorted to ``validation/reports/data/spiked_reference.csv`` (resumable)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..campaign import Campaign, Schema, Store, run_campaign
from ..paths import data_file
from . import campaign as spiked
from .reference import Reference, ReferenceError

COMMITTED = spiked.COMMITTED.with_name("spiked_reference.csv")
SCHEMA = Schema.of(name=str, d=int, p=int, alpha=float, seed=int, rep=int, risk=float,
                   iterations=int, residual=float, seconds=float)
COLUMNS = list(SCHEMA.names)


def _task(job: tuple[spiked.CampaignSetting, int, int, int]) -> list[dict]:
    """The reference at every alpha of a setting on the bulk of repetition ``rep`` (child
    ``rep`` of ``SeedSequence(seed)``, the simulator's streams); NaN where it fails."""
    c, d, rep, seed = job
    s = c.at(d)
    ref = Reference.sampled(s, np.random.SeedSequence(seed).spawn(rep + 1)[rep])
    rows = []
    for a in c.alphas:
        t0 = time.perf_counter()
        try:
            out = ref.solve(a)
            risk, iters, resid = out.risk, out.iterations, out.residual
        except ReferenceError as exc:
            risk, iters, resid = float("nan"), -1, float("nan")
            print(f"reference {c.name} alpha={a:g}: {exc}", file=sys.stderr, flush=True)
        rows.append(dict(name=c.name, d=d, p=s.p, alpha=a, seed=seed, rep=rep, risk=risk,
                         iterations=iters, residual=resid, seconds=time.perf_counter() - t0))
    return rows


def campaign(names: Sequence[str] | None = None, *, d: int = spiked.D, max_p: int = 1000,
             reps: Sequence[int] = (0,), seed: int = spiked.SEED) -> Campaign:
    """The reference over the settings ``names`` (default: all with p <= ``max_p``) and the
    bulks of repetitions ``reps``."""
    chosen = list(spiked.SETTINGS) if not names else [spiked.BY_NAME[n] for n in names]
    jobs = tuple((c, int(d), int(rep), int(seed)) for c in chosen if c.at(d).p <= max_p
                 for rep in reps)
    return Campaign("spiked_reference", jobs, _task, SCHEMA,
                    key_columns=("name", "d", "seed", "rep"),
                    key=lambda j: (j[0].name, j[1], j[3], j[2]), record=spiked.record)


def load(path: str | Path | None = None):
    """Every stored reference value (an empty DataFrame if there is none)."""
    import pandas as pd

    path = Path(path) if path is not None else data_file(COMMITTED, "validation", "reports",
                                                         "data")[0]
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path)


def run(names: Sequence[str] | None = None, *, d: int = spiked.D, max_p: int = 1000,
        reps: Sequence[int] = (0,), store: str | Path | None = None,
        csv: str | Path | None = None, n_jobs: int = 1, progress: bool = True) -> int:
    """Solve the reference for the settings and repetitions the store lacks
    (:func:`validation.campaign.run_campaign`), then export every stored value to ``csv``
    (default: the committed CSV in a checkout; the store, default beside it, starts from it).
    Returns the number of (setting, repetition) tasks run."""
    c = campaign(names, d=d, max_p=max_p, reps=reps)
    read, write = data_file(COMMITTED, "validation", "reports", "data")
    csv_path = Path(csv) if csv is not None else write
    with Store(Path(store) if store is not None else write.with_suffix(".sqlite")) as st:
        for source in dict.fromkeys([csv_path, *(() if csv is not None else (read,))]):
            if source.exists():
                st.import_csv(c, source)
        out = run_campaign(c, st, n_jobs=n_jobs, progress=progress)
        st.export_csv(c, csv_path)
    return out.ran
