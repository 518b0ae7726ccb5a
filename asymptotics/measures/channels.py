"""Kernels of the channel averages of a spectral measure (DERIVATIONS.md §7).

The averages that :func:`asymptotics.measures.spectral.measure_moments` returns for the generalised
Marchenko-Pastur bulk of a weighted population spectrum (:func:`population_bulk`), for the
special columns of the network's rank-one channels (:func:`special_columns`) and for the channels
carried by Gauss rules (:func:`quadrature_columns`, kind ``quadrature``).
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core.coldstart import kernel

#: the relative Newton step of :func:`population_bulk` after which its root is exact to rounding
NEWTON_STOP = 1e-8


@kernel(cache=True, error_model="numpy")
def population_bulk(
    out: np.ndarray, beta: float, lam: np.ndarray, wts: np.ndarray, s0: float, s1: float,
    full: bool,
) -> None:
    """Kernel: the bulk averages out[0:5] of Omega = B B^T (p x p) when the d columns of B have
    population variances lam_j / d (generalised Marchenko-Pastur law, Silverstein and Bai 1995;
    docs/DERIVATIONS.md §7). m = <1/S> solves 1 = s0 m + <g(s1 m lam)>, g(y) = y/(1 + beta y)
    (the leave-one-column-out identity), by safeguarded Newton; the other averages are its
    derivatives in s0, s1. ``wts``: the weight of each lam_j (sum 1; 1/d for the d population
    variances of a sampled device, Gauss weights for a quadrature of the population law).
    NaNs when S = 0 is not excluded (s0 = 0 and the root does not exist). ``full`` False: only
    out[0:2] (<1/S>, <rho/S>, the same numbers), what the closed V-subsystem reads."""
    n = lam.shape[0]
    if s0 < 0.0 or s1 < 0.0 or (s0 == 0.0 and s1 == 0.0):
        out[0:5] = np.nan
        return
    mean1 = 0.0
    mean2 = 0.0
    for j in range(n):
        mean1 += wts[j] * lam[j]
        mean2 += wts[j] * lam[j] * lam[j]
    if s1 == 0.0:
        g1 = 1.0 / s0
        out[0] = g1
        out[1] = mean1 * g1
        out[2] = g1 * g1
        out[3] = mean1 * g1 * g1
        out[4] = (mean2 + beta * mean1 * mean1) * g1 * g1  # <rho^2> of the p x p Gram
        return
    # phi(m) = s0 m + <g(s1 m lam)> - 1 is increasing and concave in m, phi(0) = -1
    lo = 0.0
    hi = 1.0 / s0 if s0 > 0.0 else 1.0
    # s0 > 0: the root lies below 1/s0 (phi(1/s0) = <g> >= 0), no bracketing sweep
    found = s0 > 0.0
    for _ in range(0 if found else 200):  # bracket
        phi = s0 * hi - 1.0
        for j in range(n):
            y = s1 * hi * lam[j]
            phi += wts[j] * y / (1.0 + beta * y)
        if phi >= 0.0:
            found = True
            break
        lo = hi
        hi *= 2.0
    if not found:
        out[0:5] = np.nan
        return
    # start from the root for the population's mean alone (one atom at mean1: the quadratic
    # s0 beta a m^2 + (s0 + a - beta a) m - 1 = 0, a = s1 mean1), Newton's answer to rounding
    # in ~3 sweeps when the population is narrow; the bracket's midpoint where it falls outside
    a = s1 * mean1
    qb = s0 + a - beta * a
    den0 = qb + math.sqrt(qb * qb + 4.0 * s0 * beta * a)
    m = 2.0 / den0 if den0 > 0.0 else 0.5 * (lo + hi)
    if not (lo < m < hi):
        m = 0.5 * (lo + hi)
    for _ in range(200):
        phi = s0 * m - 1.0
        dphi = s0
        for j in range(n):
            y = s1 * m * lam[j]
            iden = 1.0 / (1.0 + beta * y)
            phi += wts[j] * y * iden
            dphi += wts[j] * s1 * lam[j] * iden * iden
        if phi > 0.0:
            hi = m
        else:
            lo = m
        step = phi / dphi if dphi > 0.0 else 0.0
        mn = m - step
        # the closed bracket: a Newton step onto the root itself (phi = 0 sets lo = m, step 0)
        # is the answer, not a bisection of [m, hi] (which bisected back for ~40 more sweeps)
        newton = lo <= mn <= hi
        if not newton:
            mn = 0.5 * (lo + hi)
        # |m phi''| <= 2 phi' here (g'' = -2 beta g'/(1 + beta y)), so a Newton step of relative
        # size s leaves a relative error <= s^2: below NEWTON_STOP it is rounding
        if abs(mn - m) <= (NEWTON_STOP if newton else 1e-15) * m:
            m = mn
            break
        m = mn
    w = s1 * m
    A = 0.0
    if not full:
        for j in range(n):
            A += wts[j] * lam[j] / (1.0 + beta * lam[j] * w)
        out[0] = m
        out[1] = m * A  # <rho/S> = (1 - s0 m)/s1
        return
    B = 0.0
    for j in range(n):
        den = 1.0 + beta * lam[j] * w
        A += wts[j] * lam[j] / den
        B += wts[j] * lam[j] / (den * den)
    out[0] = m
    out[1] = m * A
    D = s0 + s1 * B
    m2 = m / D  # <1/S^2> = -dm/ds0
    mr2 = m * B / D  # <rho/S^2> = -dm/ds1
    x2 = 0.0  # <rho^2/S^2> = -d(m A)/ds1
    for j in range(n):
        den = 1.0 + beta * lam[j] * w
        x2 += wts[j] * lam[j] * (beta * lam[j] * m * m + mr2) / (den * den)
    out[2] = m2
    out[3] = mr2
    out[4] = x2


@kernel(cache=True, error_model="numpy")
def special_columns(
    out: np.ndarray, beta: float, F: np.ndarray, G: np.ndarray, H: np.ndarray, s1: float
) -> None:
    """Kernel: the channel averages (out[5:14]) of a bulk with K special columns, given its MP
    averages out[0:5] (docs/DERIVATIONS.md §7). The columns T (Bt and the bulk directions
    correlated with Bv) have population covariance C = sum_j lam_j e_j e_j^T (lam = H), and
    T^T S^-1 T = sum_j f_j e_j e_j^T, f_j = x_j/(1 + s1 x_j), x_j = beta lam_j <1/S>
    (Sherman-Morrison against the rest of the Gram matrix). Bt = T e_0 has coordinates
    b_j = G[j] on the e_j; Bv = T kappa + e with coordinates a_j = F[1 + j] and e independent
    of Omega with variance F[0] (channel beta F[0])."""
    m, m2, mr2 = out[0], out[2], out[3]
    sind = F[0]
    fvv, fvv2, fvvr = beta * sind * m, beta * sind * m2, beta * sind * mr2
    fvt = fvt2 = fvtr = ftt = ftt2 = fttr = 0.0
    for j in range(H.shape[0]):
        lam = H[j]
        x = beta * lam * m
        den = 1.0 + s1 * x
        f = x / den
        f2 = beta * lam * m2 / (den * den)
        fr = (beta * lam * mr2 + x * x) / (den * den)
        a, b = F[1 + j], G[j]
        fvv += a * a * f
        fvv2 += a * a * f2
        fvvr += a * a * fr
        fvt += a * b * f
        fvt2 += a * b * f2
        fvtr += a * b * fr
        ftt += b * b * f
        ftt2 += b * b * f2
        fttr += b * b * fr
    out[5] = fvv
    out[6] = ftt
    out[7] = fvv2
    out[8] = fvvr
    out[9] = ftt2
    out[10] = fttr
    out[11] = fvt
    out[12] = fvt2
    out[13] = fvtr


@kernel(cache=True, error_model="numpy")
def quadrature_columns(
    out: np.ndarray, beta: float, nodes: np.ndarray, wts: np.ndarray, var_eps: float,
    s1: float, n: int,
) -> None:
    """Kernel: the channel averages (out[5:14]) of :func:`special_columns` when the spectral
    measures of b (Bv = (B Pi) b + e, Var e = ``var_eps``) and t against the population
    covariance are given by Gauss rules of n nodes each (docs/DERIVATIONS.md §7, 'A
    deterministic measure'): the rules of |b.e_j|^2, |t.e_j|^2, |(b + t).e_j|^2 and
    |(b - t).e_j|^2 are blocks 1-4 of (``nodes``, ``wts``) (block 0 is the bulk), and the
    cross channel is the polarisation (b + t, b - t)/4."""
    m, m2, mr2 = out[0], out[2], out[3]
    acc = np.zeros((4, 3))
    for r in range(4):
        for j in range((r + 1) * n, (r + 2) * n):
            lam = nodes[j]
            x = beta * lam * m
            den = 1.0 + s1 * x
            acc[r, 0] += wts[j] * x / den
            acc[r, 1] += wts[j] * beta * lam * m2 / (den * den)
            acc[r, 2] += wts[j] * (beta * lam * mr2 + x * x) / (den * den)
    out[5] = beta * var_eps * m + acc[0, 0]
    out[6] = acc[1, 0]
    out[7] = beta * var_eps * m2 + acc[0, 1]
    out[8] = beta * var_eps * mr2 + acc[0, 2]
    out[9] = acc[1, 1]
    out[10] = acc[1, 2]
    out[11] = 0.25 * (acc[2, 0] - acc[3, 0])
    out[12] = 0.25 * (acc[2, 1] - acc[3, 1])
    out[13] = 0.25 * (acc[2, 2] - acc[3, 2])
