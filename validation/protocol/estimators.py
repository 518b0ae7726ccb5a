"""Test error ``R = E_x (g(<theta*, x>) - f(x))^2`` of a fitted readout, x ~ N(0, I_d).

``f(x) = <a, sigma(W1 x)> / sqrt p`` (THEORY.md §1). Three unbiased estimators of the same number,
all from ``n_test`` fresh inputs:

- ``"mc"``: the sample mean of ``(g - f)^2``. For a target the network does not learn (``he2``)
  its noise is mostly ``Var(g^2) / n_test`` (``Var He2(z)^2 = 56``: s.e. 0.075 at 10^4 inputs).
- ``"split"``: ``R = E g^2 - 2 E[g f] + E f^2`` with the first two terms as Gaussian integrals
  and only ``E f^2`` sampled. ``z = <theta*, x>`` and ``h_k = <w_k, x> = m_k z + s_k xi`` with
  ``m_k = <w_k, theta*>``, ``s_k^2 = |w_k|^2 - m_k^2`` and ``xi`` independent of ``z``, so
  ``E[g(z) sigma(h_k)] = E_z[g(z) E_xi sigma(m_k z + s_k xi)]``: an outer rule in ``z`` split at
  the kinks of g, an inner rule split at the kinks of sigma
  (:mod:`asymptotics.coefficients.quadrature`).
  Better than ``mc`` when ``f`` is small against ``g``, worse when ``f`` learns ``g``.
- ``"cv"``: the sample mean of ``(g - f)^2`` with control variates of known mean:
  ``He_1(z)``, ``He_2(z)`` (mean 0), ``g^2`` (mean ``E g^2``) and ``g f`` (mean ``E[g f]``, as
  above). Their coefficients are fitted on one half of the inputs and applied to the other, both
  ways (cross-fitting), so the estimate stays exactly unbiased. ``mc`` (all coefficients 0) and
  ``split`` (1 on ``g^2``, -2 on ``g f``) are members of the family, so on the same inputs it is
  as precise as the better of the two, up to O(1/n_test) (tested).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.quadrature import gaussian_moments, gaussian_nodes

from .montecarlo import features as _features

ESTIMATORS = ("mc", "split", "cv")
N_OUTER = 120  # outer Gauss-Hermite nodes in z (Gauss-Legendre pieces of N_PIECE when g has kinks)
N_INNER = 120  # inner nodes in xi for smooth sigma
N_PIECE = 60
NEURON_BLOCK = 64  # neurons per block of the inner integrals (64 x 120 x 120 doubles = 7 MiB)


def target_moments(target: Function) -> tuple[np.ndarray, np.ndarray, float]:
    """Outer rule ``(z, w)`` in ``z ~ N(0, 1)`` for ``target`` (split at its kinks), and
    ``E g^2``."""
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), target.kinks, n_smooth=N_OUTER,
                          n_piece=N_PIECE)
    z, w = z[0].copy(), w[0].copy()
    return z, w, float(np.sum(w * target(z) ** 2))


def cross_moments(W1: np.ndarray, theta: np.ndarray, sigma: Function,
                  target: Function) -> np.ndarray:
    """``c_k = E[g(<theta*, x>) sigma(<w_k, x>)]`` for every row ``w_k`` of ``W1``, with
    ``|theta*| = 1`` (module docstring)."""
    z, wz, _ = target_moments(target)
    gw = wz * target(z)  # outer weights times g
    m = W1 @ theta
    s = np.sqrt(np.maximum(np.einsum("ij,ij->i", W1, W1) - m * m, 0.0))
    out = np.empty(W1.shape[0])
    for k0 in range(0, W1.shape[0], NEURON_BLOCK):
        mk, sk = m[k0:k0 + NEURON_BLOCK], s[k0:k0 + NEURON_BLOCK]
        shift = (mk[:, None] * z[None, :]).ravel()
        scale = np.repeat(sk, z.size)
        inner = gaussian_moments(sigma, shift, scale, n_smooth=N_INNER, n_piece=N_PIECE)[:, 0]
        out[k0:k0 + NEURON_BLOCK] = inner.reshape(mk.size, z.size) @ gw
    return out


def _hermite_controls(z: np.ndarray) -> np.ndarray:
    """``He_1, He_2`` of ``z`` (mean zero under N(0, 1)), rows x 2."""
    return np.stack([z, z * z - 1.0], axis=1)


def _controlled_mean(stats: list[tuple[np.ndarray, np.ndarray, int]]) -> float:
    """Cross-fitted control-variate mean of column 0 of ``U = [y, c_1 .. c_q]`` (every ``c`` of
    mean zero) from the sums ``(sum U^T U, sum U, count)`` of two halves of the sample: the
    regression coefficients of each half correct the mean of the other, so the estimate is
    unbiased (a coefficient never sees the samples it is applied to)."""
    (S0, m0, n0), (S1, m1, n1) = stats
    if min(n0, n1) < 8 * m0.size:  # too few samples to fit the coefficients: plain mean
        return float((m0[0] + m1[0]) / (n0 + n1))

    def coef(S: np.ndarray, m: np.ndarray, n: int) -> np.ndarray:
        mean = m / n
        cov = S / n - np.outer(mean, mean)
        return np.linalg.lstsq(cov[1:, 1:], cov[1:, 0], rcond=1e-10)[0]

    b0, b1 = coef(S0, m0, n0), coef(S1, m1, n1)
    est0 = (m0[0] - b1 @ m0[1:]) / n0
    est1 = (m1[0] - b0 @ m1[1:]) / n1
    return float((n0 * est0 + n1 * est1) / (n0 + n1))


def estimate_test_error(W1: np.ndarray, A: np.ndarray, theta: np.ndarray, sigma: Function,
                        target: Function, batches: Iterator[np.ndarray], n_test: int,
                        estimator: str = "mc") -> np.ndarray:
    """Test errors of the ``k`` readouts ``A`` (``p x k``) on the test inputs ``batches`` (chunks
    of ``n_test`` standard Gaussian rows in all), by ``estimator`` (module docstring)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")

    p, k = W1.shape[0], A.shape[1]
    total = np.zeros(k)
    if estimator != "mc":
        _, _, g2 = target_moments(target)
        gf = cross_moments(W1, theta, sigma, target) @ A / math.sqrt(p)  # E[g f_j]
    if estimator == "cv":  # per readout j and half h: sums of U^T U and U, U = [r^2, controls]
        q = 5
        sums = [[(np.zeros((q, q)), np.zeros(q), 0) for _ in range(2)] for _ in range(k)]
    start = 0
    for X in batches:
        F = X @ W1.T
        _features(F, sigma, 1.0)
        pred = F @ A
        pred *= 1.0 / math.sqrt(p)
        if estimator == "split":
            total += np.einsum("ij,ij->j", pred, pred)
            continue
        xt = X @ theta
        g = target(xt)
        resid = pred - g[:, None]
        r2 = resid * resid
        total += r2.sum(axis=0)
        if estimator == "cv":
            shared = np.column_stack([_hermite_controls(xt), g * g - g2])
            half = (start + np.arange(X.shape[0])) % 2
            for j in range(k):
                U = np.column_stack([r2[:, j], shared, g * pred[:, j] - gf[j]])
                for h in range(2):
                    Uh = U[half == h]
                    S, m, n = sums[j][h]
                    sums[j][h] = (S + Uh.T @ Uh, m + Uh.sum(axis=0), n + Uh.shape[0])
        start += X.shape[0]
    if start and start != n_test:
        raise ValueError(f"batches held {start} test rows, expected n_test = {n_test}")
    if estimator == "cv":
        return np.array([_controlled_mean(sums[j]) for j in range(k)])
    out = total / n_test
    if estimator == "split":
        out += g2 - 2.0 * gf
    return out
