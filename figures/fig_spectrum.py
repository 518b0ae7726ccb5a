"""Figure 5 — the learned spectrum (docs/THEORY.md §3, §6).

Singular values of W0 and of W1 after one giant step (THEORY.md §1 network, sigma = g = tanh,
alpha0 = 2, eta_tilde = 1, beta = 0.5): the bulk follows Marchenko–Pastur (W0: MP(beta); W1: the
same law scaled by sqrt(c)), and one spike detaches at r sqrt(p) — the sRF picture of §3.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import style

NAME = "spectrum"
DESCRIPTION = "singular values of W0 vs W1: MP bulk (scaled by sqrt c) plus one spike at r sqrt p"
SIGMA, TARGET, ALPHA0, ETA, BETA = "tanh", "tanh", 2.0, 1.0, 0.5


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import get_function, srf_mapping
    from asymptotics.measures.marchenko_pastur import mp_singular_density
    from validation.protocol.simulator import network_step, sphere_rows, unit_vector

    d = 300 if quick else 2000
    p = int(BETA * d)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(5).spawn(3)]
    W0 = sphere_rows(rngs[0], p, d)
    theta = unit_vector(rngs[1], d)
    sigma, target = get_function(SIGMA), get_function(TARGET)
    W1 = network_step(W0, theta, sigma, target, n0=int(ALPHA0 * d), eta_tilde=ETA, delta=0.0,
                      rng=rngs[2])
    m = srf_mapping(SIGMA, TARGET, alpha0=ALPHA0, eta=ETA)
    s0 = np.linalg.svd(W0, compute_uv=False)
    s1 = np.linalg.svd(W1, compute_uv=False)
    fig, axes = style.figure(ncols=3, width=3.8, height=3.4)
    grid = np.linspace(0, (1 + math.sqrt(BETA)) * math.sqrt(m.c) * 1.1, 400)
    for ax, s, scale, title, color in (
            (axes[0, 0], s0, 1.0, r"$W_0$ (initialisation)", style.PALETTE[0]),
            (axes[0, 1], s1[1:], math.sqrt(m.c), r"$W_1$ without its top value",
             style.PALETTE[1])):
        ax.hist(s, bins=50, density=True, color=color, alpha=0.55, label="singular values")
        ax.plot(grid, mp_singular_density(grid, BETA, scale), "k-", lw=1.2,
                label=r"MP$(\beta)$" + ("" if scale == 1 else r", scaled by $\sqrt{c}$"))
        ax.set_title(title)
        ax.set_xlabel("singular value")
        ax.legend(loc="upper left")
    axes[0, 0].set_ylabel("density")
    ax = axes[0, 2]
    k = np.arange(1, 9)
    ax.plot(k, s0[:8], "o", color=style.PALETTE[0], label=r"$W_0$")
    ax.plot(k, s1[:8], "s", color=style.PALETTE[1], label=r"$W_1$")
    ax.axhline(m.r * math.sqrt(p), color="k", ls="--", lw=1,
               label=rf"sRF spike $r\sqrt{{p}}={m.r * math.sqrt(p):.1f}$")
    ax.axhline((1 + math.sqrt(BETA)) * math.sqrt(m.c), color="0.5", ls=":", lw=1,
               label=r"bulk edge $\sqrt{c}(1+\sqrt{\beta})$")
    ax.set_xlabel("rank")
    ax.set_title("largest singular values")
    ax.legend(loc="center right")
    fig.suptitle(rf"one giant step, $\sigma=g=\tanh$, $\alpha_0={ALPHA0:g}$, "
                 rf"$\tilde\eta={ETA:g}$, $\beta={BETA:g}$, $d={d}$", fontsize=10)
    return style.save(fig, outdir, NAME)
