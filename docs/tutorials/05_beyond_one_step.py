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
# # 5. Beyond one step: several steps, readouts and K groups
#
# One giant step learns one direction. This tutorial goes further, with the theory of THEORY.md
# §10–§12 and the package's own Monte Carlo beside it:
#
# 1. the risk after each of several giant steps on fresh batches, for a multi-index target;
# 2. what the steps learn: the readout groups' loadings on each target direction (a staircase);
# 3. finite-support readouts (`"pm1"` and any mapping value → weight), which split the neurons
#    into K groups;
# 4. the K-group model directly (`risk_spiked`), and which spike matters;
# 5. theory against the trained network in one call (`compare_steps`).
#
# The notation of Dandi et al. 2023 (arXiv 2305.18270) is translated in `docs/notation.md`.
# `GIANTSTEP_FULL=1` simulates at d = 1000 with 6 seeds (a few minutes) instead of d = 200.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import asymptotics as A
from validation.experiments.steps_compare import compare_steps

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
STEPS = dict(sigma="erf(z-1)", alpha0=16.0, eta=(2.0, 8.0, 16.0), lam=0.01)

# %% [markdown]
# ## 1. The risk after each step
#
# `risk_by_step` returns the risk of the ridge readout after `t = 0, ..., T` steps (0 is random
# features) at each sample ratio `alpha`. Each step uses a fresh batch of `alpha0 d` samples and
# the learning rate `eta_t p`; the second layer stays frozen during the steps: constant
# (`1/sqrt p`) or `pm1` (`±1/sqrt p` on two halves). Like `risk`, it describes the trained
# network by default (`model="network"`: the network theory of the groups, THEORY.md §15);
# `model="srf"` is their spiked-random-features surrogate (§12), and so is
# `python -m asymptotics steps --model srf` (the command's default is the network theory too).

# %%
alphas = [0.5, 2.0, 4.0]
by_step = {ro: A.risk_by_step(alphas, steps=3, target="z1 + z1*z2", readout=ro, progress=False,
                              **STEPS)
           for ro in ("constant", "pm1")}
for ro, df in by_step.items():
    assert df.converged.all()
    table = df.pivot(index="step", columns="alpha", values="risk")
    print(f"readout {ro}:\n{table.round(4)}\n")
one = by_step["pm1"].query("alpha == 4")
assert one.risk.iloc[1] < one.risk.iloc[0]  # the first step beats random features

# %% [markdown]
# `risk(..., steps=T)` gives one point; it is the last row of the table (the network theory solves
# point by point, so the numbers are the same). With `model="srf"` the table is the surrogate's,
# equal to `risk(..., steps=T, model="srf")` up to the kappa quadrature's stated accuracy (a
# curve of more than ten points chooses one kappa rule for all its points from five probes, a
# point its own; a point is settled when three successive rules agree to `QUADRATURE_RTOL`,
# 1e-3):

# %%
from asymptotics.spiked.solve import QUADRATURE_RTOL  # noqa: E402

last = A.risk(4.0, steps=3, target="z1 + z1*z2", readout="pm1", **STEPS)
print(f"risk after three steps at alpha = 4 ({last.model}): {last.risk:.4f}")
assert last.risk == one.risk.iloc[-1] and (one.model == "network").all()
srf = A.risk_by_step([4.0], steps=3, target="z1 + z1*z2", readout="pm1", model="srf",
                     progress=False, **STEPS)
last_srf = A.risk(4.0, steps=3, model="srf", target="z1 + z1*z2", readout="pm1", **STEPS)
print(f"the sRF surrogate: {last_srf.risk:.4f}")
assert np.isclose(last_srf.risk, srf.risk.iloc[-1], rtol=QUADRATURE_RTOL)

# %% [markdown]
# ## 2. What the steps learn: a staircase
#
# `steps_mapping` gives the state of the readout groups after each step: `a[g, j]` is the mean
# projection of group g's rows on the target direction `theta_j`. For
# `z1 + z1 z2 + z1 z2 z3` each step opens the next direction (the Hermite staircase; `python -m
# asymptotics hermite "z1 + z1*z2 + z1*z2*z3"` prints the prediction).

# %%
stair = A.steps_mapping(STEPS["sigma"], "z1 + z1*z2 + z1*z2*z3", steps=3, alpha0=16.0,
                        eta=(2.0, 8.0, 16.0), readout="pm1")
for t, st in enumerate(stair.states):
    print(f"after step {t}: group + loadings {np.round(st.a[0], 3)}, bulk c = {st.c[0]:.3f}")
learned = [int(np.sum(np.abs(st.a[0]) > 0.05)) for st in stair.states]
print("directions learned after each step:", learned)
assert learned == [0, 1, 2, 3]

# %% [markdown]
# With the constant readout the network has one group; its rows all move along one combination
# of directions, so the risk drops less (section 1) even when several directions are learned.

# %% [markdown]
# ## 3. Finite-support readouts: K groups after one step
#
# A readout drawn from a finite set splits the neurons into groups that move differently
# (THEORY.md §11). `"pm1"` is `{1: 0.5, -1: 0.5}`; any mapping value → weight works in the
# theory. For an odd activation `pm1` and the constant readout give the same risk (flipping a
# feature's sign changes nothing in ridge); for relu they do not.

# %%
for sigma in ("tanh", "relu"):
    row = {name: A.risk_readout(2.0, readout=ro, sigma=sigma, target="tanh", alpha0=2.0,
                                eta=1.0, lam=0.01).risk
           for name, ro in (("constant", "constant"), ("pm1", "pm1"),
                            ("three values", {2.0: 0.25, 1.0: 0.5, -1.0: 0.25}))}
    print(sigma, {k: round(v, 4) for k, v in row.items()})
    if sigma == "tanh":
        assert np.isclose(row["constant"], row["pm1"], rtol=1e-8)
    else:
        assert row["pm1"] < row["constant"]

# %% [markdown]
# ## 4. The K-group model directly
#
# `risk_spiked` solves the model behind all of the above: K groups of rows
# `sqrt(c_g) G_i + V u_g` (loadings `u_g`, bulk `c_g`, fractions `pi_g`) and a target whose
# directions overlap the learned ones by `Gamma`. `spike_contributions` switches each spike off
# in turn.

# %%
kw = dict(sigma="tanh", target="tanh(z1) + z1*z2", loadings=[[1.0, 0.0], [0.0, 1.0]],
          bulk=[1.0, 1.0], fractions=[0.5, 0.5], overlaps=[[0.9, 0.0], [0.0, 0.8]], lam=0.01,
          beta=1.0)
parts = A.spike_contributions(2.0, **kw)
print({k: round(v, 4) for k, v in parts.items()})
assert parts["all"] < parts["none"]

# %% [markdown]
# ## 5. Theory against the trained network
#
# `compare_steps` runs the Monte Carlo of the protocol (the trained network, the readout frozen
# during the steps, ridge after each step) and puts both theories beside it, the network theory
# (`theory_network`, `z_network`) and the sRF surrogate (`theory_srf`, `z_srf`), one row per
# (alpha, step), with the overlaps as columns. The same call is `python -m validation steps`.

# %%
d, seeds = (1000, 6) if FULL else (200, 3)
cmp = compare_steps(alphas, steps=3, target="z1 + z1*z2", readout="pm1", d=d, seeds=seeds,
                    n_test=10_000 if FULL else 4000, progress=False, **STEPS)
cols = ["alpha", "step", "theory_network", "theory_srf", "sim_mean", "sim_se", "z_network",
        "z_srf", "overlap_1", "sim_overlap_1", "overlap_2", "sim_overlap_2"]
print(cmp[cols].round(4).to_string(index=False))

# %% [markdown]
# The overlaps of the learned directions follow the d → ∞ theory closely already at small d
# (an unlearned direction stays at the initial level `sqrt(2/(pi d))`). The test error needs a
# larger d: at d = 200 even random features (step 0) come out several percent below the
# d → ∞ theory, a finite-d effect; at d = 1000 and 2000 the step-0 points are within 3 s.e.
# and the later steps mostly so (`validation/reports/STEPS.md`, which also says where they are
# not). That report covers `erf(z-1)` only; for another activation, run `compare_steps` at
# d ≥ 1000 before trusting the theory.

# %%
init = np.sqrt(2 / (np.pi * d))
for j in (1, 2):
    th, sim = cmp[f"overlap_{j}"], cmp[f"sim_overlap_{j}"]
    gap = (sim - th)[th > 0.05].abs().max()
    print(f"theta_{j}: largest |sim - theory| over the learned steps {gap:.4f}")
    assert gap < 0.03
    assert (sim[th == 0] < 2 * init).all()
if FULL:
    # the test error: the report's check of the surrogate at this size (validation/reports/STEPS.md)
    assert (cmp[cmp.step >= 1].rel_gap_srf.abs() < 0.1).all()

# %%
fig, ax = plt.subplots(figsize=(6, 3.8))
for color, a in zip(["C0", "C1", "C2"], alphas, strict=True):
    sub = cmp[cmp.alpha == a]
    ax.plot(sub.step, sub.theory_network, "-", color=color,
            label=rf"network theory, $\alpha$ = {a:g}")
    ax.plot(sub.step, sub.theory_srf, ":", color=color, label="sRF surrogate" if a == alphas[0]
            else None)
    ax.errorbar(sub.step, sub.sim_mean, yerr=sub.sim_se, fmt="o", color=color, ms=4, capsize=2)
ax.set_xticks(range(4), ["RF", "1", "2", "3"])
ax.set_xlabel("giant steps")
ax.set_ylabel("test error")
ax.set_title(f"z1 + z1 z2, erf(z-1), pm1; markers: trained network, d = {d}", fontsize=9)
ax.legend(fontsize=8)
plt.show()
