"""Compiled kernels of the sRF features' V-part at complex lam = -z (docs/THEORY.md §16.1,
:func:`asymptotics.spectra.features.features_solver`): the residual of the unknowns
``x = (tau (K), V1 (K^2))`` and its exact Jacobian, one loop over the kappa nodes a point.

The nodes enter through ``V_j = c . b_j`` with the basis ``b_j = (mub1_a mub1_b (a <= b),
mus2_g)`` (nb = K(K+1)/2 + K entries) and the coefficients ``c = (V1_ab + V1_ba (a < b),
V1_aa, pi_g tau_g)``; with ``iv_j = 1/(1 + V_j)`` the sums ``S = A sum_j w_j iv_j b_j`` give
``M`` and ``v2``, and ``G = A sum_j w_j iv_j^2 b_j b_j^T`` their derivatives (``dS = -G dc``).
Per point ``R = (I + D M)^-1`` (Gauss-Jordan, partial pivoting), ``D = diag(beta pi tau)``:
    e1_g = tau_g (-z + v2_g + [M R]_gg) - 1,   e2 = V1 - R D/beta,
    dR = -R (dD M + D dM) R,   d[M R] = dM R + M dR.
The columns of ``V1_ab`` and ``V1_ba`` differ by the identity in e2 only (:func:`_columns`)."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.spectra.traces.outside_scalar import rcp

#: fast math in the node loops (as :data:`asymptotics.spectra.traces.outside_kernels.FAST`)
FAST = True
#: the Broyden loop's flags: fast math but for the inf/NaN assumptions (its steps test finiteness)
SAFE = {"nsz", "arcp", "contract", "afn", "reassoc"}


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _gauss_inv(A: np.ndarray, out: np.ndarray) -> None:
    """Kernel: ``out = A^-1`` (K x K complex) by Gauss-Jordan with partial pivoting (``A`` is
    overwritten)."""
    K = A.shape[0]
    for a in range(K):
        for b in range(K):
            out[a, b] = 1.0 if a == b else 0.0
    for c in range(K):
        p = c  # the pivot: largest |A[r, c]|^2 (no square roots)
        big = A[c, c].real * A[c, c].real + A[c, c].imag * A[c, c].imag
        for r in range(c + 1, K):
            m = A[r, c].real * A[r, c].real + A[r, c].imag * A[r, c].imag
            if m > big:
                p, big = r, m
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


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _coefficients(x: np.ndarray, p: int, pi: np.ndarray, sym: np.ndarray, c: np.ndarray) -> None:
    """Kernel: ``c`` (nb) of the point ``p``: ``V1_ab + V1_ba`` (a < b), ``V1_aa``, ``pi tau``."""
    K = pi.shape[0]
    for a in range(K):
        for b in range(a, K):
            k = sym[a, b]
            c[k] = x[p, K + a * K + b] + (x[p, K + b * K + a] if b != a else 0.0)
    ns = K * (K + 1) // 2
    for g in range(K):
        c[ns + g] = pi[g] * x[p, g]


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _point(x: np.ndarray, z: np.ndarray, p: int, pi: np.ndarray, beta: float,
           sym: np.ndarray, S: np.ndarray, M: np.ndarray, R: np.ndarray, Km: np.ndarray,
           W: np.ndarray, F: np.ndarray) -> None:
    """Kernel: from the sums ``S`` (times A) of the point ``p``: ``M``, ``R``, ``M R`` and the
    residual row ``F[p]`` (``W`` scratch)."""
    K = pi.shape[0]
    ns = K * (K + 1) // 2
    for a in range(K):
        for b in range(K):
            M[a, b] = S[sym[a, b]]
    for a in range(K):
        Da = beta * pi[a] * x[p, a]
        for b in range(K):
            W[a, b] = Da * M[a, b] + (1.0 if a == b else 0.0)
    _gauss_inv(W, R)
    for a in range(K):
        for b in range(K):
            s = 0j
            for e in range(K):
                s += M[a, e] * R[e, b]
            Km[a, b] = s
    for g in range(K):
        F[p, g] = x[p, g] * (-z[p] + S[ns + g] + Km[g, g]) - 1.0
    for a in range(K):
        for b in range(K):
            F[p, K + a * K + b] = x[p, K + a * K + b] - R[a, b] * pi[b] * x[p, b]


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _sums(c: np.ndarray, basT: np.ndarray, w: np.ndarray, A: float, ar: np.ndarray,
          ai: np.ndarray, br: np.ndarray, bi: np.ndarray, S: np.ndarray, prodT: np.ndarray,
          npairs: int, G: np.ndarray, pk: np.ndarray, pm: np.ndarray) -> None:
    """Kernel: the node sums of one point with coefficients ``c``: ``S = A sum_j w_j iv_j b_j``
    and, for the first ``npairs`` rows of ``prodT`` (the pairs ``(pk, pm)`` of basis entries,
    ``b_k b_m`` on the nodes), ``G[k, m] = A sum_j w_j iv_j^2 b_k b_m``; real and imaginary
    parts apart (``ar``, ``ai``, ``br``, ``bi``: scratch on the nodes): the sums vectorise."""
    nb, nodes = basT.shape
    for j in range(nodes):
        ar[j] = 1.0
        ai[j] = 0.0
    for k in range(nb):
        cr, ci = c[k].real, c[k].imag
        for j in range(nodes):
            ar[j] += cr * basT[k, j]
            ai[j] += ci * basT[k, j]
    for j in range(nodes):  # w/(1 + V), then w/(1 + V)^2 in (br, bi)
        m = 1.0 / (ar[j] * ar[j] + ai[j] * ai[j])
        rr, ri = ar[j] * m, -ai[j] * m
        ar[j], ai[j] = w[j] * rr, w[j] * ri
        br[j], bi[j] = ar[j] * rr - ai[j] * ri, ar[j] * ri + ai[j] * rr
    for k in range(nb):
        sr, si = 0.0, 0.0
        for j in range(nodes):
            sr += basT[k, j] * ar[j]
            si += basT[k, j] * ai[j]
        S[k] = complex(A * sr, A * si)
    for t in range(npairs):
        sr, si = 0.0, 0.0
        for j in range(nodes):
            sr += prodT[t, j] * br[j]
            si += prodT[t, j] * bi[j]
        G[pk[t], pm[t]] = G[pm[t], pk[t]] = complex(A * sr, A * si)


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _columns(x: np.ndarray, z: np.ndarray, p: int, pi: np.ndarray, beta: float,
             sym: np.ndarray, S: np.ndarray, G: np.ndarray, mats: np.ndarray,
             vec: np.ndarray, ws: np.ndarray, J: np.ndarray) -> None:
    """Kernel: the Jacobian ``J[p]`` of the point ``p`` from its sums ``S``, ``G`` and
    ``mats[0:3] = (M, R, M R)`` of :func:`_point`. With ``P = R D``, ``T = I - (M R) D``:
    d[M R] = T dM R - (M R) dD (M R),  -(dR D + R dD)/beta = P dM P/beta + R dD ((M R) D - I)/beta,
    the products with ``dM`` (symmetric) folded once a point into the pair basis (``ws``: rows
    ``g`` the diagonal ``[T dM R]_gg``, rows ``K + a K + b`` the entry ``[P dM P]_ab``);
    ``mats[3:5]``, ``vec``: scratch."""
    K = pi.shape[0]
    q = x.shape[1]
    ns = K * (K + 1) // 2
    R, Km, T, P = mats[1], mats[2], mats[3], mats[4]
    dm, D = vec[1], vec[3]
    for g in range(K):
        D[g] = beta * pi[g] * x[p, g]
    for a in range(K):
        for b in range(K):
            T[a, b] = (1.0 if a == b else 0.0) - Km[a, b] * D[b]
            P[a, b] = R[a, b] * D[b]
    for r in range(K + K * K):
        for k in range(ns):
            ws[r, k] = 0.0
    for e in range(K):
        for f in range(K):
            k = sym[e, f]
            for g in range(K):
                ws[g, k] += T[g, e] * R[f, g]
            for a in range(K):
                for b in range(K):
                    ws[K + a * K + b, k] += P[a, e] * P[f, b]
    for r in range(q):
        for col in range(q):
            J[p, r, col] = 0.0
    # the columns: tau_h (h < K), then the pairs a <= b (V1_ab; V1_ba copied)
    for col in range(K + ns):
        # dc: pi_h at basis entry ns + h (tau_h), or 1 at the pair's entry: dS = -G dc
        lc, fc = (ns + col, pi[col]) if col < K else (col - K, 1.0)
        for k in range(ns):
            dm[k] = -fc * G[k, lc]
        jc = col  # the column's index in J (tau_h; or V1_ab with a <= b)
        if col >= K:
            for a in range(K):
                for b in range(a, K):
                    if sym[a, b] == col - K:
                        jc = K + a * K + b
        for g in range(K):
            s = -fc * G[ns + g, lc]
            for k in range(ns):
                s += ws[g, k] * dm[k]
            if col < K:
                s -= beta * pi[col] * Km[g, col] * Km[col, g]
            v = x[p, g] * s
            if col == g:
                v += -z[p] + S[ns + g] + Km[g, g]
            J[p, g, jc] = v
        for a in range(K):
            for b in range(K):
                r = K + a * K + b
                s = 0j
                for k in range(ns):
                    s += ws[r, k] * dm[k]
                s /= beta
                if col < K:
                    s += pi[col] * R[a, col] * (Km[col, b] * D[b] - (1.0 if b == col else 0.0))
                J[p, r, jc] = s
        if col >= K:
            a, b = divmod(jc - K, K)
            J[p, jc, jc] += 1.0
            if a != b:  # V1_ba: the same column but for e2's identity
                jt = K + b * K + a
                for r in range(q):
                    J[p, r, jt] = J[p, r, jc]
                J[p, jc, jt] -= 1.0
                J[p, jt, jt] += 1.0


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _row(x: np.ndarray, z: np.ndarray, p: int, pi: np.ndarray, beta: float, A: float,
         basT: np.ndarray, w: np.ndarray, sym: np.ndarray, prodT: np.ndarray, pk: np.ndarray,
         pm: np.ndarray, jac: bool, c: np.ndarray, S: np.ndarray, G: np.ndarray,
         rs: np.ndarray, mats: np.ndarray, vec: np.ndarray, ws: np.ndarray, F: np.ndarray,
         J: np.ndarray) -> None:
    """Kernel: the residual ``F[p]`` of the point ``p`` and, with ``jac``, its Jacobian
    ``J[p]`` (``c``, ``S``, ``G``, ``rs``, ``mats``, ``vec``, ``ws``: scratch)."""
    _coefficients(x, p, pi, sym, c)
    _sums(c, basT, w, A, rs[0], rs[1], rs[2], rs[3], S, prodT,
          prodT.shape[0] if jac else 0, G, pk, pm)
    _point(x, z, p, pi, beta, sym, S, mats[0], mats[1], mats[2], mats[3], F)
    if jac:
        _columns(x, z, p, pi, beta, sym, S, G, mats, vec, ws, J)


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def _scratch(K: int, nb: int, nodes: int) -> tuple:
    """Kernel: the scratch arrays of :func:`_row`."""
    return (np.empty(nb, dtype=np.complex128), np.empty(nb, dtype=np.complex128),
            np.empty((nb, nb), dtype=np.complex128), np.empty((4, nodes)),
            np.empty((7, K, K), dtype=np.complex128), np.empty((4, nb), dtype=np.complex128),
            np.empty((K + K * K, K * (K + 1) // 2), dtype=np.complex128))


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def srf_residual(x: np.ndarray, z: np.ndarray, pi: np.ndarray, beta: float, A: float,
                 basT: np.ndarray, w: np.ndarray, sym: np.ndarray, prodT: np.ndarray,
                 pk: np.ndarray, pm: np.ndarray) -> np.ndarray:
    """Kernel: the residual (N, K + K^2) of the V-part at the rows of ``x`` and points ``z``
    (module docstring); ``basT`` (nb, nodes) the basis, ``w`` the nodes' weights, ``sym[a, b]``
    the basis index of the pair (a, b); ``prodT`` (pairs, nodes) the products ``b_pk b_pm``
    of the basis on the nodes (pk <= pm; the Jacobian's)."""
    Np, q = x.shape
    nb, nodes = basT.shape
    F = np.empty((Np, q), dtype=np.complex128)
    J = np.empty((1, 1, 1), dtype=np.complex128)
    c, S, G, rs, mats, vec, ws = _scratch(pi.shape[0], nb, nodes)
    for p in range(Np):
        _row(x, z, p, pi, beta, A, basT, w, sym, prodT, pk, pm, np.bool_(False), c, S, G, rs,
             mats, vec, ws, F, J)
    return F


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def srf_jacobian(x: np.ndarray, z: np.ndarray, pi: np.ndarray, beta: float, A: float,
                 basT: np.ndarray, w: np.ndarray, sym: np.ndarray, prodT: np.ndarray,
                 pk: np.ndarray, pm: np.ndarray) -> tuple:
    """Kernel: ``(F, J)``: the residual of :func:`srf_residual` and its exact Jacobian
    (N, q, q) in ``x`` (module docstring), one pass over the nodes a point."""
    Np, q = x.shape
    nb, nodes = basT.shape
    F = np.empty((Np, q), dtype=np.complex128)
    J = np.empty((Np, q, q), dtype=np.complex128)
    c, S, G, rs, mats, vec, ws = _scratch(pi.shape[0], nb, nodes)
    for p in range(Np):
        _row(x, z, p, pi, beta, A, basT, w, sym, prodT, pk, pm, np.bool_(True), c, S, G, rs,
             mats, vec, ws, F, J)
    return F, J


@kernel(cache=True, error_model="numpy", fastmath=SAFE)
def srf_broyden(x: np.ndarray, z: np.ndarray, tol: float, steps: int, pi: np.ndarray,
                beta: float, A: float, basT: np.ndarray, w: np.ndarray, sym: np.ndarray,
                prodT: np.ndarray, pk: np.ndarray, pm: np.ndarray) -> tuple:
    """Kernel: :meth:`asymptotics.spectra.law.Solver._broyden` point by point (the same steps:
    the inverse Jacobian at ``x`` (here exact), then at most ``steps`` rank-one updates
    of it, one residual a step, until the relative step ``max|dx|/(1 + max|x|) < tol``; a
    step not finite stops the point unconverged): ``(x, ok, H)``."""
    Np, q = x.shape
    nb, nodes = basT.shape
    xo = x.copy()
    ok = np.zeros(Np, dtype=np.bool_)
    Hall = np.empty((Np, q, q), dtype=np.complex128)
    c, S, G, rs, mats, vec, ws = _scratch(pi.shape[0], nb, nodes)
    xr = np.empty((1, q), dtype=np.complex128)
    zr = np.empty(1, dtype=np.complex128)
    F = np.empty((1, q), dtype=np.complex128)
    Fn = np.empty((1, q), dtype=np.complex128)
    J = np.empty((1, q, q), dtype=np.complex128)
    H = np.empty((q, q), dtype=np.complex128)
    dx = np.empty(q, dtype=np.complex128)
    Hy = np.empty(q, dtype=np.complex128)
    sH = np.empty(q, dtype=np.complex128)
    p0 = np.int64(0)  # (a plain int64, as np.bool_ for jac: _row compiles once, not per literal)
    for p in range(Np):
        for i in range(q):
            xr[0, i] = x[p, i]
        zr[0] = z[p]
        _row(xr, zr, p0, pi, beta, A, basT, w, sym, prodT, pk, pm, np.bool_(True), c, S, G, rs,
             mats, vec, ws, F, J)
        _gauss_inv(J[0], H)
        for _ in range(steps):
            bad = False
            for i in range(q):
                s = 0j
                for j in range(q):
                    s -= H[i, j] * F[0, j]
                dx[i] = s
                if not (np.isfinite(s.real) and np.isfinite(s.imag)):
                    bad = True
            big_dx, big_x = 0.0, 0.0
            if not bad:
                for i in range(q):
                    xr[0, i] += dx[i]
                    big_dx = max(big_dx, abs(dx[i]))
                    big_x = max(big_x, abs(xr[0, i]))
            for i in range(q):
                for j in range(q):
                    Hall[p, i, j] = H[i, j]
            if bad:
                break
            if big_dx / (1.0 + big_x) < tol:
                ok[p] = True
                break
            _row(xr, zr, p0, pi, beta, A, basT, w, sym, prodT, pk, pm, np.bool_(False), c, S, G,
                 rs, mats, vec, ws, Fn, J)
            den = 0j
            fin = True
            for i in range(q):
                s = 0j
                for j in range(q):
                    s += H[i, j] * (Fn[0, j] - F[0, j])
                Hy[i] = s
                den += dx[i] * s
                if not (np.isfinite(Fn[0, i].real) and np.isfinite(Fn[0, i].imag)):
                    fin = False
            if fin and np.isfinite(den.real) and np.isfinite(den.imag) and abs(den) > 1e-300:
                for j in range(q):
                    s = 0j
                    for i in range(q):
                        s += dx[i] * H[i, j]
                    sH[j] = s
                iden = 1.0 / den
                for i in range(q):
                    f = (dx[i] - Hy[i]) * iden
                    for j in range(q):
                        H[i, j] += f * sH[j]
            for i in range(q):
                F[0, i] = Fn[0, i]
        for i in range(q):
            xo[p, i] = xr[0, i]
    return xo, ok, Hall
