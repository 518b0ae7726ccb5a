"""The scalar kernels of :mod:`asymptotics.spectra.traces.outside_kernels` for two and three groups
(docs/THEORY.md §16.8, docs/DERIVATIONS.md §9.8): per point, one loop over the directions with
``N_i = (I + diag(D s_i) Vhat1)^-1`` written out (K = 2: from ``det = 1 + u0 v00 + u1 v11 +
u0 u1 det(Vhat1)``; K = 3: cofactors) and every total in a register; the second-order sums of
all pairs of groups in the same pass (``r[a, e] = sum_b D_b N[a, b] Y^{be}``)."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel

#: fast math (as :data:`asymptotics.spectra.traces.outside_kernels.FAST`)
FAST = True


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def rcp(c: complex) -> complex:
    """Kernel: ``1/c`` in real arithmetic (``conj(c)/|c|^2``)."""
    m = 1.0 / (c.real * c.real + c.imag * c.imag)
    return complex(c.real * m, -c.imag * m)


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def first2(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wf: np.ndarray, n: int, npo: int,
            T: np.ndarray, W: np.ndarray) -> None:
    """Kernel: ``traces_first`` for K = 2 (the pair (1, 1) when ``npo``): ``N`` from
    ``det = 1 + u0 v00 + u1 v11 + u0 u1 det(Vhat1)`` in scalars."""
    Np = D.shape[0]
    s0, s1, w0, w1 = sf[0], sf[1], wf[0], wf[1]
    for x in range(Np):
        v00, v01, v10, v11 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 1, 0], vh[x, 1, 1]
        D0, D1 = D[x, 0], D[x, 1]
        p0, p1, dv = D0 * v00, D1 * v11, v00 * v11 - v01 * v10
        q = D0 * D1 * dv
        t00, t11, t01, t10 = 0j, 0j, 0j, 0j
        for j in range(s0.shape[0]):
            a0, a1 = s0[j], s1[j]
            idet = rcp(1.0 + p0 * a0 + p1 * a1 + q * (a0 * a1))
            t00 += (1.0 + p1 * a1) * idet * w0[j]
            t11 += (1.0 + p0 * a0) * idet * w1[j]
            t01 += a0 * idet * w1[j]
            t10 += a1 * idet * w0[j]
        if npo:  # Q11 = v10 N01 + v11 N11 on every direction
            for b in range(W.shape[1]):
                for i in range(n):
                    a0, a1 = s0[b * n + i], s1[b * n + i]
                    idet = rcp(1.0 + p0 * a0 + p1 * a1 + q * (a0 * a1))
                    qq = (v11 + D0 * a0 * dv) * idet
                    W[0, b, x, i] = qq.real
                    W[0, b, Np + x, i] = qq.imag
        T[x, 0, 0], T[x, 1, 1] = t00, t11
        T[x, 0, 1], T[x, 1, 0] = -D0 * v01 * t01, -D1 * v10 * t10


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def second2(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, Y: np.ndarray, n: int,
             T: np.ndarray) -> None:
    """Kernel: ``traces_second`` for K = 2 and the pair (1, 1) (the only one: the groups'
    basis diagonalises Sig_1): ``r[a, 1] = D1 N[a, 1] y``, ``Q[1, 0] = v10/det``,
    ``Q[1, 1] = (v11 + u0 det(Vhat1))/det``."""
    Np = D.shape[0]
    s0, s1 = sf[0], sf[1]
    for x in range(Np):
        v00, v01, v10, v11 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 1, 0], vh[x, 1, 1]
        D0, D1 = D[x, 0], D[x, 1]
        p0, p1, dv = D0 * v00, D1 * v11, v00 * v11 - v01 * v10
        q = D0 * D1 * dv
        g0, g1, h00, h01, h10, h11 = 0j, 0j, 0j, 0j, 0j, 0j
        for b in range(Y.shape[1]):
            for i in range(n):
                a0, a1 = s0[b * n + i], s1[b * n + i]
                idet = rcp(1.0 + p0 * a0 + p1 * a1 + q * (a0 * a1))
                y = complex(Y[0, b, x, i], Y[0, b, Np + x, i]) * idet
                m0, m1 = a0 * y, (1.0 + p0 * a0) * y  # N[0, 1] y/(-D0 v01), N[1, 1] y
                c0, c1 = a0 * idet, (v11 + D0 * a0 * dv) * idet * a1  # s0 Q10/v10, s1 Q11
                g0 += m0
                g1 += m1
                h00 += m0 * c0
                h01 += m0 * c1
                h10 += m1 * c0
                h11 += m1 * c1
        f = -D0 * v01
        d2 = D1 * D1
        T[x, 0, 0] += d2 * f * v10 * h00
        T[x, 0, 1] += d2 * f * h01 - D1 * f * g0
        T[x, 1, 0] += d2 * v10 * h10
        T[x, 1, 1] += d2 * h11 - D1 * g1


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def first3(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wf: np.ndarray, n: int,
            wb: np.ndarray, we: np.ndarray, T: np.ndarray, W: np.ndarray) -> None:
    """Kernel: ``traces_first`` for K = 3 in scalars (``N`` by cofactors)."""
    Np = D.shape[0]
    npo = wb.shape[0]
    B = W.shape[1]
    for x in range(Np):
        v00, v01, v02 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 0, 2]
        v10, v11, v12 = vh[x, 1, 0], vh[x, 1, 1], vh[x, 1, 2]
        v20, v21, v22 = vh[x, 2, 0], vh[x, 2, 1], vh[x, 2, 2]
        D0, D1, D2 = D[x, 0], D[x, 1], D[x, 2]
        t00, t01, t02, t10, t11, t12, t20, t21, t22 = 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j
        for j in range(sf.shape[1]):
            w0, w1, w2 = wf[0, j], wf[1, j], wf[2, j]
            u0, u1, u2 = D0 * sf[0, j], D1 * sf[1, j], D2 * sf[2, j]
            a00, a01, a02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
            a10, a11, a12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
            a20, a21, a22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
            c00 = a11 * a22 - a12 * a21
            c01 = a12 * a20 - a10 * a22
            c02 = a10 * a21 - a11 * a20
            idet = rcp(a00 * c00 + a01 * c01 + a02 * c02)
            n00, n10, n20 = c00 * idet, c01 * idet, c02 * idet
            n01 = (a02 * a21 - a01 * a22) * idet
            n11 = (a00 * a22 - a02 * a20) * idet
            n21 = (a01 * a20 - a00 * a21) * idet
            n02 = (a01 * a12 - a02 * a11) * idet
            n12 = (a02 * a10 - a00 * a12) * idet
            n22 = (a00 * a11 - a01 * a10) * idet
            t00 += n00 * w0
            t01 += n01 * w1
            t02 += n02 * w2
            t10 += n10 * w0
            t11 += n11 * w1
            t12 += n12 * w2
            t20 += n20 * w0
            t21 += n21 * w1
            t22 += n22 * w2
        for b in range(B if npo else 0):  # Q[wb, we] on every direction
            for i in range(n):
                j = b * n + i
                u0, u1, u2 = D0 * sf[0, j], D1 * sf[1, j], D2 * sf[2, j]
                a00, a01, a02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
                a10, a11, a12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
                a20, a21, a22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
                c00 = a11 * a22 - a12 * a21
                c01 = a12 * a20 - a10 * a22
                c02 = a10 * a21 - a11 * a20
                idet = rcp(a00 * c00 + a01 * c01 + a02 * c02)
                n00, n10, n20 = c00 * idet, c01 * idet, c02 * idet
                n01 = (a02 * a21 - a01 * a22) * idet
                n11 = (a00 * a22 - a02 * a20) * idet
                n21 = (a01 * a20 - a00 * a21) * idet
                n02 = (a01 * a12 - a02 * a11) * idet
                n12 = (a02 * a10 - a00 * a12) * idet
                n22 = (a00 * a11 - a01 * a10) * idet
                for p in range(npo):
                    e = we[p]
                    c0 = n00 if e == 0 else (n01 if e == 1 else n02)
                    c1 = n10 if e == 0 else (n11 if e == 1 else n12)
                    c2 = n20 if e == 0 else (n21 if e == 1 else n22)
                    if wb[p] == 0:
                        q = v00 * c0 + v01 * c1 + v02 * c2
                    elif wb[p] == 1:
                        q = v10 * c0 + v11 * c1 + v12 * c2
                    else:
                        q = v20 * c0 + v21 * c1 + v22 * c2
                    W[p, b, x, i] = q.real
                    W[p, b, Np + x, i] = q.imag
        T[x, 0, 0], T[x, 0, 1], T[x, 0, 2] = t00, t01, t02
        T[x, 1, 0], T[x, 1, 1], T[x, 1, 2] = t10, t11, t12
        T[x, 2, 0], T[x, 2, 1], T[x, 2, 2] = t20, t21, t22


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def second3(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, Y: np.ndarray, n: int,
             wb: np.ndarray, we: np.ndarray, T: np.ndarray) -> None:
    """Kernel: ``traces_second`` for K = 3 in scalars, the unordered pairs of groups 1, 2
    (``Q`` symmetric): ``Ymat`` the symmetric 2 x 2 of the pairs' ``y`` (zero where no pair),
    ``r[a, e] = sum_b D_b N[a, b] Ymat[b, e]``, ``B[a, g] += sum_e D_e r[a, e] s_g Q[e, g]``,
    ``A[a, e] -= r[a, e]`` (e = 1, 2)."""
    Np = D.shape[0]
    npo = wb.shape[0]
    B = Y.shape[1]
    k11, k12, k22 = -1, -1, -1  # the slot of each pair in Y (-1: none)
    for p in range(npo):
        if wb[p] != we[p]:
            k12 = p
        elif wb[p] == 1:
            k11 = p
        else:
            k22 = p
    for x in range(Np):
        v00, v01, v02 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 0, 2]
        v10, v11, v12 = vh[x, 1, 0], vh[x, 1, 1], vh[x, 1, 2]
        v20, v21, v22 = vh[x, 2, 0], vh[x, 2, 1], vh[x, 2, 2]
        D0, D1, D2 = D[x, 0], D[x, 1], D[x, 2]
        b00, b01, b02, b10, b11, b12, b20, b21, b22 = 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j
        h01, h02, h11, h12, h21, h22 = 0j, 0j, 0j, 0j, 0j, 0j
        for b in range(B):
            for i in range(n):
                j = b * n + i
                s0, s1, s2 = sf[0, j], sf[1, j], sf[2, j]
                u0, u1, u2 = D0 * s0, D1 * s1, D2 * s2
                a00, a01, a02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
                a10, a11, a12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
                a20, a21, a22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
                c00 = a11 * a22 - a12 * a21
                c01 = a12 * a20 - a10 * a22
                c02 = a10 * a21 - a11 * a20
                idet = rcp(a00 * c00 + a01 * c01 + a02 * c02)
                n00, n10, n20 = c00 * idet, c01 * idet, c02 * idet
                n01 = (a02 * a21 - a01 * a22) * idet
                n11 = (a00 * a22 - a02 * a20) * idet
                n21 = (a01 * a20 - a00 * a21) * idet
                n02 = (a01 * a12 - a02 * a11) * idet
                n12 = (a02 * a10 - a00 * a12) * idet
                n22 = (a00 * a11 - a01 * a10) * idet
                y11 = complex(Y[k11, b, x, i], Y[k11, b, Np + x, i]) if k11 >= 0 else 0j
                y12 = complex(Y[k12, b, x, i], Y[k12, b, Np + x, i]) if k12 >= 0 else 0j
                y22 = complex(Y[k22, b, x, i], Y[k22, b, Np + x, i]) if k22 >= 0 else 0j
                # r[a, e] = D1 N[a, 1] Ymat[1, e] + D2 N[a, 2] Ymat[2, e]
                m01, m11, m21 = D1 * n01, D1 * n11, D1 * n21
                m02, m12, m22 = D2 * n02, D2 * n12, D2 * n22
                r01, r02 = m01 * y11 + m02 * y12, m01 * y12 + m02 * y22
                r11, r12 = m11 * y11 + m12 * y12, m11 * y12 + m12 * y22
                r21, r22 = m21 * y11 + m22 * y12, m21 * y12 + m22 * y22
                # s_g Q[e, g], Q = Vhat1 N (rows 1, 2), times D_e
                f1, f2 = D1, D2
                q10 = f1 * (v10 * n00 + v11 * n10 + v12 * n20) * s0
                q11 = f1 * (v10 * n01 + v11 * n11 + v12 * n21) * s1
                q12 = f1 * (v10 * n02 + v11 * n12 + v12 * n22) * s2
                q20 = f2 * (v20 * n00 + v21 * n10 + v22 * n20) * s0
                q21 = f2 * (v20 * n01 + v21 * n11 + v22 * n21) * s1
                q22 = f2 * (v20 * n02 + v21 * n12 + v22 * n22) * s2
                b00 += r01 * q10 + r02 * q20
                b01 += r01 * q11 + r02 * q21
                b02 += r01 * q12 + r02 * q22
                b10 += r11 * q10 + r12 * q20
                b11 += r11 * q11 + r12 * q21
                b12 += r11 * q12 + r12 * q22
                b20 += r21 * q10 + r22 * q20
                b21 += r21 * q11 + r22 * q21
                b22 += r21 * q12 + r22 * q22
                h01 += r01
                h02 += r02
                h11 += r11
                h12 += r12
                h21 += r21
                h22 += r22
        T[x, 0, 0] += b00
        T[x, 0, 1] += b01 - h01
        T[x, 0, 2] += b02 - h02
        T[x, 1, 0] += b10
        T[x, 1, 1] += b11 - h11
        T[x, 1, 2] += b12 - h12
        T[x, 2, 0] += b20
        T[x, 2, 1] += b21 - h21
        T[x, 2, 2] += b22 - h22


@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def first3_block(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wf: np.ndarray, T: np.ndarray,
                 W: np.ndarray) -> None:
    """Kernel: :func:`first3` on one block of directions (``sf``, ``wf``: 3 x n) for the three
    pairs (1, 1), (1, 2), (2, 2) of groups (``Q`` symmetric), adding to ``T``; ``W`` (3, 2N, n)
    gets ``Q[1, 1]``, ``Q[1, 2]``, ``Q[2, 2]`` (real rows, then imaginary), without branches in
    the loop over directions (vectorised). A block's ``W`` stays in cache for its BLAS product."""
    Np = D.shape[0]
    n = sf.shape[1]
    for x in range(Np):
        v00, v01, v02 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 0, 2]
        v10, v11, v12 = vh[x, 1, 0], vh[x, 1, 1], vh[x, 1, 2]
        v20, v21, v22 = vh[x, 2, 0], vh[x, 2, 1], vh[x, 2, 2]
        D0, D1, D2 = D[x, 0], D[x, 1], D[x, 2]
        t00, t01, t02, t10, t11, t12, t20, t21, t22 = 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j
        for j in range(n):
            w0, w1, w2 = wf[0, j], wf[1, j], wf[2, j]
            u0, u1, u2 = D0 * sf[0, j], D1 * sf[1, j], D2 * sf[2, j]
            a00, a01, a02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
            a10, a11, a12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
            a20, a21, a22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
            c00 = a11 * a22 - a12 * a21
            c01 = a12 * a20 - a10 * a22
            c02 = a10 * a21 - a11 * a20
            idet = rcp(a00 * c00 + a01 * c01 + a02 * c02)
            n00, n10, n20 = c00 * idet, c01 * idet, c02 * idet
            n01 = (a02 * a21 - a01 * a22) * idet
            n11 = (a00 * a22 - a02 * a20) * idet
            n21 = (a01 * a20 - a00 * a21) * idet
            n02 = (a01 * a12 - a02 * a11) * idet
            n12 = (a02 * a10 - a00 * a12) * idet
            n22 = (a00 * a11 - a01 * a10) * idet
            t00 += n00 * w0
            t01 += n01 * w1
            t02 += n02 * w2
            t10 += n10 * w0
            t11 += n11 * w1
            t12 += n12 * w2
            t20 += n20 * w0
            t21 += n21 * w1
            t22 += n22 * w2
            q11 = v10 * n01 + v11 * n11 + v12 * n21
            q12 = v10 * n02 + v11 * n12 + v12 * n22
            q22 = v20 * n02 + v21 * n12 + v22 * n22
            W[0, x, j] = q11.real
            W[0, Np + x, j] = q11.imag
            W[1, x, j] = q12.real
            W[1, Np + x, j] = q12.imag
            W[2, x, j] = q22.real
            W[2, Np + x, j] = q22.imag
        T[x, 0, 0] += t00
        T[x, 0, 1] += t01
        T[x, 0, 2] += t02
        T[x, 1, 0] += t10
        T[x, 1, 1] += t11
        T[x, 1, 2] += t12
        T[x, 2, 0] += t20
        T[x, 2, 1] += t21
        T[x, 2, 2] += t22

@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def second3_block(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, Y: np.ndarray,
                  T: np.ndarray, ident: bool) -> None:
    """Kernel: :func:`second3` on one block (``Y`` (3, 2N, n): ``y11``, ``y12``, ``y22`` from
    :func:`first3_block`'s ``W``), adding to ``T``. ``ident`` (every ``s_1, s_2 > 0``): the
    products ``D_e s_g Q[e, g] = (s_g / s_e) (delta_eg - N[e, g])`` from ``U Q = I - N``
    (``U = diag(D s)``, ``Q = Vhat1 N``) instead of the rows ``Vhat1[e] . N[:, g]``."""
    Np = D.shape[0]
    n = sf.shape[1]
    for x in range(Np):
        v00, v01, v02 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 0, 2]
        v10, v11, v12 = vh[x, 1, 0], vh[x, 1, 1], vh[x, 1, 2]
        v20, v21, v22 = vh[x, 2, 0], vh[x, 2, 1], vh[x, 2, 2]
        D0, D1, D2 = D[x, 0], D[x, 1], D[x, 2]
        b00, b01, b02, b10, b11, b12, b20, b21, b22 = 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j, 0j
        h01, h02, h11, h12, h21, h22 = 0j, 0j, 0j, 0j, 0j, 0j
        for j in range(n):
            s0, s1, s2 = sf[0, j], sf[1, j], sf[2, j]
            u0, u1, u2 = D0 * s0, D1 * s1, D2 * s2
            a00, a01, a02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
            a10, a11, a12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
            a20, a21, a22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
            c00 = a11 * a22 - a12 * a21
            c01 = a12 * a20 - a10 * a22
            c02 = a10 * a21 - a11 * a20
            idet = rcp(a00 * c00 + a01 * c01 + a02 * c02)
            n00, n10, n20 = c00 * idet, c01 * idet, c02 * idet
            n01 = (a02 * a21 - a01 * a22) * idet
            n11 = (a00 * a22 - a02 * a20) * idet
            n21 = (a01 * a20 - a00 * a21) * idet
            n02 = (a01 * a12 - a02 * a11) * idet
            n12 = (a02 * a10 - a00 * a12) * idet
            n22 = (a00 * a11 - a01 * a10) * idet
            y11 = complex(Y[0, x, j], Y[0, Np + x, j])
            y12 = complex(Y[1, x, j], Y[1, Np + x, j])
            y22 = complex(Y[2, x, j], Y[2, Np + x, j])
            m01, m11, m21 = D1 * n01, D1 * n11, D1 * n21
            m02, m12, m22 = D2 * n02, D2 * n12, D2 * n22
            r01, r02 = m01 * y11 + m02 * y12, m01 * y12 + m02 * y22
            r11, r12 = m11 * y11 + m12 * y12, m11 * y12 + m12 * y22
            r21, r22 = m21 * y11 + m22 * y12, m21 * y12 + m22 * y22
            if ident:
                i1, i2 = 1.0 / s1, 1.0 / s2
                q10, q11, q12 = -(s0 * i1) * n10, 1.0 - n11, -(s2 * i1) * n12
                q20, q21, q22 = -(s0 * i2) * n20, -(s1 * i2) * n21, 1.0 - n22
            else:
                q10 = D1 * (v10 * n00 + v11 * n10 + v12 * n20) * s0
                q11 = D1 * (v10 * n01 + v11 * n11 + v12 * n21) * s1
                q12 = D1 * (v10 * n02 + v11 * n12 + v12 * n22) * s2
                q20 = D2 * (v20 * n00 + v21 * n10 + v22 * n20) * s0
                q21 = D2 * (v20 * n01 + v21 * n11 + v22 * n21) * s1
                q22 = D2 * (v20 * n02 + v21 * n12 + v22 * n22) * s2
            b00 += r01 * q10 + r02 * q20
            b01 += r01 * q11 + r02 * q21
            b02 += r01 * q12 + r02 * q22
            b10 += r11 * q10 + r12 * q20
            b11 += r11 * q11 + r12 * q21
            b12 += r11 * q12 + r12 * q22
            b20 += r21 * q10 + r22 * q20
            b21 += r21 * q11 + r22 * q21
            b22 += r21 * q12 + r22 * q22
            h01 += r01
            h02 += r02
            h11 += r11
            h12 += r12
            h21 += r21
            h22 += r22
        T[x, 0, 0] += b00
        T[x, 0, 1] += b01 - h01
        T[x, 0, 2] += b02 - h02
        T[x, 1, 0] += b10
        T[x, 1, 1] += b11 - h11
        T[x, 1, 2] += b12 - h12
        T[x, 2, 0] += b20
        T[x, 2, 1] += b21 - h21
        T[x, 2, 2] += b22 - h22
