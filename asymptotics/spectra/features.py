"""Spectrum of the learned features' ridge matrix F^T F, F = sigma(X W^T)/sqrt(p) on n = alpha d
fresh inputs (docs/THEORY.md §16.1-§16.3), for the K-group, r-spike model of §10.

Bulk: m(z) = (1/p) tr (F^T F - z)^-1 = sum_g V2_g(lam = -z), the V-part of the K-group
equations (the same tables and resolvent as the risk) continued to complex lam:
    V(k) = mub1^T V1 mub1 + mus2 . V2,  M = A E[mub1 mub1^T/(1+V)],  v2 = A E[mus2/(1+V)],
    tau_g (lam + v2_g + [M (I + D M)^-1]_gg) = 1,  V1 = D (I + M D)^-1/beta,  D = diag(beta pi tau).
Outliers: the channels F = B + P Q^T of the means (left mu0_g(kappa), right the group's 1_p) and
of the learned directions (left mub1_g(kappa) kappa_a, right P_g G v_a), with
    lam P^T (lam - B B^T)^-1 P = (n/p) E[psi psi^T/(1+V)],  Q^T (lam - B^T B)^-1 Q = -tau_g |q|^2
(the n x n resolvent's diagonal is 1/(lam (1 + V(kappa)))).
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.spectra.bbp import outlier_locations, overlap_vectors
from asymptotics.spectra.law import Outlier, Solver, bulk_support
from asymptotics.spiked.problem import SpikedProblem


def features_solver(prob: SpikedProblem, alpha: float) -> Solver:
    """The complex V-subsystem at lam = -z as a :class:`Solver`; unknowns (tau (K), V1 (K^2))."""
    t = prob.tables
    w, mb1, ms2 = t.weights, t.mub1, t.mus2
    pi, beta = prob.fractions, prob.beta
    K = pi.shape[0]
    A = alpha / beta
    eye = np.eye(K)
    outer = (mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K)  # (nodes, K^2)
    outer_w = (w[:, None] * outer).astype(np.complex128)
    ms2_w = (w[:, None] * ms2).astype(np.complex128)
    outer_t = outer.T.astype(np.complex128).copy()
    ms2_t = ms2.T.astype(np.complex128).copy()

    def parts(x: np.ndarray) -> tuple:
        tau = x[:, :K]
        V1 = x[:, K:].reshape(-1, K, K)
        V = x[:, K:] @ outer_t + (pi * tau) @ ms2_t
        iv = 1.0 / (1.0 + V)
        M = (A * (iv @ outer_w)).reshape(-1, K, K)
        v2 = A * (iv @ ms2_w)
        D = (beta * pi * tau)[:, :, None] * eye[None]
        return tau, V1, V, M, v2, D

    def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        tau, V1, _, M, v2, D = parts(x)
        Km = M @ np.linalg.inv(eye[None] + D @ M)
        e1 = tau * (-z[:, None] + v2 + np.diagonal(Km, axis1=1, axis2=2)) - 1.0
        e2 = V1 - D @ np.linalg.inv(eye[None] + M @ D) / beta
        return np.concatenate([e1, e2.reshape(-1, K * K)], axis=1)

    def start(z: np.ndarray) -> np.ndarray:
        tau = np.repeat((-1.0 / z)[:, None], K, axis=1)
        V1 = (pi * tau)[:, :, None] * eye[None]
        return np.concatenate([tau, V1.reshape(-1, K * K)], axis=1)

    def stieltjes(x: np.ndarray) -> np.ndarray:
        return x[:, :K] @ pi

    solver = Solver(residual, start, stieltjes, scale=features_mean(prob, alpha))
    solver.parts = parts  # the channel averages of the outliers
    return solver


def features_mean(prob: SpikedProblem, alpha: float) -> float:
    """The mean bulk eigenvalue (alpha/beta) sum_g pi_g E[mub1_g^2 + mus2_g] (the bulk's scale)."""
    t = prob.tables
    per = t.weights @ (t.mub1 ** 2 + t.mus2)
    return float(alpha / prob.beta * (per @ prob.fractions))


def features_bulk(prob: SpikedProblem, alpha: float) -> tuple[Solver, list, float]:
    """(solver, support intervals, atom at 0): the atom is 1 - alpha/beta when n < p (rank n),
    else 0 (the features' noise part mus2 > 0 makes the n rows in general position)."""
    sol = features_solver(prob, alpha)
    sol.atom = max(0.0, 1.0 - alpha / prob.beta)
    mean = sol.scale
    hi = mean * (1.0 + math.sqrt(max(prob.beta / alpha, alpha / prob.beta))) ** 2 * 4.0
    return sol, bulk_support(sol, hi), sol.atom


def channel_names(K: int, r: int) -> list[str]:
    g = (lambda i: "") if K == 1 else (lambda i: f" (group {i + 1})")
    return ([f"mean{g(i)}" for i in range(K)]
            + [f"learned {a + 1}{g(i)}" for i in range(K) for a in range(r)])


def features_outliers(prob: SpikedProblem, alpha: float, sol: Solver, edge: float,
                      d: float | None) -> list[Outlier]:
    """The outliers of F^T F: at finite d all mean and learned-direction channels (the means at
    ~ n E mu0^2); at d = None the means diverge (location inf) and the learned channels act
    with the means projected out (their Schur complement as n -> infinity)."""
    t = prob.tables
    K, r = prob.loadings.shape
    pi, beta = prob.fractions, prob.beta
    kap = t.kappa
    psi = np.concatenate([t.mu0] + [t.mub1[:, g:g + 1] * kap for g in range(K)], axis=1)
    names = channel_names(K, r)
    nch = psi.shape[1]
    mean_idx = np.arange(K)
    spk_idx = np.arange(K, nch)
    group = np.concatenate([np.arange(K), np.repeat(np.arange(K), r)])

    def avg(lam: float) -> tuple[np.ndarray, np.ndarray]:
        x, ok = sol.solve(np.array([lam + 0j]))
        _, _, V, _, _, _ = sol.parts(x)
        E = np.einsum("j,ja,jb->ab", t.weights / (1.0 + V[0].real), psi, psi)
        return E, -x[0, :K].real  # -tau_g > 0 above the bulk

    out: list[Outlier] = []
    if d is None:
        Em = avg(edge * 1.5)[0][np.ix_(mean_idx, mean_idx)]
        for g in range(K):
            if Em[g, g] > 1e-14:
                out.append(Outlier(math.inf, names[g], {"mean": 1.0}))

        def phis(lam: float) -> tuple[np.ndarray, np.ndarray]:
            E, mt = avg(lam)
            Ess = E[np.ix_(spk_idx, spk_idx)]
            Esm = E[np.ix_(spk_idx, mean_idx)]
            Emm = E[np.ix_(mean_idx, mean_idx)]
            S = Ess - Esm @ np.linalg.pinv(Emm, rcond=1e-12) @ Esm.T
            return alpha * S, np.diag(mt[group[spk_idx]] * pi[group[spk_idx]])

        for lam in outlier_locations(phis, edge, len(spk_idx)):
            qv, _ = overlap_vectors(phis, lam)
            ov = {names[K + i]: float(qv[i] / pi[group[K + i]]) for i in range(len(spk_idx))}
            out.append(Outlier(lam, _dominant(ov), ov))
        return out
    n, p = alpha * d, beta * d
    qn = np.where(np.arange(nch) < K, p * pi[group], beta * pi[group])  # |q_a|^2

    def phis_d(lam: float) -> tuple[np.ndarray, np.ndarray]:
        E, mt = avg(lam)
        return (n / p) * E, np.diag(mt[group] * qn)

    for lam in outlier_locations(phis_d, edge, nch):
        qv, _ = overlap_vectors(phis_d, lam)
        ov = {names[i]: float(qv[i] / qn[i]) for i in range(nch)}
        out.append(Outlier(lam, _dominant(ov), ov))
    return out


def _dominant(ov: dict) -> str:
    return max(ov, key=lambda k: ov[k]) if ov else "spike"
