"""The Schur complement's inverse of :mod:`asymptotics.network.schur` as numba kernels
(docs/DERIVATIONS.md §9.7, THEORY.md §15): per block ``S_b = scale rest_b + diag(corr_b)``
(symmetric positive definite, n x n) its Cholesky factor ``L`` (by rows), ``X = L^-1`` (its
columns the rows of ``XT``) and from them ``diag(S^-1)_j = sum_k X_kj^2`` or the whole
``S^-1 = X^T X`` (potrf + trtri (+ lauum)'s flops; L two rows by two columns at a time, four
sums on each pair of loads, X and ``X^T X`` two rows by four columns, eight sums on each six
loads; one block at a time: :func:`_factor`, then :func:`_diag` or :func:`_full`). The sums
run in other groups than the two-column passes' or LAPACK's: the numbers agree to rounding."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel

#: the sums over X's rows start at multiples of this (zeros before), rows padded to it
#: (at least n + 4: rows past n are zero)
ALIGN = 8
#: fast-math without its no-NaN / no-infinity assumptions: a pivot's test sees a NaN or an
#: infinity
FAST = {"reassoc", "contract", "nsz", "arcp", "afn"}


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _factor(A: np.ndarray, scale: float, cb: np.ndarray, L: np.ndarray, XT: np.ndarray,
            n: int) -> bool:
    """Kernel: ``L`` (Cholesky by rows) and ``XT`` (``XT_jk = X_kj``, ``X = L^-1``) of
    ``scale A + diag(cb)`` into the scratch ``L``, ``XT`` (padded x padded; zero where not
    written: the same entries are written for every block of size n). False where a pivot is
    not positive (or not finite)."""
    for i in range(0, n, 2):  # L's rows i, i + 1 (i + 1 = n: not written)
        two = i + 1 < n
        for j in range(0, i, 2):
            a00 = a01 = a10 = a11 = 0.0
            for k in range(j):
                a00 += L[i, k] * L[j, k]
                a01 += L[i, k] * L[j + 1, k]
                a10 += L[i + 1, k] * L[j, k]
                a11 += L[i + 1, k] * L[j + 1, k]
            L[i, j] = x0 = (A[i, j] * scale - a00) / L[j, j]
            L[i, j + 1] = (A[i, j + 1] * scale - a01 - x0 * L[j + 1, j]) / L[j + 1, j + 1]
            if two:
                L[i + 1, j] = x1 = (A[i + 1, j] * scale - a10) / L[j, j]
                L[i + 1, j + 1] = (A[i + 1, j + 1] * scale - a11 - x1 * L[j + 1, j]) \
                    / L[j + 1, j + 1]
        a00 = a10 = a11 = 0.0
        for k in range(i):
            a00 += L[i, k] * L[i, k]
            a10 += L[i + 1, k] * L[i, k]
            a11 += L[i + 1, k] * L[i + 1, k]
        d0 = A[i, i] * scale + cb[i] - a00
        if not 0.0 < d0 < np.inf:
            return False
        L[i, i] = d0 = np.sqrt(d0)
        if two:
            L[i + 1, i] = x1 = (A[i + 1, i] * scale - a10) / d0
            d1 = A[i + 1, i + 1] * scale + cb[i + 1] - a11 - x1 * x1
            if not 0.0 < d1 < np.inf:
                return False
            L[i + 1, i + 1] = np.sqrt(d1)
    for i in range(0, n, 2):  # X's rows i, i + 1: X_ij = -sum_(j<=k<i) L_ik X_kj / L_ii
        di0 = 1.0 / L[i, i]
        di1 = 1.0 / L[i + 1, i + 1] if i + 1 < n else 0.0
        li = L[i + 1, i]
        j = 0
        while j + 4 <= i:  # (four columns at a time: eight sums on each six loads)
            a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = 0.0
            for k in range(j - j % ALIGN, i):
                l0 = L[i, k]
                l1 = L[i + 1, k]
                x0 = XT[j, k]
                x1 = XT[j + 1, k]
                x2 = XT[j + 2, k]
                x3 = XT[j + 3, k]
                a00 += l0 * x0
                a01 += l0 * x1
                a02 += l0 * x2
                a03 += l0 * x3
                a10 += l1 * x0
                a11 += l1 * x1
                a12 += l1 * x2
                a13 += l1 * x3
            XT[j, i] = y0 = -a00 * di0
            XT[j + 1, i] = y1 = -a01 * di0
            XT[j + 2, i] = y2 = -a02 * di0
            XT[j + 3, i] = y3 = -a03 * di0
            XT[j, i + 1] = -(a10 + li * y0) * di1
            XT[j + 1, i + 1] = -(a11 + li * y1) * di1
            XT[j + 2, i + 1] = -(a12 + li * y2) * di1
            XT[j + 3, i + 1] = -(a13 + li * y3) * di1
            j += 4
        if j < i:  # (the last two columns: j + 2 = i)
            a00 = a01 = a10 = a11 = 0.0
            for k in range(j - j % ALIGN, i):
                a00 += L[i, k] * XT[j, k]
                a01 += L[i, k] * XT[j + 1, k]
                a10 += L[i + 1, k] * XT[j, k]
                a11 += L[i + 1, k] * XT[j + 1, k]
            XT[j, i] = y0 = -a00 * di0
            XT[j + 1, i] = y1 = -a01 * di0
            XT[j, i + 1] = -(a10 + li * y0) * di1
            XT[j + 1, i + 1] = -(a11 + li * y1) * di1
        XT[i, i] = di0
        XT[i, i + 1] = -li * di0 * di1
        XT[i + 1, i + 1] = di1
    return True


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _diag(XT: np.ndarray, n: int, row: np.ndarray) -> None:
    """Kernel: ``row[j] = diag(S^-1)_j = sum_(k>=j) XT_jk^2``."""
    for j in range(n):
        acc = 0.0
        for k in range(j, n):
            acc += XT[j, k] * XT[j, k]
        row[j] = acc


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _full(XT: np.ndarray, n: int, o: np.ndarray, ob: np.ndarray) -> None:
    """Kernel: ``ob = S^-1 = X^T X`` (``(S^-1)_aj = sum_(k>=a) XT_ak XT_jk``, j <= a, two rows
    by four columns into the scratch ``o``, then both triangles)."""
    for a in range(0, n, 2):
        for j in range(0, a + 1, 4):  # (j + 3 <= n + 2 < padded: zero rows past n)
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = 0.0
            for k in range(a - a % ALIGN, n):
                x0 = XT[a, k]
                x1 = XT[a + 1, k]
                y0 = XT[j, k]
                y1 = XT[j + 1, k]
                y2 = XT[j + 2, k]
                y3 = XT[j + 3, k]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
            o[a, j], o[a, j + 1], o[a, j + 2], o[a, j + 3] = s00, s01, s02, s03
            o[a + 1, j], o[a + 1, j + 1], o[a + 1, j + 2], o[a + 1, j + 3] = s10, s11, s12, s13
    for a in range(n):
        for j in range(a + 1):
            ob[a, j] = ob[j, a] = o[a, j]


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def chol_inverse(rest: np.ndarray, scale: float, corr: np.ndarray, out: np.ndarray,
                 full: bool) -> bool:
    """Kernel: the inverse of ``S_b = scale rest_b + diag(corr_b)`` per block (B x n x n, each
    symmetric positive definite): ``out[b, 0]`` its diagonal (out: B x 1 x n) or with ``full``
    the whole inverse (B x n x n) (module docstring). False where some ``S_b`` is not positive
    definite (or not finite)."""
    B, n = rest.shape[0], rest.shape[1]
    npd = (n + 3 + ALIGN) // ALIGN * ALIGN  # (>= n + 4: :func:`_full`'s four columns)
    L, XT, o = np.zeros((npd, npd)), np.zeros((npd, npd)), np.zeros((npd, npd))
    for b in range(B):
        if not _factor(rest[b], scale, corr[b], L, XT, n):
            return False
        if full:
            _full(XT, n, o, out[b])
        else:
            _diag(XT, n, out[b, 0])
    return True
