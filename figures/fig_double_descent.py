"""Figure 4 — double descent at initialisation (THEORY.md §7, random features).

RF test error vs alpha for several lam, one panel per beta in {0.5, 1, 2}: for small lam the
interpolation peak at alpha = beta. sigma = g = tanh; rf simulations as markers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style
from .cache import cached_curve
from .common import quality

NAME = "double_descent"
DESCRIPTION = "random features: the interpolation peak at alpha = beta for small lambda"
SIGMA, TARGET = "tanh", "tanh"
BETAS = (0.5, 1.0, 2.0)
LAMS = (1e-4, 1e-2, 1e-1, 1.0)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import risk_curve
    from validation.protocol.simulator import Setting

    q = quality(quick)
    fig, axes = style.figure(ncols=3, width=3.9, height=3.5, sharey=True)
    for ax, beta in zip(axes[0], BETAS, strict=True):
        alphas = np.unique(np.concatenate([np.linspace(0.1, 4 * beta, q.points),
                                           beta * np.linspace(0.9, 1.1, 9)]))
        markers = tuple(beta * m for m in ((0.5, 0.9, 1.1, 2.0, 3.5) if not quick else (0.5, 2)))
        for color, lam in zip(style.PALETTE, LAMS, strict=False):
            th = risk_curve(alphas, sigma=SIGMA, target=TARGET, alpha0=1.0, eta=0.0, lam=lam,
                            beta=beta, progress=False, model="srf")
            ax.plot(th["alpha"], th["risk"], color=color, label=rf"$\lambda={lam:g}$")
        s = Setting(model="rf", sigma=SIGMA, target=TARGET, alpha=1.0, alpha0=1.0, eta=0.0,
                    lam=LAMS[0], beta=beta, d=min(q.d, 500), n_test=q.n_test)
        sim = cached_curve(NAME, s, markers, LAMS, seeds=q.seeds, refresh=refresh,
                                quick=quick)
        for color, lam in zip(style.PALETTE, LAMS, strict=False):
            style.sim_markers(ax, sim[np.isclose(sim["lam"], lam)], color, None)
        ax.axvline(beta, color="0.5", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set_xlabel(style.LABELS["alpha"])
        ax.set_title(rf"$\beta={beta:g}$ (RF, d={s.d}, ±1 s.e.)")
    axes[0, 0].set_ylabel(style.LABELS["risk"])
    axes[0, 0].legend()
    return style.save(fig, outdir, NAME)
