"""The mean channel's least-squares problem of the K-group completion (docs/THEORY.md §10.5) for
two groups in a few compiled passes over the design's rows, without LAPACK's SVD of the tall
design nor the temporaries of its products. The thin SVD of the (n + 2) x 2 design Phi comes from
its Cholesky QR done twice (Phi = Q R with Q orthonormal to round-off, as Householder's, while
the condition number of Phi is at most :data:`MAX_COND`), then the SVD of the 2 x 2 factor R;
the projections of (zeta, m)'s elimination are sums over the rows. The same algebra as
``spiked.kernels.complete_parts`` does with ``numpy.linalg.svd`` and matrix products (the
numbers agree to round-off); a design worse conditioned than MAX_COND (or rank deficient)
returns ``ok`` False and the caller keeps that path."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel

#: the largest condition number of the design the Cholesky QR takes (its first factor is then
#: accurate to ~MAX_COND^2 x round-off, and the second pass restores orthogonality); above it,
#: or rank deficient, LAPACK's SVD of the design is used
MAX_COND = 1e3


@kernel(cache=True, error_model="numpy")
def _chol2(g00, g01, g11):
    """Kernel: the upper Cholesky factor (r00, r01, r11) of [[g00, g01], [g01, g11]]; r11 NaN
    or <= 0 where the matrix is not positive definite."""
    r00 = np.sqrt(g00)
    r01 = g01 / r00
    d = g11 - r01 * r01
    r11 = np.sqrt(d) if d > 0.0 else np.nan
    return r00, r01, r11


@kernel(cache=True, error_model="numpy")
def thin_svd2(Phi):
    """Kernel: (ok, U, sv, Vt) of the thin SVD of ``Phi`` (N x 2) by Cholesky QR twice and the
    SVD of the 2 x 2 factor: U = Q u, sv decreasing, Phi = U diag(sv) Vt to round-off; ok False
    (the rest unset) where Phi's condition number exceeds MAX_COND or a factor breaks down."""
    N = Phi.shape[0]
    U = np.empty((N, 2))
    sv = np.zeros(2)
    Vt = np.zeros((2, 2))
    g00 = g01 = g11 = 0.0
    for i in range(N):
        a = Phi[i, 0]
        b = Phi[i, 1]
        g00 += a * a
        g01 += a * b
        g11 += b * b
    if not (g00 > 0.0 and g11 > 0.0):
        return False, U, sv, Vt
    a00, a01, a11 = _chol2(g00, g01, g11)
    # cond(Phi) = cond(R1) to round-off: R1's diagonal bounds it from below, the test is exact
    # enough for a threshold this far from 1 / sqrt(round-off)
    if not (a11 > 0.0) or a00 > MAX_COND * a11 or a11 > MAX_COND * a00:
        return False, U, sv, Vt
    h00 = h01 = h11 = 0.0  # the Gram of Q1 = Phi R1^-1
    for i in range(N):
        q0 = Phi[i, 0] / a00
        q1 = (Phi[i, 1] - a01 * q0) / a11
        h00 += q0 * q0
        h01 += q0 * q1
        h11 += q1 * q1
    b00, b01, b11 = _chol2(h00, h01, h11)
    if not (b11 > 0.0):
        return False, U, sv, Vt
    R = np.empty((2, 2))  # R = R2 R1
    R[0, 0] = b00 * a00
    R[0, 1] = b00 * a01 + b01 * a11
    R[1, 0] = 0.0
    R[1, 1] = b11 * a11
    u, s, vt = np.linalg.svd(R)
    if not (s[1] > 0.0 and s[0] <= MAX_COND * s[1]):
        return False, U, sv, Vt
    for i in range(N):
        q0 = Phi[i, 0] / R[0, 0]
        q1 = (Phi[i, 1] - R[0, 1] * q0) / R[1, 1]
        U[i, 0] = q0 * u[0, 0] + q1 * u[1, 0]
        U[i, 1] = q0 * u[0, 1] + q1 * u[1, 1]
    return True, U, s, vt


@kernel(cache=True, error_model="numpy")
def mean_coef2(U, sv, Vt, Psi, ht, zeta):
    """Kernel: the least-squares m of Phi m = ht - Psi zeta from Phi's thin SVD (U, sv, Vt) of
    full rank two: Vt^T (U^T (ht - Psi zeta) / sv)."""
    N = U.shape[0]
    P = Psi.shape[1]
    t0 = t1 = 0.0
    if P == 4:  # (r = 2: the sums in registers)
        z0, z1, z2, z3 = zeta[0], zeta[1], zeta[2], zeta[3]
        for i in range(N):
            dd = ht[i] - Psi[i, 0] * z0 - Psi[i, 1] * z1 - Psi[i, 2] * z2 - Psi[i, 3] * z3
            t0 += U[i, 0] * dd
            t1 += U[i, 1] * dd
    else:
        dd = np.empty(N)
        for i in range(N):
            t = ht[i]
            for a in range(P):
                t -= Psi[i, a] * zeta[a]
            dd[i] = t
        tt = U.T @ dd
        t0 = tt[0]
        t1 = tt[1]
    t0 /= sv[0]
    t1 /= sv[1]
    m = np.empty(2)
    m[0] = Vt[0, 0] * t0 + Vt[1, 0] * t1
    m[1] = Vt[0, 1] * t0 + Vt[1, 1] * t1
    return m


@kernel(cache=True, error_model="numpy")
def mean_elimination2(Phi, Psi, ht, A, beta, pi, tau, r):
    """Kernel: (ok, zeta, m, zetahat, U, sv, Vt, power, total) of the completion's mean channel
    for K = 2 (docs/THEORY.md §10.5): with U Phi's left singular vectors (:func:`thin_svd2`),
    Psi_r = (I - U U^T) Psi and ht_r likewise, zeta solves
    (I + D Psi_r^T Psi_r) zeta = D Psi_r^T ht_r, D = A beta pi_g tau_g on group g's r entries;
    m = :func:`mean_coef2`; zetahat = A Psi^T (ht - Psi zeta - Phi m); power = (U^T ht)^2 and
    total = ht . ht (the contrast check, ``spiked.contrast``). ok False: see thin_svd2."""
    N = Phi.shape[0]
    P = Psi.shape[1]
    ok, U, sv, Vt = thin_svd2(Phi)
    if ok and P == 4:
        zeta, m, zh, power, total = _elimination_r2(U, sv, Vt, Phi, Psi, ht, A, beta, pi, tau)
        return True, zeta, m, zh, U, sv, Vt, power, total
    zeta = np.zeros(P)
    zh = np.zeros(P)
    m = np.zeros(2)
    power = np.zeros(2)
    if not ok:
        return False, zeta, m, zh, U, sv, Vt, power, 0.0
    C = U.T @ Psi
    d = U.T @ ht
    d0 = d[0]
    d1 = d[1]
    total = float(ht @ ht)
    Psr = np.empty((N, P))
    htr = np.empty(N)
    for i in range(N):
        u0 = U[i, 0]
        u1 = U[i, 1]
        htr[i] = ht[i] - u0 * d0 - u1 * d1
        for a in range(P):
            Psr[i, a] = Psi[i, a] - u0 * C[0, a] - u1 * C[1, a]
    Sys = Psr.T @ Psr
    rhs = Psr.T @ htr
    for g in range(2):
        dl = A * beta * pi[g] * tau[g]
        for i in range(r):
            gi = g * r + i
            for e in range(P):
                Sys[gi, e] *= dl
            rhs[gi] *= dl
            Sys[gi, gi] += 1.0
    zeta = np.linalg.solve(Sys, rhs)
    m = mean_coef2(U, sv, Vt, Psi, ht, zeta)
    e = np.empty(N)
    for i in range(N):
        t = ht[i] - Phi[i, 0] * m[0] - Phi[i, 1] * m[1]
        for a in range(P):
            t -= Psi[i, a] * zeta[a]
        e[i] = t
    zh = A * (Psi.T @ e)
    power[0] = d0 * d0
    power[1] = d1 * d1
    return True, zeta, m, zh, U, sv, Vt, power, total


@kernel(cache=True, error_model="numpy")
def _elimination_r2(U, sv, Vt, Phi, Psi, ht, A, beta, pi, tau):
    """Kernel: :func:`mean_elimination2`'s (zeta, m, zetahat, power, total) for r = 2 (Psi with
    four columns), every sum over the rows held in registers."""
    N = U.shape[0]
    c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = 0.0  # U^T Psi
    d0 = d1 = total = 0.0  # U^T ht, ht . ht
    for i in range(N):
        u0 = U[i, 0]
        u1 = U[i, 1]
        hi = ht[i]
        p0 = Psi[i, 0]
        p1 = Psi[i, 1]
        p2 = Psi[i, 2]
        p3 = Psi[i, 3]
        total += hi * hi
        d0 += u0 * hi
        d1 += u1 * hi
        c00 += u0 * p0
        c01 += u0 * p1
        c02 += u0 * p2
        c03 += u0 * p3
        c10 += u1 * p0
        c11 += u1 * p1
        c12 += u1 * p2
        c13 += u1 * p3
    s00 = s01 = s02 = s03 = s11 = s12 = s13 = s22 = s23 = s33 = 0.0  # Psi_r^T Psi_r
    b0 = b1 = b2 = b3 = 0.0  # Psi_r^T ht_r
    for i in range(N):
        u0 = U[i, 0]
        u1 = U[i, 1]
        hr = ht[i] - u0 * d0 - u1 * d1
        q0 = Psi[i, 0] - u0 * c00 - u1 * c10
        q1 = Psi[i, 1] - u0 * c01 - u1 * c11
        q2 = Psi[i, 2] - u0 * c02 - u1 * c12
        q3 = Psi[i, 3] - u0 * c03 - u1 * c13
        b0 += q0 * hr
        b1 += q1 * hr
        b2 += q2 * hr
        b3 += q3 * hr
        s00 += q0 * q0
        s01 += q0 * q1
        s02 += q0 * q2
        s03 += q0 * q3
        s11 += q1 * q1
        s12 += q1 * q2
        s13 += q1 * q3
        s22 += q2 * q2
        s23 += q2 * q3
        s33 += q3 * q3
    Sys = np.array([[s00, s01, s02, s03], [s01, s11, s12, s13], [s02, s12, s22, s23],
                    [s03, s13, s23, s33]])
    rhs = np.array([b0, b1, b2, b3])
    for g in range(2):
        dl = A * beta * pi[g] * tau[g]
        for i in range(2):
            gi = g * 2 + i
            for e in range(4):
                Sys[gi, e] *= dl
            rhs[gi] *= dl
            Sys[gi, gi] += 1.0
    zeta = np.linalg.solve(Sys, rhs)
    z0, z1, z2, z3 = zeta[0], zeta[1], zeta[2], zeta[3]
    m = mean_coef2(U, sv, Vt, Psi, ht, zeta)
    m0, m1 = m[0], m[1]
    e0 = e1 = e2 = e3 = 0.0
    for i in range(N):
        p0 = Psi[i, 0]
        p1 = Psi[i, 1]
        p2 = Psi[i, 2]
        p3 = Psi[i, 3]
        e = ht[i] - Phi[i, 0] * m0 - Phi[i, 1] * m1 - p0 * z0 - p1 * z1 - p2 * z2 - p3 * z3
        e0 += p0 * e
        e1 += p1 * e
        e2 += p2 * e
        e3 += p3 * e
    zh = np.array([A * e0, A * e1, A * e2, A * e3])
    power = np.array([d0 * d0, d1 * d1])
    return zeta, m, zh, power, total
