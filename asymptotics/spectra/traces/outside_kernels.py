"""Compiled kernels of :class:`asymptotics.spectra.netbulk.OutsideTraces` (docs/THEORY.md
§16.8, docs/DERIVATIONS.md §9.8): the traces ``T = T0 + A + B`` of the bulk outside E at a
batch of complex points, one loop over points and directions with the sums in registers
(written out for K = 1, 2; local arrays for K >= 3, the 3 x 3 inverse by cofactors), and the
V-part's node sums (:func:`vpart_sums`). Between the two trace kernels the products with
``O_b o O_e`` are one BLAS product per block (the caller's). When ``Vhat1`` is symmetric (it is:
an average of ``mub1 mub1^T``), ``Q_i = Vhat1 N_i`` is symmetric too (push-through), so
``Y^{be} = Y^{eb}``: one product serves both ordered pairs of two groups (``both``)."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel
from asymptotics.spectra.traces.outside_scalar import first2, first3, rcp, second2, second3

#: fast math in the loops over directions (reassociated, vectorised sums; complex reciprocals
#: in real arithmetic, without the inf/NaN recovery: a point whose sums overflow is caught by
#: the callers' checks on m, Im m >= 0 and the 10% move from the path's model)
FAST = True


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def ninv(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, j: int, A: np.ndarray,
          out: np.ndarray) -> None:
    """Kernel: ``out = (I + diag(D s_j) Vhat1)^-1`` (K x K, complex) for direction ``j``
    (``A`` scratch): cofactors for K = 3, else Gauss-Jordan with partial pivoting."""
    K = sf.shape[0]
    for a in range(K):
        u = D[a] * sf[a, j]
        for b in range(K):
            A[a, b] = u * vh[a, b] + (1.0 if a == b else 0.0)
    if K == 3:
        c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
        c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
        c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
        idet = rcp(A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02)
        out[0, 0], out[1, 0], out[2, 0] = c00 * idet, c01 * idet, c02 * idet
        out[0, 1] = (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) * idet
        out[1, 1] = (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) * idet
        out[2, 1] = (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) * idet
        out[0, 2] = (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) * idet
        out[1, 2] = (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) * idet
        out[2, 2] = (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) * idet
        return
    for a in range(K):
        for b in range(K):
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
        piv = rcp(A[c, c])
        for j in range(K):
            A[c, j] *= piv
            out[c, j] *= piv
        for r in range(K):
            if r != c:
                f = A[r, c]
                for j in range(K):
                    A[r, j] -= f * A[c, j]
                    out[r, j] -= f * out[c, j]


@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def traces_first(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wf: np.ndarray, n: int,
                 wb: np.ndarray, we: np.ndarray) -> tuple:
    """Kernel: ``T0`` (N x K x K) of :meth:`OutsideTraces.traces` on the directions
    ``sf[g, b n + i]`` (weights times s: ``wf``) and, per pair ``(wb[p], we[p])``,
    ``Q_i[wb, we]`` on every direction as a real array (pairs, B, 2N, n): real parts in rows
    0..N-1, imaginary parts in rows N..2N-1 (one BLAS product with the symmetric
    ``O_b o O_e`` then gives ``Y``)."""
    Np, K = D.shape
    nd = sf.shape[1]
    B = nd // n
    npo = wb.shape[0]
    T = np.zeros((Np, K, K), dtype=np.complex128)
    W = np.empty((npo, B, 2 * Np, n))
    if K == 2 and (npo == 0 or (npo == 1 and wb[0] == 1 and we[0] == 1)):
        first2(vh, D, sf, wf, n, npo, T, W)
        return T, W
    if K == 3:
        first3(vh, D, sf, wf, n, wb, we, T, W)
        return T, W
    if K == 1 and npo == 0:
        for x in range(Np):
            u, t00 = D[x, 0] * vh[x, 0, 0], 0j
            for j in range(nd):
                t00 += wf[0, j] * rcp(1.0 + u * sf[0, j])
            T[x, 0, 0] = t00
        return T, W
    A = np.empty((K, K), dtype=np.complex128)
    Nm = np.empty((K, K), dtype=np.complex128)
    Tl = np.empty((K, K), dtype=np.complex128)
    for x in range(Np):
        Tl[:, :] = 0.0
        for b in range(B):
            for i in range(n):
                j = b * n + i
                ninv(vh[x], D[x], sf, j, A, Nm)
                for a in range(K):
                    for g in range(K):
                        Tl[a, g] += Nm[a, g] * wf[g, j]
                for p in range(npo):
                    q = 0j
                    for c in range(K):
                        q += vh[x, wb[p], c] * Nm[c, we[p]]
                    W[p, b, x, i] = q.real
                    W[p, b, Np + x, i] = q.imag
        for a in range(K):
            for g in range(K):
                T[x, a, g] = Tl[a, g]
    return T, W


@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def traces_second(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, Y: np.ndarray, n: int,
                  wb: np.ndarray, we: np.ndarray, both: bool, T: np.ndarray) -> None:
    """Kernel: adds the second-order terms ``A + B`` of :meth:`OutsideTraces.traces` to ``T``
    from ``Y`` (pairs, B, 2N, n) = ``(O_b o O_e) Q[wb, we]`` (real, imaginary rows); ``both``:
    an off-diagonal pair stands for both of its orders (``Q`` symmetric). Per direction
    ``r[a, e] = sum_b D_b N[a, b] Y^{be}``; then ``B[a, g] += sum_e D_e r[a, e] s_g Q[e, g]``
    and ``A[a, e] -= r[a, e]``: all pairs in one pass over the directions."""
    Np, K = D.shape
    B = Y.shape[1]
    npo = wb.shape[0]
    if K == 2 and npo == 1 and wb[0] == 1 and we[0] == 1:
        second2(vh, D, sf, Y, n, T)
        return
    if K == 3 and both and np.all(wb >= 1) and np.all(we >= 1):
        second3(vh, D, sf, Y, n, wb, we, T)
        return
    col = np.zeros(K, dtype=np.bool_)  # the columns e with a pair (b, e)
    for p in range(npo):
        col[we[p]] = True
        if both:
            col[wb[p]] = True
    A = np.empty((K, K), dtype=np.complex128)
    Nm = np.empty((K, K), dtype=np.complex128)
    Q = np.empty((K, K), dtype=np.complex128)
    r = np.empty((K, K), dtype=np.complex128)
    Bl = np.empty((K, K), dtype=np.complex128)
    Al = np.empty((K, K), dtype=np.complex128)
    for x in range(Np):
        Bl[:, :] = 0.0
        Al[:, :] = 0.0
        for b in range(B):
            for i in range(n):
                j = b * n + i
                ninv(vh[x], D[x], sf, j, A, Nm)
                r[:, :] = 0.0
                for p in range(npo):
                    bb, ee = wb[p], we[p]
                    y = complex(Y[p, b, x, i], Y[p, b, Np + x, i])
                    f = D[x, bb] * y
                    for a in range(K):
                        r[a, ee] += Nm[a, bb] * f
                    if both and bb != ee:
                        f = D[x, ee] * y
                        for a in range(K):
                            r[a, bb] += Nm[a, ee] * f
                for e in range(K):
                    if col[e]:
                        for g in range(K):
                            q = 0j
                            for c in range(K):
                                q += vh[x, e, c] * Nm[c, g]
                            Q[e, g] = q * sf[g, j]
                for a in range(K):
                    for e in range(K):
                        if col[e]:
                            c = D[x, e] * r[a, e]
                            for g in range(K):
                                Bl[a, g] += c * Q[e, g]
                            Al[a, e] += r[a, e]
        for a in range(K):
            for g in range(K):
                T[x, a, g] += Bl[a, g] - Al[a, g]


@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def vpart_sums(x: np.ndarray, pi: np.ndarray, outer: np.ndarray, outer_w: np.ndarray,
               ms2: np.ndarray, ms2_w: np.ndarray, A: float) -> tuple:
    """Kernel: ``(M, v2)`` of :func:`asymptotics.spectra.features.vpart_parts` at the rows of
    ``x = (tau (K), V1 (K^2))``: ``V_j = V1 . outer_j + (pi tau) . ms2_j``, ``M = A sum_j
    w_j outer_j/(1 + V_j)``, ``v2 = A sum_j w_j ms2_j/(1 + V_j)`` (``outer_w``, ``ms2_w``: times
    the weights), one pass over the nodes a point."""
    Np = x.shape[0]
    nodes, K = ms2.shape
    KK = K * K
    M = np.empty((Np, K, K), dtype=np.complex128)
    v2 = np.empty((Np, K), dtype=np.complex128)
    if K == 2:  # outer_01 = outer_10: three sums (M symmetric)
        for p in range(Np):
            t0, t1 = pi[0] * x[p, 0], pi[1] * x[p, 1]
            x00, x01, x11 = x[p, 2], x[p, 3] + x[p, 4], x[p, 5]
            m00, m01, m11, w0, w1 = 0j, 0j, 0j, 0j, 0j
            for j in range(nodes):
                V = (x00 * outer[j, 0] + x01 * outer[j, 1] + x11 * outer[j, 3]
                     + t0 * ms2[j, 0] + t1 * ms2[j, 1])
                iv = rcp(1.0 + V)
                m00 += iv * outer_w[j, 0]
                m01 += iv * outer_w[j, 1]
                m11 += iv * outer_w[j, 3]
                w0 += iv * ms2_w[j, 0]
                w1 += iv * ms2_w[j, 1]
            M[p, 0, 0], M[p, 0, 1], M[p, 1, 0], M[p, 1, 1] = A * m00, A * m01, A * m01, A * m11
            v2[p, 0], v2[p, 1] = A * w0, A * w1
        return M, v2
    if K == 3:  # outer_ab = outer_ba: six sums (M symmetric)
        for p in range(Np):
            t0, t1, t2 = pi[0] * x[p, 0], pi[1] * x[p, 1], pi[2] * x[p, 2]
            x00, x11, x22 = x[p, 3], x[p, 7], x[p, 11]
            x01, x02, x12 = x[p, 4] + x[p, 6], x[p, 5] + x[p, 9], x[p, 8] + x[p, 10]
            m00, m01, m02, m11, m12, m22 = 0j, 0j, 0j, 0j, 0j, 0j
            w0, w1, w2 = 0j, 0j, 0j
            for j in range(nodes):
                V = (x00 * outer[j, 0] + x01 * outer[j, 1] + x02 * outer[j, 2]
                     + x11 * outer[j, 4] + x12 * outer[j, 5] + x22 * outer[j, 8]
                     + t0 * ms2[j, 0] + t1 * ms2[j, 1] + t2 * ms2[j, 2])
                iv = rcp(1.0 + V)
                m00 += iv * outer_w[j, 0]
                m01 += iv * outer_w[j, 1]
                m02 += iv * outer_w[j, 2]
                m11 += iv * outer_w[j, 4]
                m12 += iv * outer_w[j, 5]
                m22 += iv * outer_w[j, 8]
                w0 += iv * ms2_w[j, 0]
                w1 += iv * ms2_w[j, 1]
                w2 += iv * ms2_w[j, 2]
            M[p, 0, 0], M[p, 0, 1], M[p, 0, 2] = A * m00, A * m01, A * m02
            M[p, 1, 0], M[p, 1, 1], M[p, 1, 2] = A * m01, A * m11, A * m12
            M[p, 2, 0], M[p, 2, 1], M[p, 2, 2] = A * m02, A * m12, A * m22
            v2[p, 0], v2[p, 1], v2[p, 2] = A * w0, A * w1, A * w2
        return M, v2
    m = np.empty(KK, dtype=np.complex128)
    w = np.empty(K, dtype=np.complex128)
    t = np.empty(K, dtype=np.complex128)
    for p in range(Np):
        m[:] = 0.0
        w[:] = 0.0
        for g in range(K):
            t[g] = pi[g] * x[p, g]
        for j in range(nodes):
            V = 0j
            for ab in range(KK):
                V += x[p, K + ab] * outer[j, ab]
            for g in range(K):
                V += t[g] * ms2[j, g]
            iv = rcp(1.0 + V)
            for ab in range(KK):
                m[ab] += iv * outer_w[j, ab]
            for g in range(K):
                w[g] += iv * ms2_w[j, g]
        for a in range(K):
            v2[p, a] = A * w[a]
            for b in range(K):
                M[p, a, b] = A * m[a * K + b]
    return M, v2


@kernel(cache=True, error_model="numpy", fastmath=FAST, nogil=True)
def vpart_sums_t(x: np.ndarray, pi: np.ndarray, G: np.ndarray, Gw: np.ndarray,
                 A: float) -> tuple:
    """Kernel: :func:`vpart_sums` for K = 2, 3 on the distinct features laid out by feature
    (``G`` (K + P, nodes): ``ms2`` then ``mub1_a mub1_b`` for a <= b, as
    :func:`asymptotics.spectra.traces.net_jacobian.node_tables`; ``Gw`` times the weights), in
    real arithmetic: the loop over the nodes runs in vector registers."""
    Np = x.shape[0]
    nodes = G.shape[1]
    K = 3 if G.shape[0] == 9 else 2
    M = np.empty((Np, K, K), dtype=np.complex128)
    v2 = np.empty((Np, K), dtype=np.complex128)
    for p in range(Np):
        if K == 3:
            c0, c1, c2 = pi[0] * x[p, 0], pi[1] * x[p, 1], pi[2] * x[p, 2]
            c3, c4, c5 = x[p, 3], x[p, 4] + x[p, 6], x[p, 5] + x[p, 9]
            c6, c7, c8 = x[p, 7], x[p, 8] + x[p, 10], x[p, 11]
        else:
            c0, c1 = pi[0] * x[p, 0], pi[1] * x[p, 1]
            c2, c3, c4 = x[p, 2], x[p, 3] + x[p, 4], x[p, 5]
            c5 = c6 = c7 = c8 = 0j
        r0, r1, r2, r3, r4 = c0.real, c1.real, c2.real, c3.real, c4.real
        r5, r6, r7, r8 = c5.real, c6.real, c7.real, c8.real
        i0, i1, i2, i3, i4 = c0.imag, c1.imag, c2.imag, c3.imag, c4.imag
        i5, i6, i7, i8 = c5.imag, c6.imag, c7.imag, c8.imag
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = 0.0
        b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = 0.0
        if K == 3:
            for j in range(nodes):
                g0, g1, g2, g3, g4 = G[0, j], G[1, j], G[2, j], G[3, j], G[4, j]
                g5, g6, g7, g8 = G[5, j], G[6, j], G[7, j], G[8, j]
                vr = (1.0 + r0 * g0 + r1 * g1 + r2 * g2 + r3 * g3 + r4 * g4 + r5 * g5
                      + r6 * g6 + r7 * g7 + r8 * g8)
                vi = (i0 * g0 + i1 * g1 + i2 * g2 + i3 * g3 + i4 * g4 + i5 * g5 + i6 * g6
                      + i7 * g7 + i8 * g8)
                s = 1.0 / (vr * vr + vi * vi)
                ur, ui = vr * s, -vi * s
                a0 += ur * Gw[0, j]
                b0 += ui * Gw[0, j]
                a1 += ur * Gw[1, j]
                b1 += ui * Gw[1, j]
                a2 += ur * Gw[2, j]
                b2 += ui * Gw[2, j]
                a3 += ur * Gw[3, j]
                b3 += ui * Gw[3, j]
                a4 += ur * Gw[4, j]
                b4 += ui * Gw[4, j]
                a5 += ur * Gw[5, j]
                b5 += ui * Gw[5, j]
                a6 += ur * Gw[6, j]
                b6 += ui * Gw[6, j]
                a7 += ur * Gw[7, j]
                b7 += ui * Gw[7, j]
                a8 += ur * Gw[8, j]
                b8 += ui * Gw[8, j]
            v2[p, 0], v2[p, 1], v2[p, 2] = A * (a0 + 1j * b0), A * (a1 + 1j * b1), \
                A * (a2 + 1j * b2)
            m00, m01, m02 = A * (a3 + 1j * b3), A * (a4 + 1j * b4), A * (a5 + 1j * b5)
            m11, m12, m22 = A * (a6 + 1j * b6), A * (a7 + 1j * b7), A * (a8 + 1j * b8)
            M[p, 0, 0], M[p, 0, 1], M[p, 0, 2] = m00, m01, m02
            M[p, 1, 0], M[p, 1, 1], M[p, 1, 2] = m01, m11, m12
            M[p, 2, 0], M[p, 2, 1], M[p, 2, 2] = m02, m12, m22
        else:
            for j in range(nodes):
                g0, g1, g2, g3, g4 = G[0, j], G[1, j], G[2, j], G[3, j], G[4, j]
                vr = 1.0 + r0 * g0 + r1 * g1 + r2 * g2 + r3 * g3 + r4 * g4
                vi = i0 * g0 + i1 * g1 + i2 * g2 + i3 * g3 + i4 * g4
                s = 1.0 / (vr * vr + vi * vi)
                ur, ui = vr * s, -vi * s
                a0 += ur * Gw[0, j]
                b0 += ui * Gw[0, j]
                a1 += ur * Gw[1, j]
                b1 += ui * Gw[1, j]
                a2 += ur * Gw[2, j]
                b2 += ui * Gw[2, j]
                a3 += ur * Gw[3, j]
                b3 += ui * Gw[3, j]
                a4 += ur * Gw[4, j]
                b4 += ui * Gw[4, j]
            v2[p, 0], v2[p, 1] = A * (a0 + 1j * b0), A * (a1 + 1j * b1)
            m00, m01, m11 = A * (a2 + 1j * b2), A * (a3 + 1j * b3), A * (a4 + 1j * b4)
            M[p, 0, 0], M[p, 0, 1], M[p, 1, 0], M[p, 1, 1] = m00, m01, m01, m11
    return M, v2


def compiled(disp, args: tuple) -> bool:
    """Whether ``disp(*args)`` runs compiled (numba has it, or its on-disk cache does)."""
    if not hasattr(disp, "overloads") or disp.overloads or coldstart.mode() == "compile":
        return True
    try:
        return coldstart.is_cached(disp, coldstart.signature(disp, args))
    except Exception:  # noqa: BLE001 (numba decides)
        return True
