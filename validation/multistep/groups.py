"""Statistics of the first layer per readout group, for :mod:`validation.multistep.simulator`
(what a population theory of the giant steps predicts: the mean row of each readout group and the
bulk variance around it), and the rows of a run with several ridge sizes.

Readout groups: the rows with readout sign ``+1`` (group 0) and ``-1`` (group 1; hypercube
readout, the first ``ceil(p/2)`` rows are group 0); the constant readout has group 0 only. With
``n_g`` rows in group ``g``, ``wbar_g`` their mean row and ``Theta`` the ``k x d`` orthonormal
teacher:

* ``a_g = wbar_g Theta^T`` (``k``): the group's mean projection on each ``theta_j``;
* ``c_g = mean_(i in g) |w_i - wbar_g|^2``: the bulk variance (``~ 1`` for rows on the unit
  sphere at initialisation);
* ``B_gh = <wbar_g, wbar_h> - [g == h] c_g / n_g``: the Gram matrix of the group means with the
  finite-sample bias of ``|wbar_g|^2`` removed (``E |wbar_g|^2 = |mu_g|^2 + tr Cov / n_g``; with
  ``c_g`` dividing by ``n_g`` a bias ``O(tr Cov / n_g^2)`` remains);
* ``Bperp_gh = B_gh - a_g . a_h``: the same Gram matrix in the complement of ``span(theta_j)``.

Ridge at several sizes (:func:`validation.protocol.montecarlo.ridge_test_errors`, the protocol's
one ridge and test error): one pool of ``max(n_r)`` samples from the ``ridge`` (and
``ridge_noise``) streams; the readout at size ``n_r`` uses the pool's first ``n_r`` samples (the
Gram matrix is accumulated in chunks cut at every ``n_r``), and every readout is tested on the
same fresh noiseless test inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the widest layout of :func:`GroupStats.flat` (two readout groups, three target directions)
MAX_GROUPS = 2
MAX_K = 3


@dataclass(frozen=True, eq=False)
class GroupStats:
    """The statistics of one first layer ``W`` per readout group (module docstring)."""

    n: np.ndarray  # (G,): rows per group
    a: np.ndarray  # (G, k): mean projections on theta_j
    c: np.ndarray  # (G,): bulk variance
    B: np.ndarray  # (G, G): debiased Gram matrix of the group means
    Bperp: np.ndarray  # (G, G): B minus its part in the target span

    def flat(self, groups: int = MAX_GROUPS, k: int = MAX_K) -> dict[str, float]:
        """Columns ``n_g<g>, a_g<g>_j<j> (j = 1..k), c_g<g>, B_<g><h>, Bperp_<g><h> (g <= h)``
        for ``groups`` groups and ``k`` directions, NaN where this layer has fewer."""
        G, kk = self.a.shape
        if G > groups or kk > k:
            raise ValueError(f"{G} groups x {kk} directions do not fit {groups} x {k} columns")
        out: dict[str, float] = {}
        for g in range(groups):
            here = g < G
            out[f"n_g{g}"] = float(self.n[g]) if here else math.nan
            for j in range(k):
                out[f"a_g{g}_j{j + 1}"] = float(self.a[g, j]) if here and j < kk else math.nan
            out[f"c_g{g}"] = float(self.c[g]) if here else math.nan
        for name, M in (("B", self.B), ("Bperp", self.Bperp)):
            for g in range(groups):
                for h in range(g, groups):
                    out[f"{name}_{g}{h}"] = float(M[g, h]) if h < G else math.nan
        return out


def group_columns(groups: int = MAX_GROUPS, k: int = MAX_K) -> tuple[str, ...]:
    """The names of :meth:`GroupStats.flat`, in its order."""
    G = GroupStats(np.ones(groups), np.zeros((groups, k)), np.zeros(groups),
                   np.zeros((groups, groups)), np.zeros((groups, groups)))
    return tuple(G.flat(groups, k))


def readout_groups(a: np.ndarray) -> list[np.ndarray]:
    """Row indices of group 0 (``a > 0``) and, when there are any, group 1 (``a < 0``)."""
    a = np.asarray(a)
    groups = [np.flatnonzero(a > 0), np.flatnonzero(a < 0)]
    if np.any(a == 0):
        raise ValueError("a readout weight is zero: it belongs to no group")
    return [g for g in groups if g.size]


def group_statistics(W: np.ndarray, theta: np.ndarray, a: np.ndarray) -> GroupStats:
    """:class:`GroupStats` of ``W`` (``p x d``) against ``theta`` (``k x d``) with the readout
    groups of ``a`` (:func:`readout_groups`)."""
    idx = readout_groups(a)
    n = np.array([len(i) for i in idx], dtype=float)
    means = np.stack([W[i].mean(axis=0) for i in idx])
    c = np.array([float(np.mean(np.sum((W[i] - m) ** 2, axis=1))) for i, m in zip(idx, means,
                                                                                     strict=True)])
    proj = means @ theta.T
    B = means @ means.T - np.diag(c / n)
    Bperp = B - proj @ proj.T
    return GroupStats(n, proj, c, B, Bperp)


def risk_rows(run) -> list[dict]:
    """One row per (step, ridge size) of a :class:`validation.multistep.simulator.MultiStepRun`
    made with
    ``ridge_alphas`` (and ``groups``): every parameter, ``repetition``, ``step``, ``ridge_alpha``,
    ``n_ridge``, ``test_error``, ``target_power``, ``subspace_fraction``, ``weight_norm``,
    ``train_loss`` (as in ``MultiStepRun.table``: ``L`` of ``W_t`` with the fixed readout on the
    next step's fresh batch; NaN at the last step), ``seconds`` and, with ``groups``,
    the columns of :meth:`GroupStats.flat` (repeated over the ridge sizes of a step)."""
    cfg = run.config
    base = cfg.record()
    rows = []
    for t in range(cfg.steps + 1):
        stats = run.groups[t].flat() if run.groups is not None else {}
        for r, alpha in enumerate(cfg.ridge_levels):
            rows.append({
                **base, "ridge_alpha": float(alpha), "n_ridge": int(round(alpha * cfg.d)),
                "repetition": run.repetition, "step": t,
                "test_error": float(run.test_errors[t, r]), "target_power": run.target_power,
                "subspace_fraction": float(run.subspace_fraction[t]),
                "weight_norm": float(run.weight_norm[t]),
                "train_loss": float(run.train_loss[t]) if t < cfg.steps else math.nan,
                "seconds": run.seconds, **stats,
            })
    return rows
