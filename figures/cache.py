"""Simulation data for figures, cached as CSV under ``figures/data/`` keyed by their parameters.

The key is a hash of every parameter (setting, alphas, lams, seeds, seed), so a change of any of
them recomputes and a style change re-renders from the cache in seconds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


def cached_curve(name: str, setting, alphas: Sequence[float], lams: Sequence[float] | None = None,
                 *, seeds: int, seed: int = 0, refresh: bool = False, quick: bool = False):
    """``validation.simulator.simulate_curve`` as a DataFrame, read from / written to the cache
    (``figures/data/``, or ``figures/data/quick/`` for the smoke mode)."""
    import pandas as pd

    from validation.simulator import simulate_curve

    params = dict(asdict(setting), alphas=list(map(float, alphas)),
                  lams=None if lams is None else list(map(float, lams)), seeds=seeds, seed=seed)
    key = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    folder = DATA_DIR / "quick" if quick else DATA_DIR  # quick-mode data are not committed
    path = folder / f"{name}_{key[:12]}.csv"
    if path.exists() and not refresh:
        return pd.read_csv(path)
    results = simulate_curve(setting, alphas, lams, seeds=seeds, seed=seed)
    df = pd.DataFrame([r.as_dict() for r in results])
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, float_format="%.10g")
    return df
