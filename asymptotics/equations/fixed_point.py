"""The self-consistent map of THEORY.md §5 (conjugates, overlaps, risk) as a numba kernel.

State x = (q1, q2, V1, V2, zeta, psi, m). For each kappa node,
    V(k) = mu1^2 V1 + mu_star^2 V2,  q(k) = mu1^2 q1 + mu_star^2 q2,  b(k) = mu0 m + mu1 k zeta,
    E(k) = h2 - 2 b h + b^2 - 2 mu1 psi h1 + q        (test error given kappa, noiseless)
and the training residual adds the label noise Delta: E_tr(k) = E(k) + Delta. With A = alpha/beta:
    Vhat1 = A E_k[mu1^2/(1+V)],      Vhat2 = A E_k[mu_star^2/(1+V)],
    qhat1 = A E_k[mu1^2 E_tr/(1+V)^2], qhat2 = A E_k[mu_star^2 E_tr/(1+V)^2],
    zetahat = A E_k[k mu1 (h - b)/(1+V)],  psihat = A E_k[mu1 h1/(1+V)].
With S = lam + Vhat1 rho + Vhat2 and the channels (F, G, H) = (F_vv, F_vt, F_tt) of the measure,
N = qhat1 rho + qhat2 + zetahat^2 F + 2 zetahat psihat G + psihat^2 H:
    q1 = <rho N/S^2>, q2 = <N/S^2>, V1 = <rho/S>, V2 = <1/S>,
    zeta = zetahat <F/S> + psihat <G/S>,  psi = zetahat <G/S> + psihat <H/S>,
    m = E_k[mu0 (h - mu1 k zeta)/(1+V)] / E_k[mu0^2/(1+V)]
(docs/DERIVATIONS.md §5; the sRF closures F = beta c, G = 0, H = beta rho are THEORY.md §5).
The risk is R = E_k[E(k)].

At finite width p (``p_inv = 1/p > 0``; docs/DERIVATIONS.md §8) the mean channel is not free:
m = mhat p V2 with mhat = A E_k[mu0 (h - b)/(1+V)], i.e. (E_k[mu0^2/(1+V)] + eps) m =
E_k[mu0 (h - mu1 k zeta)/(1+V)] with eps = 1/(A p V2), and the readout's component along 1_p adds
its variance p mhat^2 to N (q1 += p mhat^2 <rho/S^2>, q2 += p mhat^2 <1/S^2>). ``p_inv = 0`` is
the p -> infinity closure above, computed by the very same operations. ``omega`` (1: the closure
above) is the optional mean-row ratio of the trained network (docs/DERIVATIONS.md §8, "The
network's initial output"): with omega != 1 the forms u^T S^-1 u, u^T S^-2 u, u^T S^-1 Omega S^-1 u
of u = 1_p/sqrt(p) that replace V2, <1/S^2>, <rho/S^2> in these two finite-p terms are
``mean_row_forms``; nothing else depends on it.

Kernels: ``fixed_point_map`` applies the equations above verbatim (its residual at the answer is
what is reported); ``v_update`` is the closed (V1, V2) subsystem that the solver iterates;
``complete_state`` then solves the rest exactly: (zeta, psi, m) from their linear system
(the -mu1 k zeta and -mu0 m feedbacks of zetahat and m; psihat depends on V only, so the system
is triangular) and (q1, q2) from a 2x2 linear system (qhat
is affine in q through E(k)). The fixed points are the same; the reduced scheme converges in the
iterations of the V-subsystem alone and cannot oscillate in the zeta channel (a plain iteration
there diverges whenever Vhat1 <F/S> > 1, e.g. beta > 1 with a small lam).

On the open point of THEORY.md §5: these equations are complete. The rank-one (Sherman-Morrison)
correction that the slides write with I(Vhat1, Vhat2) is already contained in the -mu1 k zeta
feedback of zetahat; see docs/DERIVATIONS.md §2 (and tests/test_equations.py, which checks that
R at eta_tilde = 0 does not depend on gamma and equals an independent ridge formula).
"""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.core.result import HAT_NAMES, STATE_NAMES  # noqa: F401  (the one definition)
from asymptotics.measures.spectral import bulk_moments, measure_moments

N_STATE = 7


@kernel(cache=True, error_model="numpy")
def mean_row_forms(mom: np.ndarray, s0: float, s1: float, omega: float) -> tuple:
    """Kernel: the three forms of the mean direction u = 1_p/sqrt(p) at finite width,
    (u^T S^-1 u, u^T S^-2 u, u^T S^-1 Omega S^-1 u), S = s0 + s1 Omega (docs/DERIVATIONS.md §8,
    "The network's initial output"). The component of the rows' mean outside v has p times its
    squared norm equal to omega c (omega = 1: a generic direction, the forms are <1/S>, <1/S^2>,
    <rho/S^2>); by the Schur complement onto u, u^T S^-1 u = 1/(s0 + omega (1/<1/S> - s0)),
    and the other two are its derivatives in -s0 and -s1."""
    if omega == 1.0:
        return mom[0], mom[2], mom[3]
    g = mom[0]
    den = s0 + omega * (1.0 / g - s0)
    gu = 1.0 / den
    gu2 = (1.0 - omega + omega * mom[2] / (g * g)) * gu * gu
    gu1 = omega * mom[3] / (g * g) * gu * gu
    return gu, gu2, gu1


@kernel(cache=True, error_model="numpy")
def conjugates(
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
    delta: float,
) -> np.ndarray:
    """Kernel: (Vhat1, Vhat2, qhat1, qhat2, zetahat, psihat, risk) at state x."""
    q1, q2, V1, V2, zeta, psi, m = x[0], x[1], x[2], x[3], x[4], x[5], x[6]
    out = np.zeros(7)
    for j in range(w.shape[0]):
        a1 = mu1[j] * mu1[j]
        V = a1 * V1 + ms2[j] * V2
        iv = 1.0 / (1.0 + V)
        b = mu0[j] * m + mu1[j] * kap[j] * zeta
        E = h2[j] - 2.0 * b * h[j] + b * b - 2.0 * mu1[j] * psi * h1[j] + a1 * q1 + ms2[j] * q2
        Etr = E + delta
        wj = w[j]
        out[0] += wj * a1 * iv
        out[1] += wj * ms2[j] * iv
        out[2] += wj * a1 * Etr * iv * iv
        out[3] += wj * ms2[j] * Etr * iv * iv
        out[4] += wj * kap[j] * mu1[j] * (h[j] - b) * iv
        out[5] += wj * mu1[j] * h1[j] * iv
        out[6] += wj * E
    for i in range(6):
        out[i] *= A
    return out


@kernel(cache=True, error_model="numpy")
def fixed_point_map(
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
    G: np.ndarray,
    p_inv: float,
    omega: float,
) -> np.ndarray:
    """Kernel: one application of the map, x -> overlaps(conjugates(x)) (7 numbers)."""
    hat = conjugates(x, w, kap, mu0, mu1, ms2, h, h1, h2, A, delta)
    vh1, vh2, qh1, qh2, zh, ph = hat[0], hat[1], hat[2], hat[3], hat[4], hat[5]
    mom = measure_moments(kind, beta, c, rho, F, H, G, lam + vh2, vh1)
    out = np.empty(7)
    zh2 = zh * zh
    ph2 = ph * ph
    zp2 = 2.0 * zh * ph
    out[0] = qh1 * mom[4] + qh2 * mom[3] + zh2 * mom[8] + zp2 * mom[13] + ph2 * mom[10]
    out[1] = qh1 * mom[3] + qh2 * mom[2] + zh2 * mom[7] + zp2 * mom[12] + ph2 * mom[9]
    out[2] = mom[1]
    out[3] = mom[0]
    zeta = zh * mom[5] + ph * mom[11]
    out[4] = zeta
    out[5] = zh * mom[11] + ph * mom[6]
    # m: optimal (unregularised) coefficient of the mean channel, given V and the new zeta
    V1, V2 = x[2], x[3]
    num = 0.0
    den = 0.0
    for j in range(w.shape[0]):
        iv = 1.0 / (1.0 + mu1[j] * mu1[j] * V1 + ms2[j] * V2)
        num += w[j] * mu0[j] * (h[j] - mu1[j] * kap[j] * zeta) * iv
        den += w[j] * mu0[j] * mu0[j] * iv
    # finite width (docs/DERIVATIONS.md §8): m = mhat p V2, i.e. (b00 + eps) m = ..., with
    # eps = 1/(A p V2); p_inv = 0 is the p -> infinity closure
    gu, gu2, gu1 = mean_row_forms(mom, lam + vh2, vh1, omega)
    if p_inv > 0.0:
        den += p_inv / (A * gu)
    m = num / den if den > 1e-300 else 0.0
    out[6] = m
    if p_inv > 0.0:
        pm2 = m * m * p_inv / (gu * gu)  # the mean channel's variance p mhat^2
        out[0] += pm2 * gu1
        out[1] += pm2 * gu2
    return out


@kernel(cache=True, error_model="numpy")
def v_update(
    V: np.ndarray,
    w: np.ndarray,
    mu1: np.ndarray,
    ms2: np.ndarray,
    A: float,
    lam: float,
    kind: int,
    beta: float,
    c: float,
    rho: np.ndarray,
    F: np.ndarray,
    H: np.ndarray,
    G: np.ndarray,
    p_inv: float,
    omega: float,
) -> np.ndarray:
    """Kernel: the closed (V1, V2) subsystem, (V1, V2) -> (<rho/S>, <1/S>) with
    S = lam + Vhat1 rho + Vhat2 and Vhat from V."""
    V1, V2 = V[0], V[1]
    vh1 = 0.0
    vh2 = 0.0
    for j in range(w.shape[0]):
        a1 = mu1[j] * mu1[j]
        iv = w[j] / (1.0 + a1 * V1 + ms2[j] * V2)
        vh1 += iv * a1
        vh2 += iv * ms2[j]
    mom = bulk_moments(kind, beta, c, rho, F, H, G, lam + A * vh2, A * vh1)
    out = np.empty(2)
    out[0] = mom[1]
    out[1] = mom[0]
    return out


@kernel(cache=True, error_model="numpy")
def complete_state(
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
    G: np.ndarray,
    p_inv: float,
    omega: float,
) -> np.ndarray:
    """Kernel: given (V1, V2), the rest of the state (q1, q2, V1, V2, zeta, psi, m) solved exactly:
    (zeta, m) and (q1, q2) from their 2x2 linear systems. NaN q's where the q-system has no
    physical solution (det(I - P K) <= 0: the interpolation instability)."""
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
    mom = measure_moments(kind, beta, c, rho, F, H, G, lam + vh2, vh1)
    out = np.empty(7)
    out[2] = V1
    out[3] = V2
    # (zeta, psi, m): zeta = <F/S> zetahat + <G/S> psihat, psi = <G/S> zetahat + <H/S> psihat,
    # zetahat = A (a_kh - a_k0 m - a_kk zeta), b_00 m = b_0h - a_k0 zeta; psihat depends on V
    # only, so the system is triangular: zeta first (one linear equation), then m, then psi.
    g = A * mom[5]
    cross = ph * mom[11]
    gu, gu2, gu1 = mean_row_forms(mom, lam + vh2, vh1, omega)
    if p_inv > 0.0:  # finite width: b00 + eps, eps = 1/(A p V2) (docs/DERIVATIONS.md §8)
        b_00 += p_inv / (A * gu)
    if b_00 > 1e-300:
        num = g * (a_kh - a_k0 * b_0h / b_00) + cross
        den = 1.0 + g * (a_kk - a_k0 * a_k0 / b_00)
        zeta = num / den
        m = (b_0h - a_k0 * zeta) / b_00
    else:
        zeta = (g * a_kh + cross) / (1.0 + g * a_kk)
        m = 0.0
    zh = A * (a_kh - a_k0 * m - a_kk * zeta)
    psi = zh * mom[11] + ph * mom[6]
    # q: qhat = r0 + K q (E(k) is affine in q), q = P qhat + cq
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
    zp2 = 2.0 * zh * ph
    cq1 = zh * zh * mom[8] + zp2 * mom[13] + ph * ph * mom[10]
    cq2 = zh * zh * mom[7] + zp2 * mom[12] + ph * ph * mom[9]
    if p_inv > 0.0:
        pm2 = m * m * p_inv / (gu * gu)  # the mean channel's variance p mhat^2
        cq1 += pm2 * gu1
        cq2 += pm2 * gu2
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
