"""Dense linear algebra of small matrices (K x K, K a few neuron groups) as plain loops, for the
numba kernels of the K-group equations (docs/THEORY.md §10.4): numba's ``@`` and
``np.linalg`` call BLAS/LAPACK at a fixed cost per call (allocation, layout checks, workspace
queries) far above the arithmetic of a 4 x 4 matrix, and the resolvent's Newton solve makes
dozens of such calls per evaluation of the map. Same algorithms (LU with partial pivoting);
the results agree with LAPACK's to round-off. A singular matrix gives non-finite entries
(the callers test them) instead of an exception. Also the deterministic block resolvent
(tau, V1, V2) of the groups and its derivative along (Vhat1, Vhat2) (§10.4), the same algorithms
in work arrays where they run hundreds of times a point."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.two_groups import tau_solve2


@kernel(cache=True, error_model="numpy")
def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Kernel: the product A B of small matrices (:func:`mm_into` on a new array)."""
    out = np.zeros((A.shape[0], B.shape[1]))
    mm_into(A, B, out)
    return out


@kernel(cache=True, error_model="numpy")
def lu(A: np.ndarray) -> tuple:
    """Kernel: (LU, piv) of PA = LU, partial pivoting (L unit lower, both in one matrix;
    :func:`lu_inplace` on a copy)."""
    a = A.copy()
    piv = np.empty(A.shape[0], np.int64)
    lu_inplace(a, piv)
    return a, piv


@kernel(cache=True, error_model="numpy")
def lu_solve(a: np.ndarray, piv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kernel: x with A x = b from ``lu(A)``; b one vector (:func:`lu_solve_into`)."""
    x = np.empty(a.shape[0])
    lu_solve_into(a, piv, b, x)
    return x


@kernel(cache=True, error_model="numpy")
def solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kernel: ``np.linalg.solve(A, b)`` for a small A and one vector b."""
    a, piv = lu(A)
    return lu_solve(a, piv, b)


@kernel(cache=True, error_model="numpy")
def inv(A: np.ndarray) -> np.ndarray:
    """Kernel: ``np.linalg.inv(A)`` for a small A."""
    n = A.shape[0]
    a, piv = lu(A)
    out = np.empty((n, n))
    e = np.zeros(n)
    for j in range(n):
        e[:] = 0.0
        e[j] = 1.0
        out[:, j] = lu_solve(a, piv, e)
    return out


@kernel(cache=True, error_model="numpy")
def weighted_gram(Y: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Kernel: sum_j a_j y_j y_j^T over the rows y_j of Y (n x L, L small), the upper triangle
    accumulated and mirrored."""
    return gram_t(np.ascontiguousarray(Y.T), a)


@kernel(cache=True, error_model="numpy")
def gram_t(Yt: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Kernel: :func:`weighted_gram` of Y = Yt^T: G[p, q] (q >= p) = sum over j in order of
    (a_j Y_jp) Y_jq, up to four q a pass over the rows (independent chains), mirrored."""
    L, n = Yt.shape
    G = np.zeros((L, L))
    for p in range(L):
        yp = Yt[p]
        for q0 in range(p, L, 4):
            nq = min(4, L - q0)
            y0 = Yt[q0]
            y1 = Yt[q0 + 1] if nq > 1 else y0
            y2 = Yt[q0 + 2] if nq > 2 else y0
            y3 = Yt[q0 + 3] if nq > 3 else y0
            s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
            for j in range(n):
                ay = a[j] * yp[j]
                s0 += ay * y0[j]
                s1 += ay * y1[j]
                s2 += ay * y2[j]
                s3 += ay * y3[j]
            for i, sm in enumerate((s0, s1, s2, s3)):
                if i < nq:
                    G[p, q0 + i] = sm
    for p in range(L):
        for q in range(p):
            G[p, q] = G[q, p]
    return G


@kernel(cache=True, error_model="numpy")
def pair_gram(B: np.ndarray, S: np.ndarray, a: np.ndarray) -> tuple:
    """Kernel: (G, idx): the weighted Gram (:func:`weighted_gram`) of the rows
    y_j = (B_ja B_jb for a <= b, S_jc) (B: n x K, S: n x K'), and idx[a, b] the column of
    B_a B_b in y (K (K + 1) / 2 products, then the K' columns of S)."""
    n, K = B.shape
    L = K * (K + 1) // 2
    Yt = np.empty((L + S.shape[1], n))  # Y transposed: one row per column of Y
    idx = np.empty((K, K), dtype=np.int64)
    c = 0
    for i in range(K):
        for k in range(i, K):
            idx[i, k], idx[k, i] = c, c
            for j in range(n):
                Yt[c, j] = B[j, i] * B[j, k]
            c += 1
    for i in range(S.shape[1]):
        for j in range(n):
            Yt[L + i, j] = S[j, i]
    return gram_t(Yt, a), idx


# the same algorithms into given arrays (no allocation: the resolvent's Newton loop and the
# completion's columns call them hundreds of times on 2 x 2 to 4 x 4 matrices; the numbers are
# those of mm, lu, lu_solve and inv above, bit for bit)


@kernel(cache=True, error_model="numpy")
def mm_into(A: np.ndarray, B: np.ndarray, out: np.ndarray) -> None:
    """Kernel: out = A B (:func:`mm`)."""
    n, k = A.shape
    m = B.shape[1]
    for i in range(n):
        for j in range(m):
            s = 0.0
            for l in range(k):
                s += A[i, l] * B[l, j]
            out[i, j] = s


@kernel(cache=True, error_model="numpy")
def lu_inplace(a: np.ndarray, piv: np.ndarray) -> None:
    """Kernel: :func:`lu` of the matrix in ``a``, overwritten by its factors (piv filled)."""
    n = a.shape[0]
    for i in range(n):
        piv[i] = i
    for j in range(n):
        p = j
        for i in range(j + 1, n):
            if abs(a[i, j]) > abs(a[p, j]):
                p = i
        if p != j:
            for c in range(n):
                a[j, c], a[p, c] = a[p, c], a[j, c]
            piv[j], piv[p] = piv[p], piv[j]
        for i in range(j + 1, n):
            a[i, j] = a[i, j] / a[j, j]
            f = a[i, j]
            for c in range(j + 1, n):
                a[i, c] -= f * a[j, c]


@kernel(cache=True, error_model="numpy")
def lu_solve_into(a: np.ndarray, piv: np.ndarray, b: np.ndarray, x: np.ndarray) -> None:
    """Kernel: x = :func:`lu_solve` (a, piv, b)."""
    n = a.shape[0]
    for i in range(n):
        s = b[piv[i]]
        for c in range(i):
            s -= a[i, c] * x[c]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, n):
            s -= a[i, c] * x[c]
        x[i] = s / a[i, i]


@kernel(cache=True, error_model="numpy")
def inv_into(A: np.ndarray, out: np.ndarray, a: np.ndarray, piv: np.ndarray, e: np.ndarray,
             x: np.ndarray) -> None:
    """Kernel: out = :func:`inv` (A); a (n x n), piv, e, x (n): work arrays."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            a[i, j] = A[i, j]
    lu_inplace(a, piv)
    for j in range(n):
        e[:] = 0.0
        e[j] = 1.0
        lu_solve_into(a, piv, e, x)
        for i in range(n):
            out[i, j] = x[i]


# the deterministic block resolvent of the K-group equations and its derivative (docs/THEORY.md
# §10.4), on these loops

TAU_TOL = 1e-14


@kernel(cache=True, error_model="numpy")
def tau_solve(M: np.ndarray, lamg: np.ndarray, beta: float, pi: np.ndarray) -> np.ndarray:
    """Kernel: tau_g = 1/(lamg_g + [M (I + D M)^-1]_gg), D = diag(beta pi tau), from the lower
    bound 1/(lamg + M_gg) (the map is increasing in tau): safeguarded Newton. NaN if it fails.
    (The small matrices live in work arrays allocated once; the arithmetic is that of ``mm``,
    ``inv`` and ``solve``.)"""
    K = M.shape[0]
    tau = np.empty(K)
    if K == 2:  # (the same numbers with the 2 x 2 matrices in scalars)
        tau_solve2(M, lamg, beta, pi, TAU_TOL, tau)
        return tau
    for g in range(K):
        den = lamg[g] + M[g, g]
        if not den > 0.0:
            tau[:] = np.nan
            return tau
        tau[g] = 1.0 / den
    bp = beta * pi
    D = np.zeros((K, K))
    T = np.empty((K, K))
    Bi = np.empty((K, K))
    Km = np.empty((K, K))
    J = np.empty((K, K))
    a = np.empty((K, K))
    piv = np.empty(K, dtype=np.int64)
    e = np.empty(K)
    x = np.empty(K)
    F = np.empty(K)
    rhs = np.empty(K)
    cand = np.empty(K)
    for _ in range(2000):
        for g in range(K):
            D[g, g] = bp[g] * tau[g]
        mm_into(D, M, T)
        for i in range(K):
            for j in range(K):
                T[i, j] = (1.0 if i == j else 0.0) + T[i, j]
        inv_into(T, Bi, a, piv, e, x)
        mm_into(M, Bi, Km)
        for g in range(K):
            F[g] = 1.0 / (lamg[g] + Km[g, g])
        for g in range(K):
            for h in range(K):
                J[g, h] = F[g] * F[g] * Km[g, h] * Km[h, g] * beta * pi[h]
        # Newton where it is safe: (I - J)^-1 1 > 0 iff the spectral radius of J >= 0 is < 1;
        # elsewhere the plain iteration, which increases monotonically to the fixed point
        for i in range(K):
            for j in range(K):
                a[i, j] = (1.0 if i == j else 0.0) - J[i, j]
        lu_inplace(a, piv)
        rhs[:] = 1.0
        lu_solve_into(a, piv, rhs, x)
        newton = True
        for g in range(K):
            if not x[g] > 0.0:
                newton = False
        if newton:
            for g in range(K):
                rhs[g] = F[g] - tau[g]
            lu_solve_into(a, piv, rhs, x)
            for g in range(K):
                cand[g] = tau[g] + x[g]
                if not (np.isfinite(cand[g]) and cand[g] > 0.0):
                    newton = False
        new = cand if newton else F
        done = True
        for g in range(K):
            if abs(new[g] - tau[g]) > TAU_TOL * abs(new[g]):
                done = False
        tau[:] = new
        if done:
            return tau
    tau[:] = np.nan
    return tau


@kernel(cache=True, error_model="numpy")
def resolvent(M: np.ndarray, lamg: np.ndarray, beta: float, pi: np.ndarray) -> tuple:
    """Kernel: (tau, V1, V2) of the deterministic block resolvent (docs/THEORY.md §10.4)."""
    tau = tau_solve(M, lamg, beta, pi)
    K = M.shape[0]
    bp = beta * pi
    D = np.zeros((K, K))
    for g in range(K):
        D[g, g] = bp[g] * tau[g]
    T = np.empty((K, K))
    mm_into(M, D, T)
    for i in range(K):
        for j in range(K):
            T[i, j] = (1.0 if i == j else 0.0) + T[i, j]
    Ti = np.empty((K, K))
    inv_into(T, Ti, np.empty((K, K)), np.empty(K, dtype=np.int64), np.empty(K), np.empty(K))
    mm_into(D, Ti, T)
    V1 = np.empty((K, K))
    for i in range(K):
        for j in range(K):
            V1[i, j] = 0.5 * (T[i, j] / beta + T[j, i] / beta)
    return tau, V1, pi * tau


@kernel(cache=True, error_model="numpy")
def dresolvent_parts(M: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray) -> tuple:
    """Kernel: the direction-free parts of :func:`dresolvent` (D, Ai, Bi, I - J)."""
    K = M.shape[0]
    eye = np.eye(K)
    D = np.diag(beta * pi * tau)
    Ai = inv(eye + mm(M, D))
    Bi = inv(eye + mm(D, M))
    Km = mm(M, Bi)
    J = np.empty((K, K))
    for g in range(K):
        t2 = tau[g] * tau[g]
        for h in range(K):
            J[g, h] = t2 * Km[g, h] * Km[h, g] * beta * pi[h]
    return D, Ai, Bi, eye - J


@kernel(cache=True, error_model="numpy")
def dresolvent_along(parts: tuple, M: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray,
                     X1: np.ndarray, X2: np.ndarray) -> tuple:
    """Kernel: :func:`dresolvent` from its ``dresolvent_parts`` (many directions, one point)."""
    D, Ai, Bi, ImJ = parts
    Y = mm(mm(Ai, X1), Bi)
    b = np.empty(M.shape[0])
    for g in range(M.shape[0]):
        b[g] = -(tau[g] * tau[g]) * (X2[g] + Y[g, g])
    dtau = solve(ImJ, b)
    dD = np.diag(beta * pi * dtau)
    dV1 = (mm(dD, Ai) - mm(mm(mm(D, Ai), mm(X1, D) + mm(M, dD)), Ai)) / beta
    return 0.5 * (dV1 + dV1.T), pi * dtau


@kernel(cache=True, error_model="numpy")
def along_work(parts: tuple, beta: float, pi: np.ndarray) -> tuple:
    """Kernel: what :func:`along_into` reuses across directions at one point: the LU of I - J,
    D Ai, and work arrays."""
    D, Ai, Bi, ImJ = parts
    K = D.shape[0]
    a = ImJ.copy()
    piv = np.empty(K, dtype=np.int64)
    lu_inplace(a, piv)
    W = np.zeros((9, K, K))  # W[2]: dD (diagonal), the others overwritten
    return a, piv, mm(D, Ai), W, np.empty((2, K))


@kernel(cache=True, error_model="numpy")
def along_into(parts: tuple, work: tuple, M: np.ndarray, tau: np.ndarray, beta: float,
               pi: np.ndarray, X1: np.ndarray, X2: np.ndarray, out1: np.ndarray,
               out2: np.ndarray) -> None:
    """Kernel: (out1, out2) = :func:`dresolvent_along` (parts, ..., X1, X2), the same arithmetic
    with the work of :func:`along_work`."""
    D, Ai, Bi, _ = parts
    a, piv, DAi, W, v = work
    K = M.shape[0]
    T1, Y, dD, P, Q1, Q2, R, U = W[0], W[1], W[2], W[3], W[4], W[5], W[6], W[7]
    b, dtau = v[0], v[1]
    mm_into(Ai, X1, T1)
    mm_into(T1, Bi, Y)
    for g in range(K):
        b[g] = -(tau[g] * tau[g]) * (X2[g] + Y[g, g])
    lu_solve_into(a, piv, b, dtau)
    for g in range(K):
        dD[g, g] = beta * pi[g] * dtau[g]
    mm_into(dD, Ai, P)
    mm_into(X1, D, Q1)
    mm_into(M, dD, Q2)
    for i in range(K):
        for j in range(K):
            Q1[i, j] = Q1[i, j] + Q2[i, j]
    mm_into(DAi, Q1, R)
    mm_into(R, Ai, U)
    for i in range(K):
        for j in range(K):
            P[i, j] = (P[i, j] - U[i, j]) / beta
    for i in range(K):
        for j in range(K):
            out1[i, j] = 0.5 * (P[i, j] + P[j, i])
        out2[i] = pi[i] * dtau[i]


@kernel(cache=True, error_model="numpy")
def dresolvent(M: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray, X1: np.ndarray,
               X2: np.ndarray) -> tuple:
    """Kernel: the derivative (dV1, dV2) of (V1, V2) along (Vhat1, Vhat2) -> + (X1, X2)."""
    return dresolvent_along(dresolvent_parts(M, tau, beta, pi), M, tau, beta, pi, X1, X2)
