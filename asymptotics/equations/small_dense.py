"""Dense linear algebra of small matrices (K x K, K a few neuron groups) as plain loops, for the
numba kernels of the K-group equations (docs/THEORY.md §10.4): numba's ``@`` and
``np.linalg`` call BLAS/LAPACK at a fixed cost per call (allocation, layout checks, workspace
queries) far above the arithmetic of a 4 x 4 matrix, and the resolvent's Newton solve makes
dozens of such calls per evaluation of the map. Same algorithms (LU with partial pivoting);
the results agree with LAPACK's to round-off. A singular matrix gives non-finite entries
(the callers test them) instead of an exception."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel


@kernel(cache=True, error_model="numpy")
def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Kernel: the product A B of small matrices."""
    n, k = A.shape
    m = B.shape[1]
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for l in range(k):
                s += A[i, l] * B[l, j]
            out[i, j] = s
    return out


@kernel(cache=True, error_model="numpy")
def lu(A: np.ndarray) -> tuple:
    """Kernel: (LU, piv) of PA = LU, partial pivoting (L unit lower, both in one matrix)."""
    n = A.shape[0]
    a = A.copy()
    piv = np.arange(n)
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
    return a, piv


@kernel(cache=True, error_model="numpy")
def lu_solve(a: np.ndarray, piv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kernel: x with A x = b from ``lu(A)``; b one vector."""
    n = a.shape[0]
    x = np.empty(n)
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
    n, L = Y.shape
    G = np.zeros((L, L))
    for j in range(n):
        for p in range(L):
            ay = a[j] * Y[j, p]
            for q in range(p, L):
                G[p, q] += ay * Y[j, q]
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
    Y = np.empty((n, L + S.shape[1]))
    idx = np.empty((K, K), dtype=np.int64)
    c = 0
    for i in range(K):
        for k in range(i, K):
            idx[i, k], idx[k, i] = c, c
            Y[:, c] = B[:, i] * B[:, k]
            c += 1
    Y[:, L:] = S
    return weighted_gram(Y, a), idx


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
