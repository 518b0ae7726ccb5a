"""Simulation data for figures, cached as CSV under ``figures/data/`` keyed by their parameters.

The key is a hash of what determines the numbers and nothing else: the setting (without
``alpha``, and without ``lam`` when ``lams`` are given: ``simulate_curve`` ignores them), alphas,
lams, seeds and seed. Setting fields added after the committed data were computed enter the key
only when they differ from the value those data were computed with (``estimator = "mc"``), so the
committed files stay valid and a new estimator computes new data. A style change re-renders
from the cache in seconds. A file is one block of the package's row store
(:class:`validation.protocol.rows.TableCache`): written in one atomic append, ``%.10g`` numbers as
before.
The committed files ship as package data; new files go beside them in a checkout, else to the
user cache (:mod:`validation.paths`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from validation.paths import data_file
from validation.protocol.rows import Layout, TableCache, g10_cell

DATA_DIR = Path(__file__).resolve().parent / "data"


#: a file holds one curve: one block of the store
CURVE = "curve"


def cached_curve(name: str, setting, alphas: Sequence[float], lams: Sequence[float] | None = None,
                 *, seeds: int, seed: int = 0, refresh: bool = False, quick: bool = False):
    """``validation.protocol.simulator.simulate_curve`` as a DataFrame, read from / written to the
    cache
    (``figures/data/``, or ``figures/data/quick/`` for the smoke mode)."""
    from validation.protocol.simulator import simulate_curve

    key = cache_key(setting, alphas, lams, seeds=seeds, seed=seed)
    folder = DATA_DIR / "quick" if quick else DATA_DIR  # quick-mode data are not committed
    path, out = data_file(folder / f"{name}_{key[:12]}.csv", "figures", *(["quick"] * quick))
    rows = len(alphas) * (1 if lams is None else len(lams))
    layout = Layout(block=lambda row: CURVE, size=lambda row: rows, cell=g10_cell)
    with TableCache(path, out, layout, fresh=refresh, what="figure cache") as cache:
        if cache.get(CURVE) is None:
            results = simulate_curve(setting, alphas, lams, seeds=seeds, seed=seed)
            cache.add([r.as_dict() for r in results])
        return cache.frame([CURVE])


#: Setting fields newer than the committed data, with the value those data were computed with
LATER_FIELDS = {"estimator": "mc"}


def cache_key(setting, alphas: Sequence[float], lams: Sequence[float] | None, *, seeds: int,
              seed: int) -> str:
    """SHA-256 of what determines a cached curve (module docstring)."""
    fields = {k: v for k, v in asdict(setting).items()
              if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}
    fields.pop("alpha")  # simulate_curve runs the given alphas, never setting.alpha
    if lams is not None:
        fields.pop("lam")  # nor setting.lam when lams are given
    params = dict(fields, alphas=list(map(float, alphas)),
                  lams=None if lams is None else list(map(float, lams)), seeds=seeds, seed=seed)
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
