"""Figure 2 — the first batch matters (docs/THEORY.md §3).

Test error vs alpha for alpha0 in {0.5, 2, 20}, sigma = tanh, g = sign, eta_tilde = 3,
lam = 0.1, beta = 1, with the RF curve and the best linear predictor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style
from .cache import cached_curve
from .common import best_linear_level, quality

NAME = "batch_size"
DESCRIPTION = "test error vs alpha for alpha0 in {0.5, 2, 20}: bigger first batch, better features"
SIGMA, TARGET, ETA, LAM, BETA = "tanh", "sign", 3.0, 0.1, 1.0
ALPHA0S = (0.5, 2.0, 20.0)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import risk_curve
    from validation.protocol.simulator import Setting

    q = quality(quick)
    alphas = np.linspace(0.1, 5.0, q.points)
    fig, axes = style.figure()
    ax = axes[0, 0]
    common = dict(sigma=SIGMA, target=TARGET, lam=LAM, beta=BETA, model="srf")
    rf = risk_curve(alphas, alpha0=1.0, eta=0.0, progress=False, **common)
    ax.plot(rf["alpha"], rf["risk"], color="0.2", ls="-.", label=r"RF, $\tilde\eta=0$")
    s = Setting(model="rf", target=TARGET, sigma=SIGMA, alpha=1.0, alpha0=1.0, eta=0.0, lam=LAM,
                beta=BETA, d=q.d, n_test=q.n_test)
    style.sim_markers(ax, cached_curve(NAME, s, q.markers, seeds=q.seeds, refresh=refresh,
                                quick=quick),
                      "0.2", None, marker="D")
    for color, alpha0 in zip(style.PALETTE, ALPHA0S, strict=False):
        th = risk_curve(alphas, alpha0=alpha0, eta=ETA, progress=False, **common)
        ax.plot(th["alpha"], th["risk"], color=color, label=rf"$\alpha_0={alpha0:g}$")
        for model, filled in (("srf", True), ("network", False)):
            s = Setting(model=model, sigma=SIGMA, target=TARGET, alpha=1.0, alpha0=alpha0,
                        eta=ETA, lam=LAM, beta=BETA, d=q.d, n_test=q.n_test)
            sim = cached_curve(NAME, s, q.markers, seeds=q.seeds, refresh=refresh, quick=quick)
            style.sim_markers(ax, sim, color, None, marker="o" if filled else "s", filled=filled)
    style.risk_axes(ax, linear_level=best_linear_level(TARGET), d=q.d, title=(
        rf"$\sigma=\tanh$, $g=\mathrm{{sign}}$, $\tilde\eta={ETA:g}$, "
        rf"$\lambda={LAM:g}$, $\beta={BETA:g}$; {q.seeds} seeds, ±1 s.e."))
    fig.text(0.01, -0.02, "Open squares above the line at alpha0 = 0.5: with a large step on a "
             "small batch the bulk added to W0 has rank <= n0 and is not isotropic, which the "
             "sRF mapping assumes (validation/REPORT.md).", fontsize=7, ha="left", va="top",
             wrap=True)
    return style.save(fig, outdir, NAME)
