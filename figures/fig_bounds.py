"""Figure 3 — risk bounds (docs/THEORY.md §7).

sRF with c = gamma = 1, r = 0.9, sigma = tanh, g = sin: the risk along alpha for two lam, with
the large-alpha upper bound inf_b E[(g - b mu0(k))^2] and lower bound
inf_{b1,b2} E[(g - b1 mu0(k) - b2 mu1(k) k)^2]; sRF simulations as markers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style
from .cache import cached_curve
from .common import quality

NAME = "bounds"
DESCRIPTION = "risk vs alpha between the large-alpha upper and lower bounds (c = gamma = 1)"
SIGMA, TARGET, R, BETA = "tanh", "sin", 0.9, 1.0
LAMS = (0.001, 0.1)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import SpikeMapping, risk_curve
    from asymptotics.models.bounds import risk_bounds
    from validation.protocol.simulator import Setting

    q = quality(quick)
    spike = SpikeMapping(r=R, c=1.0, gamma=1.0, rho=0.0, scale=1.0, residual_mean=0.0,
                         residual_second_moment=0.0, u_norm=0.0)
    b = risk_bounds(SIGMA, TARGET, r=R, c=1.0, gamma=1.0)
    alphas = np.geomspace(0.1, 50.0, q.points)
    markers = (0.5, 2.0, 8.0, 20.0) if not quick else (1.0, 4.0)
    fig, axes = style.figure()
    ax = axes[0, 0]
    for color, lam in zip(style.PALETTE, LAMS, strict=False):
        th = risk_curve(alphas, sigma=SIGMA, target=TARGET, alpha0=1.0, eta=1.0, lam=lam,
                        beta=BETA, spike=spike, progress=False, model="srf")
        ax.plot(th["alpha"], th["risk"], color=color, label=rf"theory, $\lambda={lam:g}$")
        s = Setting(model="srf", sigma=SIGMA, target=TARGET, alpha=1.0, alpha0=1.0, eta=1.0,
                    lam=lam, beta=BETA, d=min(q.d, 600), n_test=q.n_test, spike=(R, 1.0, 1.0))
        sim = cached_curve(NAME, s, markers, seeds=q.seeds, refresh=refresh,
                                quick=quick)
        style.sim_markers(ax, sim, color, f"sRF simulation, d={s.d}")
    ax.axhline(b.upper, color="0.2", ls="--", lw=1, label=rf"upper bound {b.upper:.3f}")
    ax.axhline(b.lower, color="0.2", ls=":", lw=1.2, label=rf"lower bound {b.lower:.3f}")
    ax.set_xscale("log")
    ax.set_xlabel(style.LABELS["alpha"])
    ax.set_ylabel(style.LABELS["risk"])
    ax.set_title(rf"sRF, $r={R:g}$, $c=\gamma=1$, $\sigma=\tanh$, $g=\sin$, $\beta={BETA:g}$")
    ax.legend()
    return style.save(fig, outdir, NAME)
