"""Kernels: the Dyson fixed point of the step's population covariance (docs/DERIVATIONS.md §7,
'The bulk in closed form' and 'A deterministic measure').

C = (I + a M)^2 + bq Q with M = n0^-1 sum_i e_i x_i x_i^T, Q = n0^-1 sum_i e_i^2 x_i x_i^T
(ratio psi = d/n0). For each spectral parameter zeta the bulk block g (2 x 2, complex symmetric)
solves g = (L0 - E_e[Lam^T gamma Lam])^-1, gamma(e) = P (-I - psi Lam g Lam^T P)^-1, and the
forms of R = (C - zeta)^-1 on (theta*, u) follow from the 3 x 3 matrix K of the same section.
Compiled, sequential over zeta with warm starts (neighbouring points of a contour), written out
for the small matrices (the numpy reference is
:func:`asymptotics.measures.population.population_resolvent`).
"""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel


@kernel(cache=True)
def _inv3(A: np.ndarray, out: np.ndarray) -> bool:
    """3 x 3 complex inverse by cofactors; False when singular."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    if det == 0:
        return False
    r = 1.0 / det
    out[0, 0] = c00 * r
    out[1, 0] = c01 * r
    out[2, 0] = c02 * r
    out[0, 1] = (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) * r
    out[1, 1] = (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) * r
    out[2, 1] = (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) * r
    out[0, 2] = (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) * r
    out[1, 2] = (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) * r
    out[2, 2] = (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) * r
    return True


@kernel(cache=True)
def _gammas(g11, g12, g22, e, sb, a, psi, gam, A, Ai):
    """gamma(e_i) (3 x 3) for every node at the bulk block g; False if a block is singular."""
    for i in range(e.shape[0]):
        ei = e[i]
        se = sb * ei
        # S = psi Lam g Lam^T (symmetric), A = -I - S P, P = diag(1, [[0, ae], [ae, 0]])
        s00 = psi * se * se * g11
        s01 = psi * se * g11
        s02 = psi * se * g12
        s11 = psi * g11
        s12 = psi * g12
        s22 = psi * g22
        ae = a * ei
        A[0, 0] = -1.0 - s00
        A[0, 1] = -ae * s02
        A[0, 2] = -ae * s01
        A[1, 0] = -s01
        A[1, 1] = -1.0 - ae * s12
        A[1, 2] = -ae * s11
        A[2, 0] = -s02
        A[2, 1] = -ae * s22
        A[2, 2] = -1.0 - ae * s12
        if not _inv3(A, Ai):
            return False
        for c in range(3):
            gam[i, 0, c] = Ai[0, c]
            gam[i, 1, c] = ae * Ai[2, c]
            gam[i, 2, c] = ae * Ai[1, c]
    return True


@kernel(cache=True)
def _phi(zt, x, out, e, w, sb, a, psi, gam, A, Ai) -> bool:
    """out = Phi(x) = (L0 - E_e[Lam^T gamma Lam])^-1 at the bulk block x = (g11, g12, g22)."""
    if not _gammas(x[0], x[1], x[2], e, sb, a, psi, gam, A, Ai):
        return False
    h00 = 0j
    h01 = 0j
    h11 = 0j
    for i in range(e.shape[0]):
        se = sb * e[i]
        gm = gam[i]
        h00 += w[i] * (se * se * gm[0, 0] + se * (gm[0, 1] + gm[1, 0]) + gm[1, 1])
        h01 += w[i] * (se * gm[0, 2] + gm[1, 2])
        h11 += w[i] * gm[2, 2]
    b00 = -zt - h00
    b01 = 1.0 - h01
    b11 = -1.0 - h11
    dt = b00 * b11 - b01 * b01
    if dt == 0:
        return False
    out[0] = b11 / dt
    out[1] = -b01 / dt
    out[2] = b00 / dt
    return True


@kernel(cache=True)
def _jacobian(zt, x, f, Ji, e, w, sb, a, psi, gam, A, Ai) -> bool:
    """Ji = (I - dPhi/dx)^-1 at x (f = Phi(x)) by forward differences; False if singular."""
    fp = np.empty(3, np.complex128)
    xp = np.empty(3, np.complex128)
    J = np.empty((3, 3), np.complex128)
    for j in range(3):
        h = 1e-7 * (abs(x[j]) + 1e-3)
        for i in range(3):
            xp[i] = x[i]
        xp[j] += h
        if not _phi(zt, xp, fp, e, w, sb, a, psi, gam, A, Ai):
            return False
        for i in range(3):
            J[i, j] = (1.0 if i == j else 0.0) - (fp[i] - f[i]) / h
    return _inv3(J, Ji)


@kernel(cache=True)
def _newton(zt, x, e, w, sb, a, psi, gam, A, Ai, tol, maxiter, damped, Ji, have_j):
    """Solve x = Phi(x) from x by a chord-Newton method: steps x <- x - Ji (x - Phi(x)) with
    the inverse Jacobian ``Ji`` kept from earlier points (``have_j``) and recomputed (forward
    differences) when the residual does not fall by 4x; the damped iteration
    x <- (x + Phi(x))/2 when steps diverge, or from the start with ``damped`` (the iteration
    that finds the physical root from g = L0^-1). Returns (converged, evaluations of Phi,
    whether Ji holds a Jacobian)."""
    f = np.empty(3, np.complex128)
    r = np.empty(3, np.complex128)
    evals = 0
    res_old = np.inf
    fresh = False
    for _ in range(maxiter):
        if not _phi(zt, x, f, e, w, sb, a, psi, gam, A, Ai):
            return False, evals, have_j
        evals += 1
        for i in range(3):
            r[i] = x[i] - f[i]
        res = max(abs(r[0]), abs(r[1]), abs(r[2]))
        if res < tol * (1.0 + abs(x[0])):
            return True, evals, have_j
        if damped:
            for i in range(3):
                x[i] = 0.5 * (x[i] + f[i])
            continue
        if res > 0.25 * res_old or not have_j:
            if fresh and res > res_old:  # a step with a fresh Jacobian diverged
                damped = True
                for i in range(3):
                    x[i] = 0.5 * (x[i] + f[i])
                continue
            if not _jacobian(zt, x, f, Ji, e, w, sb, a, psi, gam, A, Ai):
                damped = True
                continue
            evals += 3
            have_j = True
            fresh = True
        else:
            fresh = False
        res_old = res
        s0 = Ji[0, 0] * r[0] + Ji[0, 1] * r[1] + Ji[0, 2] * r[2]
        s1 = Ji[1, 0] * r[0] + Ji[1, 1] * r[1] + Ji[1, 2] * r[2]
        s2 = Ji[2, 0] * r[0] + Ji[2, 1] * r[1] + Ji[2, 2] * r[2]
        x[0] -= s0
        x[1] -= s1
        x[2] -= s2
    return False, evals, have_j


@kernel(cache=True)
def dyson_forms(
    zeta: np.ndarray, e: np.ndarray, z: np.ndarray, w: np.ndarray, a: float, bq: float,
    psi: float, tol: float, maxiter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel: for each zeta (in order, each started from the previous solution), the bulk
    trace tr(R)/d = g11 and the forms (theta*.R.theta*, theta*.R.u, u.R.u) of
    R = (C - zeta)^-1 (u = n0^-1 sum e_i x_i, not normalised), from the nodes (z_i, e_i) and
    weights w_i (sum 1) of the law of (theta*.x, e). Returns (out (M, 4) complex, iterations
    per point, converged flag per point); unconverged points are NaN."""
    M = zeta.shape[0]
    ne = e.shape[0]
    out = np.empty((M, 4), np.complex128)
    its = np.zeros(M, np.int64)
    ok = np.zeros(M, np.bool_)
    sb = np.sqrt(bq)
    gam = np.empty((ne, 3, 3), np.complex128)
    A = np.empty((3, 3), np.complex128)
    Ai = np.empty((3, 3), np.complex128)
    mu1 = 0.0
    ee2 = 0.0
    for i in range(ne):
        mu1 += w[i] * e[i] * z[i]
        ee2 += w[i] * e[i] * e[i]
    # start: g = L0^-1 = [[-1, -1], [-1, -zeta]]/(zeta - 1) at the first zeta
    x = np.empty(3, np.complex128)
    det = zeta[0] - 1.0
    x[0], x[1], x[2] = -1.0 / det, -1.0 / det, -zeta[0] / det
    xprev = x.copy()
    have_prev = False
    Ji = np.empty((3, 3), np.complex128)
    # flags that are not compile-time constants: _newton then compiles once (bool), not also for
    # Literal[bool](False) / Literal[bool](True)
    have_j = M < 0
    damped = M >= 0
    for m in range(M):
        zt = zeta[m]
        guess = x.copy()
        if have_prev and m < M - 1:  # linear extrapolation along the contour
            for i in range(3):
                guess[i] = 2.0 * x[i] - xprev[i]
        # the first point by the damped iteration from L0^-1 (the physical root), the next ones
        # by Newton from the extrapolated previous solutions (continuation along the contour)
        conv, nev, have_j = _newton(zt, guess, e, w, sb, a, psi, gam, A, Ai, tol, maxiter,
                                    m == 0, Ji, have_j)
        if not conv:  # damped, from the previous solution
            guess = x.copy()
            conv, nev2, have_j = _newton(zt, guess, e, w, sb, a, psi, gam, A, Ai, tol,
                                         maxiter, damped, Ji, have_j)
            nev += nev2
        its[m] = nev
        if not conv or not _gammas(guess[0], guess[1], guess[2], e, sb, a, psi, gam, A,
                                   Ai):
            out[m, :] = np.nan
            continue
        xprev[:] = x
        x[:] = guess
        have_prev = True
        g11, g12 = x[0], x[1]
        # forms: K = K0 - E[X^T gamma X], X = [z Lam, -psi e (Lam g)_{:,0}]
        K = np.zeros((3, 3), np.complex128)
        X = np.zeros((3, 3), np.complex128)
        for i in range(ne):
            se = sb * e[i]
            zi = z[i]
            X[0, 0] = zi * se
            X[1, 0] = zi
            X[2, 1] = zi
            X[0, 2] = -psi * e[i] * se * g11
            X[1, 2] = -psi * e[i] * g11
            X[2, 2] = -psi * e[i] * g12
            gm = gam[i]
            for r in range(3):
                for c in range(3):
                    acc = 0j
                    for p in range(3):
                        xp = X[p, r]
                        if xp == 0:
                            continue
                        for q in range(3):
                            acc += xp * gm[p, q] * X[q, c]
                    K[r, c] -= w[i] * acc
        K[0, 0] += -zt
        K[0, 1] += 1.0
        K[1, 1] += -1.0
        K[0, 2] += mu1
        K[1, 0] += 1.0
        K[2, 0] += mu1
        K[2, 2] += -1.0 - psi * ee2 * g11
        Gf = np.empty((3, 3), np.complex128)
        if not _inv3(K, Gf):
            out[m, :] = np.nan
            continue
        g33 = Gf[2, 2]
        tu = -Gf[0, 2] / g33
        out[m, 0] = g11
        out[m, 1] = Gf[0, 0] - tu * tu * g33
        out[m, 2] = tu
        out[m, 3] = -1.0 / g33 - 1.0
        ok[m] = True
    return out, its, ok


@kernel(cache=True)
def chebyshev_jacobi(mom: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Kernel: the recurrence coefficients (alpha_k, beta_k), k < n, of the orthogonal
    polynomials of a positive measure on [-1, 1] from its Chebyshev moments mom[k] = int T_k,
    k < 2n (modified Chebyshev algorithm, Gautschi 2004, with the monic Chebyshev recurrence
    a_k = 0, b_1 = 1/2, b_k = 1/4). Returns (alpha, beta, m): only the first m are valid; m < n
    where the measure is resolved to rounding (prod_k 4 beta_k < 1e-10: a few atoms) or the
    recurrence breaks down."""
    nn = 2 * n
    nu = np.empty(nn)
    scale = 1.0
    for k in range(nn):
        nu[k] = mom[k] * scale
        if k >= 1:
            scale *= 0.5
    b = np.full(nn, 0.25)
    b[0] = 0.0
    if nn > 1:
        b[1] = 0.5
    alpha = np.zeros(n)
    beta = np.zeros(n)
    alpha[0] = nu[1] / nu[0]
    beta[0] = nu[0]
    prev = np.zeros(nn)
    sig = nu.copy()
    new = np.zeros(nn)
    prod = 1.0
    for k in range(1, n):
        for ll in range(k, nn - k):
            new[ll] = (sig[ll + 1] - alpha[k - 1] * sig[ll] - beta[k - 1] * prev[ll]
                       + b[ll] * sig[ll - 1])
        beta[k] = new[k] / sig[k - 1]
        if not beta[k] > 0.0:
            return alpha, beta, k
        alpha[k] = new[k + 1] / new[k] - sig[k] / sig[k - 1]
        prod *= 4.0 * beta[k]
        if prod < 1e-10 or not np.isfinite(alpha[k]):
            return alpha, beta, k
        for ll in range(nn):
            prev[ll] = sig[ll]
            sig[ll] = new[ll]
            new[ll] = 0.0
    return alpha, beta, n
