"""The semi-empirical reference values of the campaign points (:mod:`.reference` on the bulk of
repetition 0 of each setting, and of a few more repetitions where one bulk is noisy), kept in
``validation/reports/data/spiked_reference.csv`` (:mod:`validation.store`, one block per point
and repetition; resumable)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..paths import data_file
from ..store import Layout, Store, frame, read_blocks
from . import campaign
from .reference import Reference, ReferenceError

COMMITTED = campaign.COMMITTED.with_name("spiked_reference.csv")
COLUMNS = ["name", "d", "p", "alpha", "seed", "rep", "risk", "iterations", "residual",
           "seconds"]
LAYOUT = Layout(block=lambda row: (f"{row['name']}|{row['d']}|{float(row['alpha']):.10g}|"
                                   f"{row['rep']}"), size=lambda row: 1)


def load(path: str | Path | None = None):
    """Every stored reference value (an empty DataFrame if there is none)."""
    import pandas as pd

    path = Path(path) if path is not None else data_file(COMMITTED, "validation", "reports",
                                                         "data")[0]
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    blocks = read_blocks(path, COLUMNS, LAYOUT)
    return frame(COLUMNS, [ln for b in blocks.values() for ln in b])


def run(names: Sequence[str] | None = None, *, d: int = campaign.D, max_p: int = 1000,
        reps: Sequence[int] = (0,), store: str | Path | None = None,
        log: Callable[[str], None] | None = None) -> int:
    """Solve the reference at every alpha of the settings ``names`` (default: all with
    p <= ``max_p``) on the bulks of repetitions ``reps`` that the store lacks; one line per
    point."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    chosen = list(campaign.SETTINGS) if not names else [campaign.BY_NAME[n] for n in names]
    chosen = [c for c in chosen if c.at(d).p <= max_p]
    path = Path(store) if store is not None else data_file(COMMITTED, "validation", "reports",
                                                           "data")[1]
    done = 0
    with Store(path, COLUMNS, LAYOUT, what="reference store") as st:
        for c, rep in [(c, rep) for c in chosen for rep in reps]:
            s = c.at(d)
            todo = [a for a in c.alphas if f"{c.name}|{d}|{a:.10g}|{rep}" not in st.blocks]
            if not todo:
                continue
            child = np.random.SeedSequence(campaign.SEED).spawn(rep + 1)[rep]
            ref = Reference.sampled(s, child)
            for a in todo:
                t0 = time.perf_counter()
                try:
                    out = ref.solve(a)
                    risk, iters, resid = out.risk, out.iterations, out.residual
                except ReferenceError as exc:
                    risk, iters, resid = float("nan"), -1, float("nan")
                    log(f"{c.name} alpha={a:g}: {exc}")
                sec = time.perf_counter() - t0
                st.add([dict(name=c.name, d=d, p=s.p, alpha=a, seed=campaign.SEED, rep=rep,
                             risk=risk, iterations=iters, residual=resid, seconds=sec)])
                done += 1
                log(f"reference {c.name} d={d} p={s.p} alpha={a:g} rep={rep}: {risk:.6g} "
                    f"({iters} iterations, {sec:.0f} s)")
    return done
