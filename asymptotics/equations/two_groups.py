"""The K-group block resolvent's tau (``small_dense.tau_solve``, docs/THEORY.md §10.4) for two
groups with the 2 x 2 matrices in scalars: the same safeguarded Newton, every product, LU pivot
and solve written out in the order of ``small_dense``'s loops (``mm_into``, ``lu_inplace``,
``lu_solve_into``, ``inv_into``), zero entries included, so the numbers are those of
``tau_solve`` bit for bit (a test compares them); ``tau_solve`` calls it when K = 2."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel


@kernel(cache=True, error_model="numpy")
def _lu2(a00, a01, a10, a11):
    """Kernel: ``lu_inplace`` of [[a00, a01], [a10, a11]]: (the factors, swapped)."""
    swap = abs(a10) > abs(a00)
    if swap:
        a00, a01, a10, a11 = a10, a11, a00, a01
    a10 = a10 / a00
    a11 -= a10 * a01
    return a00, a01, a10, a11, swap


@kernel(cache=True, error_model="numpy")
def _solve2(a00, a01, a10, a11, swap, b0, b1):
    """Kernel: ``lu_solve_into`` with the factors of :func:`_lu2` (piv (1, 0) if swapped)."""
    if swap:
        b0, b1 = b1, b0
    x0 = b0
    s = b1
    s -= a10 * x0
    x1 = s
    x1 = x1 / a11
    s = x0
    s -= a01 * x1
    x0 = s / a00
    return x0, x1


@kernel(cache=True, error_model="numpy")
def _mm2(a00, a01, a10, a11, b00, b01, b10, b11):
    """Kernel: ``mm_into`` of 2 x 2 matrices (each sum from 0.0 in the order of l)."""
    return (0.0 + a00 * b00 + a01 * b10, 0.0 + a00 * b01 + a01 * b11,
            0.0 + a10 * b00 + a11 * b10, 0.0 + a10 * b01 + a11 * b11)


@kernel(cache=True, error_model="numpy")
def tau_solve2(M, lamg, beta, pi, TAU_TOL, out):
    """Kernel: ``small_dense.tau_solve`` for K = 2 into ``out`` (NaN where it fails)."""
    m00, m01, m10, m11 = M[0, 0], M[0, 1], M[1, 0], M[1, 1]
    l0, l1 = lamg[0], lamg[1]
    den0 = l0 + m00
    if not den0 > 0.0:
        out[0] = out[1] = np.nan
        return
    t0 = 1.0 / den0
    den1 = l1 + m11
    if not den1 > 0.0:
        out[0] = out[1] = np.nan
        return
    t1 = 1.0 / den1
    bp0 = beta * pi[0]
    bp1 = beta * pi[1]
    for _ in range(2000):
        d0 = bp0 * t0
        d1 = bp1 * t1
        T00, T01, T10, T11 = _mm2(d0, 0.0, 0.0, d1, m00, m01, m10, m11)
        T00 = 1.0 + T00
        T01 = 0.0 + T01
        T10 = 0.0 + T10
        T11 = 1.0 + T11
        a00, a01, a10, a11, sw = _lu2(T00, T01, T10, T11)
        B00, B10 = _solve2(a00, a01, a10, a11, sw, 1.0, 0.0)
        B01, B11 = _solve2(a00, a01, a10, a11, sw, 0.0, 1.0)
        K00, K01, K10, K11 = _mm2(m00, m01, m10, m11, B00, B01, B10, B11)
        F0 = 1.0 / (l0 + K00)
        F1 = 1.0 / (l1 + K11)
        J00 = F0 * F0 * K00 * K00 * beta * pi[0]
        J01 = F0 * F0 * K01 * K10 * beta * pi[1]
        J10 = F1 * F1 * K10 * K01 * beta * pi[0]
        J11 = F1 * F1 * K11 * K11 * beta * pi[1]
        a00, a01, a10, a11, sw = _lu2(1.0 - J00, 0.0 - J01, 0.0 - J10, 1.0 - J11)
        x0, x1 = _solve2(a00, a01, a10, a11, sw, 1.0, 1.0)
        newton = x0 > 0.0 and x1 > 0.0
        n0, n1 = F0, F1
        if newton:
            x0, x1 = _solve2(a00, a01, a10, a11, sw, F0 - t0, F1 - t1)
            c0 = t0 + x0
            c1 = t1 + x1
            if not (np.isfinite(c0) and c0 > 0.0) or not (np.isfinite(c1) and c1 > 0.0):
                newton = False
            if newton:
                n0, n1 = c0, c1
        done = not (abs(n0 - t0) > TAU_TOL * abs(n0)) and not (abs(n1 - t1) > TAU_TOL * abs(n1))
        t0, t1 = n0, n1
        if done:
            out[0], out[1] = t0, t1
            return
    out[0] = out[1] = np.nan
