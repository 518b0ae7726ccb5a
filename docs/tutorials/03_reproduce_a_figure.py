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
# Then it takes the parameters as the paper writes them (its notation: $n_0$, $\eta = \tilde\eta
# d$, $\sigma_\star$), translates them in code and checks the theory against a fresh simulation
# of the trained network in that setting.
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
    from validation.protocol.simulator import Setting, simulate_curve

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

# %% [markdown]
# ## The paper's own parameters
#
# The figure above uses the project's parameters. Cui et al. 2024 state theirs in their own
# notation; the learning curve the authors released with the paper
# (<https://github.com/SPOC-group/OneStepGD_asymptotics>) trains the network with
# $\sigma = \sigma_\star = \tanh$, a first batch of $n_0 = d/2$ samples, $\eta = \tilde\eta\, d$
# with $\tilde\eta = 1$, $p = d = 2000$, ridge $\lambda = 0.01$ (a sum over samples, as here)
# on $n = \alpha d$ samples, $\alpha$ from 0.2 to 3. The translation (`docs/notation.md`) is done
# in code below: the package's $\tilde\eta$ is $\eta / p$, which at $p = d$ is the same number.

# %%
PAPER = dict(d=2000, p=2000, n0=1000, eta_tilde=1.0, lam=0.01, sigma="tanh",
             sigma_star="tanh", alphas=np.linspace(0.2, 3.0, 7))


def from_cui2024(*, d, p, n0, eta_tilde, lam, sigma, sigma_star, alphas):
    """The package's keyword arguments and alphas for parameters written as Cui et al. 2024
    write them (eta = eta_tilde d; the package: eta = eta_tilde p)."""
    kw = dict(sigma=sigma, target=sigma_star, alpha0=n0 / d, beta=p / d,
              eta=eta_tilde * d / p, lam=lam)
    return kw, np.asarray(alphas, dtype=float)


ours, paper_alphas = from_cui2024(**PAPER)
print("in the package's parameters:", ours)
assert ours == dict(sigma="tanh", target="tanh", alpha0=0.5, beta=1.0, eta=1.0, lam=0.01)

# %% [markdown]
# The trained network is described by the network theory (`model="network"`, the default; at the
# simulated width with `p=`) and, more roughly, by the sRF surrogate of the paper
# (`model="srf"`). We simulate the paper's protocol with the package's simulator (the trained
# network, `model="network"`) at a smaller d (quick: d = 300; `GIANTSTEP_FULL=1`: d = 1000) and
# compare.

# %%
from validation.protocol.simulator import Setting, simulate_curve  # noqa: E402

d_sim, seeds_sim = (1000, 6) if FULL else (300, 6)
net = simulate_curve(Setting(model="network", alpha=1.0, d=d_sim, **ours), paper_alphas,
                     seeds=seeds_sim, seed=1, progress=False)
th_net = A.risk_curve(paper_alphas, model="network", p=d_sim, progress=False, **ours)
th_srf = A.risk_curve(paper_alphas, model="srf", progress=False, **ours)
paper_table = pd.DataFrame(dict(
    alpha=paper_alphas, sim=[r.mean for r in net], se=[r.se for r in net],
    network_theory=th_net.risk, srf_theory=th_srf.risk))
paper_table["z"] = (paper_table.sim - paper_table.network_theory) / paper_table.se
print(paper_table.round(4).to_string(index=False))
print(f"largest |z| against the network theory at p = d = {d_sim}: "
      f"{paper_table.z.abs().max():.2f}")
assert th_net.converged.all() and paper_table.z.abs().max() < 4

# %% [markdown]
# The points of one simulated curve share each repetition's first layer and test inputs, so
# their errors are correlated and their z-scores tend to have one sign; the check is the largest
# |z|, and the curve as a whole moves by about one standard error from one set of seeds to
# another.

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.2))
ax.plot(paper_alphas, th_net.risk, "C0-", label=f"network theory, p = {d_sim}")
ax.plot(paper_alphas, th_srf.risk, "C1--", label="sRF theory (the paper's surrogate)")
ax.errorbar(paper_alphas, paper_table.sim, yerr=paper_table.se, fmt="o", color="C0", ms=4,
            capsize=2, label=f"trained network, d = {d_sim}, {seeds_sim} seeds")
ax.set_xlabel(r"$\alpha = n/d$")
ax.set_ylabel("test error")
ax.set_title(r"Cui et al. 2024's setting: $\sigma=\sigma_\star=\tanh$, $n_0 = d/2$, "
             r"$\eta = d$, $\lambda = 0.01$", fontsize=9)
ax.legend(fontsize=8)
plt.show()
