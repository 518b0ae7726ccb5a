"""Figure 1 — feature learning beats random features (docs/THEORY.md §3-§5).

Test error vs alpha for eta_tilde in {0 (RF), 0.5, 1, 3} at alpha0 = 2, sigma = g = tanh,
lam = 0.01, beta = 1: theory lines, srf simulations (filled) and network simulations (open),
the best linear predictor dashed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style
from .cache import cached_curve
from .common import best_linear_level, quality

NAME = "feature_learning"
DESCRIPTION = "test error vs alpha for eta_tilde in {0, 0.5, 1, 3}: one step beats RF"
SIGMA, TARGET, ALPHA0, LAM, BETA = "tanh", "tanh", 2.0, 0.01, 1.0
ETAS = (0.0, 0.5, 1.0, 3.0)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import risk_curve
    from validation.protocol.simulator import Setting

    q = quality(quick)
    alphas = np.linspace(0.1, 5.0, q.points)
    fig, axes = style.figure()
    ax = axes[0, 0]
    for color, eta in zip(style.PALETTE, ETAS, strict=False):
        th = risk_curve(alphas, sigma=SIGMA, target=TARGET, alpha0=ALPHA0, eta=eta, lam=LAM,
                        beta=BETA, progress=False, model="srf")
        label = r"RF, $\tilde\eta=0$" if eta == 0 else rf"$\tilde\eta={eta:g}$"
        ax.plot(th["alpha"], th["risk"], color=color, label=label)
        for model, filled in (("srf", True), ("network", False)):
            if eta == 0 and model == "network":
                continue
            s = Setting(model="rf" if eta == 0 else model, sigma=SIGMA, target=TARGET, alpha=1.0,
                        alpha0=ALPHA0, eta=eta, lam=LAM, beta=BETA, d=q.d, n_test=q.n_test)
            sim = cached_curve(NAME, s, q.markers, seeds=q.seeds, refresh=refresh, quick=quick)
            style.sim_markers(ax, sim, color, None, marker="o" if filled else "s", filled=filled)
    style.risk_axes(ax, linear_level=best_linear_level(TARGET), d=q.d, title=(
        rf"$\sigma=g=\tanh$, $\alpha_0={ALPHA0:g}$, $\lambda={LAM:g}$, "
        rf"$\beta={BETA:g}$; {q.seeds} seeds, ±1 s.e."))
    return style.save(fig, outdir, NAME)
