# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. Reproduce a published figure
#
# The headline result of Cui et al. 2024 (arXiv 2402.04980; see the bibliography) is that one
# giant gradient step lowers the test error of the ridge readout far below random features at
# every sample ratio, and that the spiked-random-features equations predict the curve sharply.
# The project reproduces it as its *feature-learning* figure
# (`python -m figures feature_learning`, source `figures/fig_feature_learning.py`), with the
# parameters below; here we recompute its theory lines with the public API and check them
# against two independent computations:
#
# 1. at $\tilde\eta = 0$, the closed-form random-features ridge risk of
#    `asymptotics.models.rf_ridge` (deterministic equivalents, no code shared with the solver);
# 2. at every $\tilde\eta$, the Monte Carlo behind the published figure, committed in
#    `figures/data/` ($d = 1000$, 6 seeds per point; `GIANTSTEP_FULL=1` also re-simulates one
#    curve from scratch).
#
# | parameter | value |
# |---|---|
# | activation $\sigma$, target $g$ | tanh, tanh |
# | first batch $\alpha_0 = n_0/d$ | 2 |
# | step sizes $\tilde\eta$ | 0 (random features), 0.5, 1, 3 |
# | ridge $\lambda$ (sum loss) | 0.01 |
# | width ratio $\beta = p/d$ | 1 |
# | theory | `model="srf"` (the lines of the figure) |

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import asymptotics as A
import figures
from asymptotics.models.rf_ridge import rf_ridge_risk

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
SIGMA, TARGET, ALPHA0, LAM, BETA = "tanh", "tanh", 2.0, 0.01, 1.0
ETAS = (0.0, 0.5, 1.0, 3.0)
alphas = np.linspace(0.1, 5.0, 80 if FULL else 30)
common = dict(sigma=SIGMA, target=TARGET, alpha0=ALPHA0, lam=LAM, beta=BETA, progress=False)

# %% [markdown]
# ## The theory lines

# %%
lines = {eta: A.risk_curve(alphas, eta=eta, model="srf", **common) for eta in ETAS}
assert all(df.converged.all() for df in lines.values())
for eta in ETAS:
    r = lines[eta].risk
    print(f"eta = {eta:3g}: risk {r.iloc[0]:.4f} at alpha = {alphas[0]:g}, "
          f"{r.iloc[-1]:.4f} at alpha = {alphas[-1]:g}")

# %% [markdown]
# ## Check 1: random features against the closed form
#
# At $\tilde\eta = 0$ the model is random-features ridge, whose risk has an independent
# closed form (`asymptotics.models.rf_ridge.rf_ridge_risk`, THEORY.md §7):

# %%
closed = np.array([rf_ridge_risk(a, sigma=SIGMA, target=TARGET, lam=LAM, beta=BETA)
                   for a in alphas])
rel = np.abs(lines[0.0].risk.to_numpy() - closed) / closed
print(f"largest relative difference, solver vs closed form: {rel.max():.1e}")
assert rel.max() < 1e-8

# %% [markdown]
# ## Check 2: the figure's simulations
#
# The figure's markers are simulations of the sRF model (and of random features at
# $\tilde\eta = 0$) at $d = p = 1000$, committed as CSV files. We read them and compute the
# z-scores against the sRF theory at the simulated width $p = 1000$ (`p=`).

# %%
data_dir = Path(figures.__file__).parent / "data"
sims = pd.concat([pd.read_csv(f) for f in sorted(data_dir.glob("feature_learning_*.csv"))])
sims = sims[(sims.model != "network") & (sims.d == 1000)].sort_values(["eta", "alpha"])
rows = []
for eta, part in sims.groupby("eta"):
    th_p = A.risk_curve(part.alpha.to_numpy(), eta=eta, model="srf", p=1000, **common)
    z = (part.sim_mean.to_numpy() - th_p.risk.to_numpy()) / part.sim_se.to_numpy()
    rows += [dict(eta=eta, alpha=a, sim=m, se=s, theory_p=t, z=zz) for a, m, s, t, zz in
             zip(part.alpha, part.sim_mean, part.sim_se, th_p.risk, z, strict=True)]
table = pd.DataFrame(rows)
print(f"{len(table)} simulated points, {int(sims.seeds.iloc[0])} seeds each; "
      f"largest |z| = {table.z.abs().max():.2f}, mean z = {table.z.mean():+.2f}")
assert len(table) == 24 and table.z.abs().max() < 4
table.round(4)

# %% [markdown]
# With `GIANTSTEP_FULL=1` one curve ($\tilde\eta = 1$) is simulated again from scratch at the
# figure's size (about a minute on two cores).

# %%
if FULL:
    from validation.simulator import Setting, simulate_curve

    s = Setting(model="srf", sigma=SIGMA, target=TARGET, alpha=1.0, alpha0=ALPHA0, eta=1.0,
                lam=LAM, beta=BETA, d=1000)
    markers = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]
    fresh = simulate_curve(s, markers, seeds=6, seed=1)
    th_p = A.risk_curve(markers, eta=1.0, model="srf", p=s.p, **common).risk.to_numpy()
    z_fresh = np.array([(r.mean - t) / r.se for r, t in zip(fresh, th_p, strict=True)])
    print("fresh simulation, z:", np.round(z_fresh, 2))
    assert np.abs(z_fresh).max() < 4

# %% [markdown]
# ## The figure

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.2))
for color, eta in zip(["C0", "C1", "C2", "C3"], ETAS, strict=True):
    label = r"RF, $\tilde\eta=0$" if eta == 0 else rf"$\tilde\eta={eta:g}$"
    ax.plot(alphas, lines[eta].risk, color=color, label=label)
    pts = table[table.eta == eta]
    ax.errorbar(pts.alpha, pts.sim, yerr=pts.se, fmt="o", color=color, ms=4, capsize=2)
ax.plot(alphas, closed, "k:", lw=1, label="RF closed form")
ax.set_xlabel(r"$\alpha = n/d$")
ax.set_ylabel("test error")
ax.set_title(r"$\sigma=g=\tanh$, $\alpha_0=2$, $\lambda=0.01$, $\beta=1$; markers: sRF/RF "
             "simulations, d = 1000")
ax.legend()
plt.show()
