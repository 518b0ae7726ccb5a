"""Compiled kernels of :class:`asymptotics.spectra.netbulk.OutsideTraces` (docs/THEORY.md
§16.8, docs/DERIVATIONS.md §9.8): the traces ``T = T0 + A + B`` of the bulk outside E at a
batch of complex points, one loop over points and directions; the products with ``O_b o O_e``
between the two kernels are one BLAS product per block (the caller's)."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel

#: fast math in the loops over directions (reassociated, vectorised sums; complex products
#: without the inf/NaN recovery: a point whose sums overflow is caught by the callers' checks
#: on m, Im m >= 0 and the 10% move from the path's model)
FAST = True


@kernel(cache=True, error_model="numpy")
def _ninv_at(vh: np.ndarray, D: np.ndarray, s: np.ndarray, out: np.ndarray) -> None:
    """Kernel: ``out = (I + diag(D s) Vhat1)^-1`` (K x K, complex) for one direction."""
    K = s.shape[0]
    if K == 1:
        out[0, 0] = 1.0 / (1.0 + D[0] * s[0] * vh[0, 0])
    elif K == 2:
        u0, u1 = D[0] * s[0], D[1] * s[1]
        a, b = 1.0 + u0 * vh[0, 0], u0 * vh[0, 1]
        c, e = u1 * vh[1, 0], 1.0 + u1 * vh[1, 1]
        idet = 1.0 / (a * e - b * c)
        out[0, 0], out[0, 1] = e * idet, -b * idet
        out[1, 0], out[1, 1] = -c * idet, a * idet
    else:  # Gauss-Jordan with partial pivoting (no LAPACK call per direction)
        A = np.empty((K, K), dtype=np.complex128)
        for a in range(K):
            for b in range(K):
                A[a, b] = D[a] * s[a] * vh[a, b] + (1.0 if a == b else 0.0)
                out[a, b] = 1.0 if a == b else 0.0
        for c in range(K):
            p = c
            for r in range(c + 1, K):
                if abs(A[r, c]) > abs(A[p, c]):
                    p = r
            if p != c:
                for j in range(K):
                    A[c, j], A[p, j] = A[p, j], A[c, j]
                    out[c, j], out[p, j] = out[p, j], out[c, j]
            piv = 1.0 / A[c, c]
            for j in range(K):
                A[c, j] *= piv
                out[c, j] *= piv
            for r in range(K):
                if r != c:
                    f = A[r, c]
                    for j in range(K):
                        A[r, j] -= f * A[c, j]
                        out[r, j] -= f * out[c, j]


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _n2(v00: complex, v01: complex, v10: complex, v11: complex, u0: complex,
        u1: complex) -> tuple:
    """Kernel: ``(I + diag(u) Vhat1)^-1`` for K = 2 as four scalars (row-major)."""
    a, b = 1.0 + u0 * v00, u0 * v01
    c, e = u1 * v10, 1.0 + u1 * v11
    idet = 1.0 / (a * e - b * c)
    return e * idet, -b * idet, -c * idet, a * idet


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def traces_first(vh: np.ndarray, D: np.ndarray, s: np.ndarray, ws: np.ndarray,
                  ob: np.ndarray, oe: np.ndarray) -> tuple:
    """Kernel: ``T0`` (N x K x K) of :meth:`OutsideTraces.traces` and, per ordered pair
    ``(ob[p], oe[p])``, ``Q_i[ob, oe]`` on every direction as a real array (pairs, B, n, 2N):
    real parts in the first N columns, imaginary parts in the last N (one BLAS product with
    ``O_b o O_e`` then gives ``Y``)."""
    Np, K = D.shape
    B, n = s.shape[0], s.shape[1]
    npo = ob.shape[0]
    T = np.zeros((Np, K, K), dtype=np.complex128)
    W = np.empty((npo, B, n, 2 * Np))
    Nm = np.empty((K, K), dtype=np.complex128)
    for x in range(Np):
        if K == 1 and npo == 0:
            u, t00 = D[x, 0] * vh[x, 0, 0], 0j
            for b in range(B):
                for i in range(n):
                    t00 += ws[b, i, 0] / (1.0 + u * s[b, i, 0])
            T[x, 0, 0] = t00
            continue
        if K == 2:
            v00, v01, v10, v11 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 1, 0], vh[x, 1, 1]
            D0, D1 = D[x, 0], D[x, 1]
            t00, t01, t10, t11 = 0j, 0j, 0j, 0j
            for b in range(B):
                for i in range(n):
                    s0, s1 = s[b, i, 0], s[b, i, 1]
                    n00, n01, n10, n11 = _n2(v00, v01, v10, v11, D0 * s0, D1 * s1)
                    t00 += n00 * ws[b, i, 0]
                    t01 += n01 * ws[b, i, 1]
                    t10 += n10 * ws[b, i, 0]
                    t11 += n11 * ws[b, i, 1]
                    for p in range(npo):
                        if ob[p] == 0:
                            q = v00 * (n00 if oe[p] == 0 else n01) + v01 * (n10 if oe[p] == 0
                                                                             else n11)
                        else:
                            q = v10 * (n00 if oe[p] == 0 else n01) + v11 * (n10 if oe[p] == 0
                                                                             else n11)
                        W[p, b, i, x] = q.real
                        W[p, b, i, Np + x] = q.imag
            T[x, 0, 0], T[x, 0, 1], T[x, 1, 0], T[x, 1, 1] = t00, t01, t10, t11
            continue
        for b in range(B):
            for i in range(n):
                _ninv_at(vh[x], D[x], s[b, i], Nm)
                for a in range(K):
                    for g in range(K):
                        T[x, a, g] += Nm[a, g] * ws[b, i, g]
                for p in range(npo):
                    q = 0j
                    for c in range(K):
                        q += vh[x, ob[p], c] * Nm[c, oe[p]]
                    W[p, b, i, x] = q.real
                    W[p, b, i, Np + x] = q.imag
    return T, W


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _second2(vh: np.ndarray, D: np.ndarray, s: np.ndarray, Y: np.ndarray, x: int, Np: int,
             bb: int, ee: int, acc: np.ndarray, sub: np.ndarray) -> None:
    """Kernel: the sums of :func:`traces_second` for K = 2 and one point and pair, in
    scalars (``acc[a, g] = sum_i N_i[a, bb] y_i s_ig Q_i[ee, g]``, ``sub[a] = sum_i
    N_i[a, bb] y_i``)."""
    v00, v01, v10, v11 = vh[0, 0], vh[0, 1], vh[1, 0], vh[1, 1]
    D0, D1 = D[0], D[1]
    ve0, ve1 = (v00, v01) if ee == 0 else (v10, v11)
    a00, a01, a10, a11, s0_, s1_ = 0j, 0j, 0j, 0j, 0j, 0j
    for b in range(s.shape[0]):
        for i in range(s.shape[1]):
            s0, s1 = s[b, i, 0], s[b, i, 1]
            n00, n01, n10, n11 = _n2(v00, v01, v10, v11, D0 * s0, D1 * s1)
            y = Y[b, i, x] + 1j * Y[b, i, Np + x]
            q0 = (ve0 * n00 + ve1 * n10) * s0
            q1 = (ve0 * n01 + ve1 * n11) * s1
            na0 = (n00 if bb == 0 else n01) * y
            na1 = (n10 if bb == 0 else n11) * y
            a00 += na0 * q0
            a01 += na0 * q1
            a10 += na1 * q0
            a11 += na1 * q1
            s0_ += na0
            s1_ += na1
    acc[0, 0] += a00
    acc[0, 1] += a01
    acc[1, 0] += a10
    acc[1, 1] += a11
    sub[0] += s0_
    sub[1] += s1_


@kernel(cache=True, error_model="numpy")
def traces_second(vh: np.ndarray, D: np.ndarray, s: np.ndarray, Y: np.ndarray,
                   ob: np.ndarray, oe: np.ndarray, T: np.ndarray) -> None:
    """Kernel: adds the second-order terms ``A + B`` of :meth:`OutsideTraces.traces` to ``T``
    from ``Y`` (pairs, B, n, 2N) = ``(O_b o O_e) Q[ob, oe]`` (real, imaginary columns)."""
    Np, K = D.shape
    B, n = s.shape[0], s.shape[1]
    npo = ob.shape[0]
    Nm = np.empty((K, K), dtype=np.complex128)
    Qe = np.empty(K, dtype=np.complex128)
    acc = np.empty((npo, K, K), dtype=np.complex128)
    sub = np.empty((npo, K), dtype=np.complex128)
    for x in range(Np):
        acc[:, :, :] = 0.0
        sub[:, :] = 0.0
        if K == 2:
            for p in range(npo):
                _second2(vh[x], D[x], s, Y[p], x, Np, ob[p], oe[p], acc[p], sub[p])
        for b in range(B if K != 2 else 0):
            for i in range(n):
                _ninv_at(vh[x], D[x], s[b, i], Nm)  # once a direction, for every pair
                for p in range(npo):
                    bb, ee = ob[p], oe[p]
                    y = Y[p, b, i, x] + 1j * Y[p, b, i, Np + x]
                    for g in range(K):
                        q = 0j
                        for c in range(K):
                            q += vh[x, ee, c] * Nm[c, g]
                        Qe[g] = q * s[b, i, g]
                    for a in range(K):
                        na = Nm[a, bb] * y
                        for g in range(K):
                            acc[p, a, g] += na * Qe[g]
                        sub[p, a] += na
        for p in range(npo):
            bb, ee = ob[p], oe[p]
            dd = D[x, bb] * D[x, ee]
            for a in range(K):
                for g in range(K):
                    T[x, a, g] += dd * acc[p, a, g]
                T[x, a, ee] -= D[x, bb] * sub[p, a]


def compiled(disp, args: tuple) -> bool:
    """Whether ``disp(*args)`` runs compiled (numba has it, or its on-disk cache does)."""
    if not hasattr(disp, "overloads") or disp.overloads or coldstart.mode() == "compile":
        return True
    try:
        return coldstart.is_cached(disp, coldstart.signature(disp, args))
    except Exception:  # noqa: BLE001 (numba decides)
        return True
