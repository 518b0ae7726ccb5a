"""Phase diagram — the test error over (alpha, eta_tilde) and the gain of one giant step over RF.

Theory only (THEORY.md §1 conventions): sigma = g = tanh, alpha0 = 2, lam = 0.01, beta = 1,
delta = 0, on a 50 x 50 grid alpha in [0.2, 5], eta_tilde in [0, 3] (12 x 12 with ``quick``).
Left: the risk R(alpha, eta_tilde). Right: the gain R_RF(alpha) - R(alpha, eta_tilde), with
R_RF the eta_tilde = 0 row (random features); positive where the step helps. Computed with the
sweep runner (validation.sweep); its resumable store under figures/data/ is the cache.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np

from validation.paths import data_file

from . import style
from .cache import DATA_DIR

NAME = "phase_diagram"
DESCRIPTION = "risk and the gain over random features on the (alpha, eta_tilde) plane"
FIXED = dict(sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, beta=1.0, delta=0.0)


def grid(quick: bool) -> dict[str, list[float]]:
    """alpha (x) and eta_tilde (y, starting at 0: the RF baseline) of the diagram."""
    n = 12 if quick else 50
    return {"alpha": [float(v) for v in np.linspace(0.2, 5.0, n)],
            "eta": [float(v) for v in np.linspace(0.0, 3.0, n)]}


def compute(quick: bool = False, refresh: bool = False):
    """The grid's theory rows, from / into the sweep's data
    ``figures/data/[quick/]phase_diagram_*.csv`` (the export of a sweep store beside it, which
    starts from the CSV; resumable: an interrupted run continues)."""
    from validation.sweep import sweep

    g = grid(quick)
    key = hashlib.sha256(json.dumps(dict(FIXED, **g), sort_keys=True).encode()).hexdigest()
    committed = (DATA_DIR / "quick" if quick else DATA_DIR) / f"{NAME}_{key[:12]}.csv"
    read, csv = data_file(committed, "figures", *(["quick"] * quick))
    store = csv.with_suffix(".sqlite")
    if refresh:
        for path in (csv, store, Path(f"{store}-wal"), Path(f"{store}-shm")):
            path.unlink(missing_ok=True)
    elif read != csv and read.exists() and not csv.exists():  # installed: from the committed
        csv.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(read, csv)
    return sweep("theory", g, store=store, csv=csv, progress=False, **FIXED)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm, TwoSlopeNorm

    df = compute(quick, refresh)
    risk = df.pivot_table(index="eta", columns="alpha", values="risk", dropna=False)
    alphas, etas = risk.columns.to_numpy(float), risk.index.to_numpy(float)
    r = risk.to_numpy(float)
    gain = r[0][None, :] - r  # row eta_tilde = 0 is random features
    fig, axes = style.figure(ncols=2, width=4.6, height=3.8)
    ax = axes[0, 0]
    z = np.ma.masked_invalid(r)
    cmap = colormaps["viridis"].with_extremes(bad="0.8")
    mesh = ax.pcolormesh(alphas, etas, z, shading="nearest", cmap=cmap,
                         norm=LogNorm(z.min(), z.max()))
    fig.colorbar(mesh, ax=ax, label=style.LABELS["risk"])
    ax.set_title(r"test error $\mathcal{R}(\alpha, \tilde\eta)$")
    ax = axes[0, 1]
    zg = np.ma.masked_invalid(gain)
    span = float(np.abs(zg).max()) or 1.0
    cmap = colormaps["RdBu_r"].with_extremes(bad="0.8")
    mesh = ax.pcolormesh(alphas, etas, zg, shading="nearest", cmap=cmap,
                         norm=TwoSlopeNorm(0.0, -span, span))
    fig.colorbar(mesh, ax=ax, label=r"$\mathcal{R}_{\rm RF} - \mathcal{R}$")
    if np.nanmin(gain[1:]) < 0 < np.nanmax(gain[1:]):
        ax.contour(alphas, etas[1:], gain[1:], levels=[0.0], colors="k", linewidths=0.8)
    ax.set_title(r"gain over random features ($\tilde\eta = 0$)")
    for ax in axes[0]:
        ax.set_xlabel(style.LABELS["alpha"])
        ax.set_ylabel(style.LABELS["eta"])
        ax.grid(False)
    n_bad = int((~df["converged"]).sum())
    note = f"; grey: {n_bad} not converged" if n_bad else ""
    fig.suptitle(rf"$\sigma = g = \tanh$, $\alpha_0 = 2$, $\lambda = 0.01$, $\beta = 1$ "
                 rf"(theory, {len(alphas)}$\times${len(etas)} grid{note})", fontsize=10)
    return style.save(fig, outdir, NAME)
