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
# # 2. Theory against simulation
#
# Every prediction of the package can be checked against a finite-$d$ Monte Carlo of the same
# protocol (theory §1): draw the first layer, take one giant gradient step on a fresh batch of
# $n_0 = \alpha_0 d$ samples, fit the ridge readout on $n = \alpha d$ fresh samples, measure the
# test error on fresh inputs, and repeat over independent seeds. The simulator
# (`validation.protocol.simulator`) runs three models: `network` (the real network), `srf` (the
# spiked-random-features model the equations describe exactly) and `rf` (random features).
#
# Quick mode (the default) uses $d = 200$ and a handful of seeds, so this runs in seconds;
# `GIANTSTEP_FULL=1` uses $d = 1000$ and 10 seeds (minutes).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import asymptotics as A
from validation.compare import compare
from validation.protocol.simulator import Setting, simulate_curve, to_frame

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
D, SEEDS = (1000, 10) if FULL else (200, 6)
alphas = [0.5, 1.0, 2.0, 4.0]
params = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0)

# %% [markdown]
# ## The sRF model, simulated
#
# A `Setting` holds every parameter of one experiment (its `alpha` is a placeholder:
# `simulate_curve` runs the given list). Each repetition uses its own child of
# `numpy.random.SeedSequence(seed)`, so results do not depend on the number of workers.

# %%
setting = Setting(model="srf", alpha=1.0, d=D, **params)
sims = simulate_curve(setting, alphas, seeds=SEEDS, seed=0)
print(f"d = {setting.d}, p = {setting.p}, n0 = {setting.n0}, {SEEDS} seeds per point")
to_frame(sims)[["alpha", "d", "p", "seeds", "sim_mean", "sim_se"]]

# %% [markdown]
# The theory of the same model: at $p = \infty$ and at the simulated width $p = \beta d$
# (`p=`, docs/DERIVATIONS.md §8). At small $d$ the finite-width theory is the right
# comparison: the $p=\infty$ limit gets the mean channel of the features for free.

# %%
theory = A.risk_curve(alphas, **params, model="srf", progress=False)
theory_p = A.risk_curve(alphas, **params, model="srf", p=setting.p, progress=False)
mean = np.array([s.mean for s in sims])
se = np.array([s.se for s in sims])
z = (mean - theory.risk.to_numpy()) / se
z_p = (mean - theory_p.risk.to_numpy()) / se
for a, m, s_, t, tp, zz, zp in zip(alphas, mean, se, theory.risk, theory_p.risk, z, z_p,
                                   strict=True):
    print(f"alpha={a:4g}  sim {m:.4f} ± {s_:.4f}   theory {t:.4f} (z={zz:+.2f})   "
          f"theory at p={setting.p}: {tp:.4f} (z={zp:+.2f})")

# %% [markdown]
# $z = (\text{sim} - \text{theory})/\text{s.e.}$ is approximately standard normal when the theory
# is right. With a few seeds the s.e. is itself noisy, so we ask for $|z| < 4$, the guard the
# test suite uses:

# %%
assert np.all(np.abs(z_p) < 4), z_p
print(f"largest |z| against the width-p theory: {np.abs(z_p).max():.2f}")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
fine = np.linspace(0.3, 4.5, 40)
ax.plot(fine, A.risk_curve(fine, **params, model="srf", progress=False).risk,
        label=r"sRF theory, $p=\infty$")
ax.plot(fine, A.risk_curve(fine, **params, model="srf", p=setting.p, progress=False).risk,
        "--", label=f"sRF theory, p = {setting.p}")
ax.errorbar(alphas, mean, yerr=se, fmt="o", capsize=3, label=f"sRF simulation, d = {D} (±1 s.e.)")
ax.set_xlabel(r"$\alpha = n/d$")
ax.set_ylabel("test error")
ax.legend()
plt.show()

# %% [markdown]
# ## The trained network, in one call
#
# `validation.compare.compare` runs the simulations and both theories and returns the z-scores
# (`z` against the $p=\infty$ theory, `z_p` against the width-$p$ theory; for the network also
# `theory_srf`, the sRF surrogate). It warns that z-scores are not meaningful below $d = 100$
# or 5 seeds. The command line does the same:
# `python -m validation compare --model network --alpha 1,3 --d 200 --seeds 5 ...`.

# %%
cmp = compare("network", [1.0, 3.0], **params, d=D, seeds=max(5, SEEDS - 1), progress=False)
cmp[["alpha", "theory", "theory_p", "theory_srf", "sim_mean", "sim_se", "z", "z_p", "rel_gap"]]

# %%
assert np.all(np.abs(cmp.z_p) < 4), cmp.z_p
print(f"network: largest |z_p| = {np.abs(cmp.z_p).max():.2f}, largest relative gap to the "
      f"width-p theory = {np.abs((cmp.sim_mean - cmp.theory_p) / cmp.theory_p).max():.2%}")

# %% [markdown]
# ## Scaling up
#
# The s.e. falls like $1/\sqrt{\text{seeds}}$, the finite-size corrections like $1/\sqrt d$ or
# faster. At large $d$ a repetition costs about $d^3$ operations (the step and the ridge
# system); at the small $d$ of quick mode fixed costs dominate. Here:

# %%
per_rep = sims[0].seconds / SEEDS
print(f"one repetition ({len(alphas)} alphas) at d = {D}: {per_rep:.2f} s")

# %% [markdown]
# - **More seeds, larger d**: `simulate_curve(Setting(..., d=2000), alphas, seeds=16)`.
# - **Worker processes**: `n_jobs=4` runs repetitions in parallel processes, one BLAS thread
#   each; the numbers are identical to `n_jobs=1`.
# - **A Dask cluster**: parameter grids go through the sweep, which runs on the same scheduler
#   locally or on `dask.distributed` and keeps a resumable store:
#
#   ```bash
#   pip install "giantstep[dask]"
#   python -m validation sweep --kind srf --grid "alpha=0.5,1,2,4" --d 2000 --seeds 16 \
#       --scheduler dask --n-jobs 8 --store sweep.csv            # a local Dask cluster
#   python -m validation sweep ... --scheduler-address tcp://HOST:8786   # an existing one
#   ```
#
#   (`validation.protocol.pool.run_tasks(fn, tasks, n_jobs, scheduler="dask", address=...)` is the
#   Python entry point of the same scheduler.)
# - The validation matrix of the project (`python -m validation.matrix run ...`) is the
#   full-size version of this tutorial: settings × $\alpha$ × $\lambda$ at $d = 2000$.
