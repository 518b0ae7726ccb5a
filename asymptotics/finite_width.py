"""The mean channel at finite width p (docs/DERIVATIONS.md §5) as numba kernels.

At p = infinity the readout's component along the mean direction 1_p is unpenalised and the
closure of THEORY.md §5 sets ``m`` to its unregularised optimum. At finite p the direction
``u = 1_p / sqrt(p)`` is one more mean direction of the conditional Gaussian mixture, with
prior-channel quadratic form ``u^T S^{-1} u = <1/S> = V2`` (u is generic relative to the
eigenvectors of Omega), so

    m = mhat * p * V2,        mhat = A E_k[mu0 (h - b)/(1 + V)],

and the readout ``mhat sqrt(p) S^{-1} 1`` adds its own variance ``p mhat^2`` to the noise
``N`` of the overlaps (an atom weight F_u = 1 on every eigenvalue):

    q1 += p mhat^2 <rho/S^2>,  q2 += p mhat^2 <1/S^2>.

The kernels take ``p_inv = 1/p``; the (V1, V2) subsystem is unchanged, so only the completion
(:func:`complete_state_p`) and the verbatim map used for the residual (:func:`fixed_point_map_p`)
differ from asymptotics.fixed_point. ``p_inv = 0`` gives exactly the p = infinity kernels'
equations (the caller uses those then). Everything depends on (eta, p) through
``eps = 1 / (A p V2)``, and at small eta, where mu0(kappa) ~ r kappa, through r sqrt(p).
"""

from __future__ import annotations

import numba
import numpy as np

from .fixed_point import conjugates
from .marchenko_pastur import measure_moments


@numba.njit(cache=True, error_model="numpy")
def fixed_point_map_p(
    x: np.ndarray,
    w: np.ndarray,
    kap: np.ndarray,
    mu0: np.ndarray,
    mu1: np.ndarray,
    ms2: np.ndarray,
    h: np.ndarray,
    h1: np.ndarray,
    h2: np.ndarray,
    A: float,
    lam: float,
    delta: float,
    kind: int,
    beta: float,
    c: float,
    rho: np.ndarray,
    F: np.ndarray,
    H: np.ndarray,
    p_inv: float,
) -> np.ndarray:
    """Kernel: one application of the finite-p map x -> overlaps(conjugates(x)) (7 numbers),
    DERIVATIONS.md §5: m = mhat p V2 and the variance p mhat^2 in q1, q2."""
    hat = conjugates(x, w, kap, mu0, mu1, ms2, h, h1, h2, A, delta)
    vh1, vh2, qh1, qh2, zh, ph = hat[0], hat[1], hat[2], hat[3], hat[4], hat[5]
    mom = measure_moments(kind, beta, c, rho, F, H, lam + vh2, vh1)
    zeta = zh * mom[5]
    # m solved from its own equation m = mhat p V2 given V and the new zeta (the well-conditioned
    # form, as in the p = infinity map): (b00 + eps) m = E_k[mu0 (h - mu1 k zeta)/(1+V)]
    V1, V2 = x[2], x[3]
    num = 0.0
    den = 0.0
    for j in range(w.shape[0]):
        iv = 1.0 / (1.0 + mu1[j] * mu1[j] * V1 + ms2[j] * V2)
        num += w[j] * mu0[j] * (h[j] - mu1[j] * kap[j] * zeta) * iv
        den += w[j] * mu0[j] * mu0[j] * iv
    den += p_inv / (A * mom[0])
    m = num / den if den > 1e-300 else 0.0
    pm2 = m * m * p_inv / (mom[0] * mom[0])  # p mhat^2 with mhat = m / (p V2)
    out = np.empty(7)
    zh2 = zh * zh
    ph2 = ph * ph
    out[0] = qh1 * mom[4] + qh2 * mom[3] + zh2 * mom[8] + ph2 * mom[10] + pm2 * mom[3]
    out[1] = qh1 * mom[3] + qh2 * mom[2] + zh2 * mom[7] + ph2 * mom[9] + pm2 * mom[2]
    out[2] = mom[1]
    out[3] = mom[0]
    out[4] = zeta
    out[5] = ph * mom[6]
    out[6] = m
    return out


@numba.njit(cache=True, error_model="numpy")
def complete_state_p(
    V: np.ndarray,
    w: np.ndarray,
    kap: np.ndarray,
    mu0: np.ndarray,
    mu1: np.ndarray,
    ms2: np.ndarray,
    h: np.ndarray,
    h1: np.ndarray,
    h2: np.ndarray,
    A: float,
    lam: float,
    delta: float,
    kind: int,
    beta: float,
    c: float,
    rho: np.ndarray,
    F: np.ndarray,
    H: np.ndarray,
    p_inv: float,
) -> np.ndarray:
    """Kernel: given (V1, V2), the finite-p state (q1, q2, V1, V2, zeta, psi, m): (zeta, m) from
    (eps + b00) m + ak0 zeta = b0h, g ak0 m + (1 + g akk) zeta = g akh with eps = 1/(A p V2),
    then (q1, q2) from their 2x2 system with the mean channel's variance p mhat^2 added."""
    V1, V2 = V[0], V[1]
    n = w.shape[0]
    vh1 = 0.0
    vh2 = 0.0
    a_kh = 0.0
    a_k0 = 0.0
    a_kk = 0.0
    b_0h = 0.0
    b_00 = 0.0
    ph = 0.0
    for j in range(n):
        a1 = mu1[j] * mu1[j]
        iv = 1.0 / (1.0 + a1 * V1 + ms2[j] * V2)
        wj = w[j] * iv
        vh1 += wj * a1
        vh2 += wj * ms2[j]
        km = kap[j] * mu1[j]
        a_kh += wj * km * h[j]
        a_k0 += wj * km * mu0[j]
        a_kk += wj * km * km
        b_0h += wj * mu0[j] * h[j]
        b_00 += wj * mu0[j] * mu0[j]
        ph += wj * mu1[j] * h1[j]
    vh1 *= A
    vh2 *= A
    ph *= A
    mom = measure_moments(kind, beta, c, rho, F, H, lam + vh2, vh1)
    out = np.empty(7)
    out[2] = V1
    out[3] = V2
    g = A * mom[5]
    b_eff = b_00 + p_inv / (A * mom[0])  # b00 + eps, eps = 1/(A p V2)
    if b_eff > 1e-300:
        num = g * (a_kh - a_k0 * b_0h / b_eff)
        den = 1.0 + g * (a_kk - a_k0 * a_k0 / b_eff)
        zeta = num / den
        m = (b_0h - a_k0 * zeta) / b_eff
    else:
        zeta = g * a_kh / (1.0 + g * a_kk)
        m = 0.0
    zh = A * (a_kh - a_k0 * m - a_kk * zeta)
    pm2 = m * m * p_inv / (mom[0] * mom[0])  # p mhat^2, mhat = m / (p V2)
    psi = ph * mom[6]
    r01 = 0.0
    r02 = 0.0
    k11 = 0.0
    k12 = 0.0
    k22 = 0.0
    for j in range(n):
        a1 = mu1[j] * mu1[j]
        iv = 1.0 / (1.0 + a1 * V1 + ms2[j] * V2)
        wj = w[j] * iv * iv
        b = mu0[j] * m + mu1[j] * kap[j] * zeta
        e0 = h2[j] - 2.0 * b * h[j] + b * b - 2.0 * mu1[j] * psi * h1[j] + delta
        r01 += wj * a1 * e0
        r02 += wj * ms2[j] * e0
        k11 += wj * a1 * a1
        k12 += wj * a1 * ms2[j]
        k22 += wj * ms2[j] * ms2[j]
    p11, p12, p22 = mom[4], mom[3], mom[2]
    cq1 = zh * zh * mom[8] + ph * ph * mom[10] + pm2 * mom[3]
    cq2 = zh * zh * mom[7] + ph * ph * mom[9] + pm2 * mom[2]
    m11 = 1.0 - A * (p11 * k11 + p12 * k12)
    m12 = -A * (p11 * k12 + p12 * k22)
    m21 = -A * (p12 * k11 + p22 * k12)
    m22 = 1.0 - A * (p12 * k12 + p22 * k22)
    rhs1 = A * (p11 * r01 + p12 * r02) + cq1
    rhs2 = A * (p12 * r01 + p22 * r02) + cq2
    det = m11 * m22 - m12 * m21
    if not (det > 0.0 and m11 > 0.0 and m22 > 0.0):
        out[0] = np.nan
        out[1] = np.nan
    else:
        out[0] = (m22 * rhs1 - m12 * rhs2) / det
        out[1] = (m11 * rhs2 - m21 * rhs1) / det
    out[4] = zeta
    out[5] = psi
    out[6] = m
    return out
