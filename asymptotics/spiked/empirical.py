"""The semi-empirical resolvent quantities of the K-group model for a given bulk G (docs/THEORY.md
§10.3), by exact p x p linear algebra: the reference the deterministic block resolvent (§10.4)
is checked against, and what a semi-empirical solve would iterate.

With P_g the group projectors, Pi = I - V V^T, Omega = G Pi G^T (rows of G on the unit sphere),
S = lam + sum_gh Vhat1_gh P_g Omega P_h + sum_g Vhat2_g P_g, R = S^-1, N the same form with
X = (Qhat1, Qhat2) and s = sum_g P_g G (V zetahat_g + T psihat_g):
    V1_gh = tr(P_g Omega P_h R)/p, V2_g = tr(P_g R)/p,
    Q1_gh = tr(P_g Omega P_h R N R)/p + s^T R P_g Omega P_h R s,
    Q2_g = tr(P_g R N R)/p + s^T R P_g R s,
    zeta_g = (P_g G V)^T R s, psi_g = (P_g G T)^T R s.
"""

from __future__ import annotations

import numpy as np


def sphere_rows(rng: np.random.Generator, p: int, d: int) -> np.ndarray:
    """p x d, rows i.i.d. uniform on the unit sphere."""
    G = rng.standard_normal((p, d))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def group_labels(fractions: np.ndarray, p: int) -> np.ndarray:
    """Group index of each of the p rows (consecutive blocks, sizes round(pi_g p))."""
    edges = np.round(np.cumsum(np.concatenate([[0.0], fractions])) * p).astype(int)
    return np.repeat(np.arange(len(fractions)), np.diff(edges))


def exact_quantities(G: np.ndarray, labels: np.ndarray, V: np.ndarray, T: np.ndarray, *,
                     lam: float, Vhat1: np.ndarray, Vhat2: np.ndarray, Qhat1: np.ndarray,
                     Qhat2: np.ndarray, zetahat: np.ndarray, psihat: np.ndarray) -> dict:
    """(V1, V2, Q1, Q2, zeta, psi) of the semi-empirical form (module docstring), exactly."""
    p, d = G.shape
    K = Vhat1.shape[0]
    Y = G - (G @ V) @ V.T  # G Pi
    Om = Y @ Y.T
    masks = [np.flatnonzero(labels == g) for g in range(K)]

    def form(X1: np.ndarray, X2: np.ndarray) -> np.ndarray:
        return X1[labels][:, labels] * Om + np.diag(X2[labels])

    R = np.linalg.inv(lam * np.eye(p) + form(Vhat1, Vhat2))
    RNR = R @ form(Qhat1, Qhat2) @ R
    GV, GT = G @ V, G @ T
    s = np.zeros(p)
    for g in range(K):
        s[masks[g]] = GV[masks[g]] @ zetahat[g] + GT[masks[g]] @ psihat[g]
    Rs = R @ s
    V1, Q1 = np.zeros((K, K)), np.zeros((K, K))
    for g in range(K):
        for h in range(K):
            B = Om[np.ix_(masks[g], masks[h])]
            V1[g, h] = np.sum(B * R[np.ix_(masks[h], masks[g])].T) / p
            Q1[g, h] = (np.sum(B * RNR[np.ix_(masks[h], masks[g])].T) / p
                        + Rs[masks[g]] @ B @ Rs[masks[h]])
    V2 = np.array([np.trace(R[np.ix_(m, m)]) / p for m in masks])
    Q2 = np.array([np.trace(RNR[np.ix_(m, m)]) / p + Rs[m] @ Rs[m] for m in masks])
    zeta = np.array([GV[m].T @ Rs[m] for m in masks])
    psi = np.array([GT[m].T @ Rs[m] for m in masks])
    return dict(V1=V1, V2=V2, Q1=Q1, Q2=Q2, zeta=zeta, psi=psi)


def deterministic_quantities(*, beta: float, fractions: np.ndarray, lam: float,
                             Vhat1: np.ndarray, Vhat2: np.ndarray, Qhat1: np.ndarray,
                             Qhat2: np.ndarray, zetahat: np.ndarray, psihat: np.ndarray) -> dict:
    """The same quantities from the deterministic block resolvent (docs/THEORY.md §10.4)."""
    from asymptotics.spiked.kernels import dresolvent, resolvent

    pi = np.asarray(fractions, dtype=np.float64)
    tau, V1, V2 = resolvent(Vhat1, lam + Vhat2, beta, pi)
    X1 = Qhat1 + beta * psihat @ psihat.T
    X2 = Qhat2 + beta * np.sum(zetahat**2, axis=1)
    dV1, dV2 = dresolvent(Vhat1, tau, beta, pi, X1, X2)
    zeta = (beta * pi * tau)[:, None] * zetahat
    psi = beta * V1.T @ psihat
    return dict(V1=V1, V2=V2, Q1=-dV1, Q2=-dV2, zeta=zeta, psi=psi)
