"""Pieces of the several-steps mapping's quadrature that need nothing of its package
(docs/THEORY.md §12.4): fused xi sums, erf's closed forms, the weak spike axes' rates and rules.

**Fused sums** of a registered activation over a Gaussian rule in xi.

The steps' xi-moments at a pre-activation ``sc xi + M`` (``asymptotics.multiindex.xi_lines``)
are four sums over the rule's nodes of sigma and sigma' (Stein's form: ``E sigma``,
``E[xi sigma] / sc``, ``E[(xi^2 - 1) sigma] / sc``, ``E sigma'^2``; or, for a narrow bulk,
``E sigma``, ``E sigma'``, ``E[xi sigma']``, ``E sigma'^2``). Here they are one compiled pass per
shift, sigma and sigma' computed once per node from the same formulas as the registered
functions (softplus from one exponential, tanh and 1 - tanh^2): no array of the rule's size per
shift is formed. The sums are the same as numpy's to rounding (the order of the terms).
For ``sigma = k erf(a z + b)`` the four are in closed form (:func:`erf_closed`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import erf, ndtr

from asymptotics.coefficients import step_kernels
from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.quadrature import tail_sums
from asymptotics.core.coldstart import kernel

#: the activations summed here (``kind`` of :func:`xi_sums`); beyond SATURATED softplus is z
#: (below -SATURATED e^z, its derivative too) and beyond 2 TANH_ONE tanh is +-1 in float64
#: (their formulas give exactly that there)
SOFTPLUS, TANH = 0, 1
SATURATED, TANH_ONE = 37.0, 10.0
#: softplus' nodes below -SATURATED - TAIL_CUT are not summed (terms below e^-77 of their weight)
TAIL_CUT = 40.0


@kernel(cache=True, error_model="numpy")
def _fdf(kind: int, z: float) -> tuple[float, float]:
    """Kernel: sigma(z) and sigma'(z) by the registered formulas (module docstring)."""
    if kind == SOFTPLUS:
        if z > SATURATED:  # log1p(e^-z) below half an ulp of z: the same numbers
            return z, 1.0
        if z < -SATURATED:  # e < 2^-53: log1p(e) = e / (1 + e) = e in float64
            f = math.exp(z)
            return f, f
        e = math.exp(-abs(z))
        return math.log1p(e) + max(z, 0.0), (1.0 if z >= 0 else e) / (1.0 + e)
    if abs(z) > 2.0 * TANH_ONE:  # tanh is +-1 to the last bit there
        return (1.0 if z > 0 else -1.0), 0.0
    f = math.tanh(z)
    return f, 1.0 - f * f


@kernel(cache=True, error_model="numpy")
def _first_above(sc: float, M: float, xi: np.ndarray, level: float) -> int:
    """Kernel: the first j with ``sc xi[j] + M > level`` (xi ascending, sc > 0; len(xi) if
    none), the pre-activation computed as the sums compute it (so the same nodes)."""
    lo, hi = 0, xi.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sc * xi[mid] + M > level:
            hi = mid
        else:
            lo = mid + 1
    return lo


@kernel(cache=True, error_model="numpy")
def xi_sums(kind: int, sc: float, M: np.ndarray, xi: np.ndarray, w: np.ndarray,
            small: bool) -> np.ndarray:
    """Kernel: the four sums of the module docstring at every shift ``M`` (n) over the rule
    ``(xi, w)``: Stein's form (``small`` False; sc > 0) or sigma' summed (``small`` True).

    With the nodes ascending (the rules in use), the nodes where sigma is saturated (softplus
    above SATURATED: sigma = z, sigma' = 1; tanh beyond 2 TANH_ONE: +-1, 0, the formulas' own
    values there) are summed in closed form from the rule's (compensated) tail sums of the
    terms' weights (``w``, ``w xi``, ``w xi^2``, ``w (xi^2 - 1)``, ``w (xi^2 - 1) xi``),
    and softplus' nodes below ``-SATURATED - TAIL_CUT`` (each term under e^-77 of the rule's
    weight) are not summed: the same sums to rounding, at a cost set by the nodes within a few
    tens of 0 (not by the rule's size)."""
    n, m = M.shape[0], xi.shape[0]
    a1, a2 = w * xi, w * (xi * xi - 1.0)
    out = np.empty((n, 4))
    ascending = sc > 0
    for j in range(m - 1):
        if not xi[j] < xi[j + 1]:
            ascending = False
    if not ascending:
        for i in range(n):
            s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
            for j in range(m):
                f, d = _fdf(kind, sc * xi[j] + M[i])
                s0 += w[j] * f
                s3 += w[j] * (d * d)
                if small:
                    s1 += w[j] * d
                    s2 += w[j] * xi[j] * d
                else:
                    s1 += a1[j] * f
                    s2 += a2[j] * f
            out[i, 0] = s0
            out[i, 1] = s1 if small else s1 / sc
            out[i, 2] = s2 if small else s2 / sc
            out[i, 3] = s3
        return out
    # the tail sums of the terms' weights w, a1, a1 xi, a2, a2 xi (the closed forms below add
    # no cancellation)
    terms = np.empty((5, m))
    terms[0], terms[1], terms[2], terms[3], terms[4] = w, a1, a1 * xi, a2, a2 * xi
    above, below = tail_sums(terms)
    top = SATURATED if kind == SOFTPLUS else 2.0 * TANH_ONE
    for i in range(n):
        # nodes [lo, hi) by the formulas; hi..: saturated above; ..lo: below (tanh: -1;
        # softplus: e^z < e^-77, not summed)
        hi = _first_above(sc, M[i], xi, top)
        if kind == SOFTPLUS:
            lo = _first_above(sc, M[i], xi, -SATURATED - TAIL_CUT)
            # the formulas' test is z < -SATURATED for the exponential branch: same numbers
            lo = min(lo, hi)
        else:
            lo = min(_first_above(sc, M[i], xi, -2.0 * TANH_ONE - 1e-300), hi)
            # -2 TANH_ONE itself is not beyond: step back over nodes exactly there
            while lo > 0 and not abs(sc * xi[lo - 1] + M[i]) > 2.0 * TANH_ONE:
                lo -= 1
        s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
        for j in range(lo, hi):
            f, d = _fdf(kind, sc * xi[j] + M[i])
            s0 += w[j] * f
            s3 += w[j] * (d * d)
            if small:
                s1 += w[j] * d
                s2 += w[j] * xi[j] * d
            else:
                s1 += a1[j] * f
                s2 += a2[j] * f
        A0, A1, A1x, A2, A2x = above[0, hi], above[1, hi], above[2, hi], above[3, hi], above[4, hi]
        if kind == SOFTPLUS:  # sigma = sc xi + M, sigma' = 1 on the nodes above
            s0 += sc * A1 + M[i] * A0
            s3 += A0
            if small:
                s1 += A0
                s2 += A1
            else:
                s1 += sc * A1x + M[i] * A1
                s2 += sc * A2x + M[i] * A2
        else:  # tanh: +1 above, -1 below, sigma' = 0 on both
            s0 += A0 - below[0, lo]
            if not small:
                s1 += A1 - below[1, lo]
                s2 += A2 - below[3, lo]
        out[i, 0] = s0
        out[i, 1] = s1 if small else s1 / sc
        out[i, 2] = s2 if small else s2 / sc
        out[i, 3] = s3
    return out


@lru_cache(maxsize=64)
def _erf_affine(expression: str | None) -> tuple[float, float, float] | None:
    """``(k, a, b)`` when the expression is ``k erf(a z + b)`` with k, a != 0, else None."""
    if not expression or "erf" not in expression:
        return None
    from asymptotics.coefficients.functions import to_sympy

    try:
        expr, symbols = to_sympy(expression, ("z",))
        z = symbols["z"]
        k, core = expr.as_coeff_Mul()  # sympy writes erf(-x) as -erf(x)
        if core.func.__name__ != "erf" or len(core.args) != 1:
            return None
        arg = core.args[0].as_poly(z)
        if arg is None or arg.degree() != 1:
            return None
        k, a, b = float(k), float(arg.coeff_monomial(z)), float(arg.coeff_monomial(1))
    except Exception:  # noqa: BLE001 (sympy raises many kinds on other expressions)
        return None
    ok = k != 0 and a != 0 and all(math.isfinite(x) for x in (k, a, b))
    return (k, a, b) if ok else None


def erf_affine(sigma: Function) -> tuple[float, float, float] | None:
    """``(k, a, b)`` for sigma = k erf(a z + b) (``erf``, ``erf(z-1)``, ...), else None."""
    if sigma.identity is not None:
        return None
    return _erf_affine(sigma.expression)


def erf_closed(sc: float, M: np.ndarray, k: float, a: float, b: float) -> np.ndarray:
    """:func:`xi_direct`'s columns for sigma = k erf(a z + b) exactly (THEORY.md §12.4): with
    mu = a M + b, s = a sc, E exp(-j (s xi + mu)^2) = exp(-j mu^2 / (1 + 2 j s^2)) /
    sqrt(1 + 2 j s^2), so E sigma = k erf(mu / sqrt(1 + 2 s^2)), E sigma' = k a (2 / sqrt(pi))
    E exp(-(s xi + mu)^2), E[xi sigma'] = sc d/dM E sigma' (Stein), E sigma'^2 = k^2 a^2 (4 / pi)
    E exp(-2 (s xi + mu)^2) (entire functions of M: no rule, no ripples)."""
    return np.column_stack(erf_columns(sc, M, k, a, b))


def erf_columns(sc: float, M: np.ndarray, k: float, a: float, b: float) -> tuple:
    """:func:`erf_closed`'s four columns as arrays (mu = a M + b, d_j = 1 + 2 j (a sc)^2)."""
    mu = a * np.asarray(M, dtype=np.float64) + b
    s2 = (a * sc) ** 2
    d1, d2 = 1.0 + 2.0 * s2, 1.0 + 4.0 * s2
    m1 = (k * a * 2.0 / math.sqrt(math.pi * d1)) * np.exp(-mu * mu / d1)
    v = (k * k * a * a * 4.0 / (math.pi * math.sqrt(d2))) * np.exp(-2.0 * mu * mu / d2)
    return k * erf(mu / math.sqrt(d1)), m1, m1 * (-2.0 * a * sc / d1) * mu, v


def closed_moments(M: np.ndarray, scs: np.ndarray, same_scale: float,
                   ab: tuple[float, float, float] | None) -> tuple[np.ndarray, ...]:
    """``xi_lines.xi_moments`` (F, m1, m2, v), every group closed (scs > 0): relu (``ab`` None)
    or k erf(a z + b) (``ab``; per groups of one bulk as there, into (n, K) without stacking)."""
    if ab is None:
        return relu_moments(M, scs, same_scale)
    n, K = M.shape
    out, done = np.empty((4, n, K)), np.zeros(K, dtype=bool)
    for g in range(K):
        if not done[g]:
            same = [h for h in range(g, K)
                    if not done[h] and abs(scs[h] - scs[g]) <= same_scale * scs[g]]
            done[same] = True
            cols = erf_columns(float(scs[g]), np.concatenate([M[:, h] for h in same]), *ab)
            for i, h in enumerate(same):
                for j in range(4):
                    out[j, :, h] = cols[j][i * n:(i + 1) * n]
    F, m1, m2, Eds2 = out
    return F, m1, m2, np.maximum(Eds2 - m1 * m1, 0.0)




#: from this many values relu's closed forms take step_kernels' compiled passes (same numbers)
FUSED_RELU = 4096


def relu_moments(M: np.ndarray, scs: np.ndarray, same_scale: float) -> tuple[np.ndarray, ...]:
    """``multiindex.xi_lines.xi_moments`` (F, m1, m2, v) for relu with every group in closed
    form (scs > 0): ``relu_closed``'s columns (x = M / sc: F = M Phi + sc phi, m1 = Phi,
    m2 = phi, E sigma'^2 = Phi) for every node and group at once, in place on (n, K) arrays
    (the same operations term by term), groups of one bulk (within ``same_scale``) at the
    first one's scale as there."""
    K = len(scs)
    rep, done = np.array(scs, dtype=np.float64), np.zeros(K, dtype=bool)
    for g in range(K):
        if not done[g]:
            same = [h for h in range(g, K)
                    if not done[h] and abs(scs[h] - scs[g]) <= same_scale * scs[g]]
            done[same] = True
            rep[same] = scs[g]
    if np.size(M) >= FUSED_RELU and (out := step_kernels.relu_moments(M, rep)) is not None:
        return out
    x = np.asarray(M, dtype=np.float64) / rep
    Phi = ndtr(x)
    phi = np.multiply(x, -0.5)
    phi *= x
    np.exp(phi, out=phi)
    phi *= 1.0 / math.sqrt(2.0 * math.pi)
    F = np.multiply(M, Phi)
    F += rep * phi
    v = np.multiply(Phi, Phi, out=x)
    np.subtract(Phi, v, out=v)
    np.maximum(v, 0.0, out=v)
    return F, Phi, phi, v


def relu_rest_sums(a: np.ndarray, b: float, f: np.ndarray, delta: float
                   ) -> tuple[np.ndarray, ...]:
    """``multiindex.graded.relu_rest``'s ``(e0, Phi, e2)`` (x = a / b): e0 = a Phi + b phi - f,
    e2 = (a a + b b) Phi + a b phi - 2 f G0 + f f + delta, the same operations in place."""
    if np.size(a) >= FUSED_RELU and (out := step_kernels.relu_rest(a, b, f, delta)) is not None:
        return out
    x = a / b
    Phi = ndtr(x)
    phi = np.multiply(x, -0.5)
    phi *= x
    np.exp(phi, out=phi)
    phi *= 1.0 / math.sqrt(2.0 * math.pi)
    G0 = np.multiply(a, Phi)
    G0 += np.multiply(phi, b, out=x)
    e2 = np.multiply(a, a)
    e2 += b * b
    e2 *= Phi
    e2 += np.multiply(np.multiply(a, b, out=x), phi, out=x)
    e2 -= np.multiply(np.multiply(f, 2.0, out=x), G0, out=x)
    e2 += np.multiply(f, f, out=x)
    e2 += delta
    return np.subtract(G0, f, out=G0), Phi, e2

#: a spike axis along which every group's shift moves by at most WEAK_B of its bulk's scale per
#: unit (and the target polynomially, or as weakly): Gauss-Hermite instead of the trapezoid
#: rule (weak_axes); WEAK_TOL the accuracy asked of its sub-rule's weak part, WEAK_MAX its most
#: nodes (beyond: the trapezoid rule of step step_rules.H_MAX)
WEAK_B = 0.25
WEAK_TOL = 1e-7


def weak_nodes(b: float, degree: int) -> int:
    """Nodes n of a weak axis' Gauss-Hermite rule (its sub-rule has n / 2 = m): along the axis
    the integrands are polynomials of degree <= 2 degree (at least 2) times functions of ``b u``
    whose Taylor terms of order j are ~ b^j; the sub-rule is exact for all terms of order j <
    J, ``b^J <= WEAK_TOL``: ``2 m - 1 >= 2 degree + J - 1``; the rule of 2 m nodes then misses
    terms of order ~ 2 J only (about the square)."""
    J = 1 if b <= 0 else max(1, math.ceil(math.log(WEAK_TOL) / math.log(b)))
    return 2 * math.ceil((2 * max(degree, 1) + J) / 2)
SEEN = 1e-14  # a target variable loading below this on an axis: not seen there


def weak_rates(Mmat: np.ndarray, c: np.ndarray, Bz: np.ndarray, degree: int | None,
               per: tuple[int | None, ...] | None, beta: np.ndarray | None, smooth: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per spike axis ``(b, degree)`` of ``multiindex.graded.weak_axes``: b the largest rate of a
    group's shift against its bulk's scale ``|M_gi| / sqrt(c_g)`` and of the target's
    non-polynomial variables (tanh, ...: scale 1; relu's target seen by the other axes: the
    smoothed kink's scale |beta|); degree the target's polynomial degree along the axis (-1:
    a variable the target sees through a kink, or of unknown form, moves along it)."""
    r, k = Mmat.shape[1], Bz.shape[1]
    if r == 0 or not np.all(np.asarray(c) > 0):
        return np.full(r, np.inf), np.full(r, -1)
    b = np.max(np.abs(Mmat) / np.sqrt(np.asarray(c, dtype=np.float64))[:, None], axis=0)
    seen = np.abs(Bz) > SEEN
    deg = np.full(r, -1)
    if degree is not None:
        deg[:] = degree
    elif beta is not None:  # relu(z1), its other-axes sums in closed form: scale |beta|
        b = np.maximum(b, np.abs(Bz[:, 0]) / float(np.linalg.norm(beta)))
        deg[:] = 0
    elif smooth:  # a bounded analytic target of z1 (scale 1)
        b = np.maximum(b, np.abs(Bz[:, 0]))
        deg[:] = 0
    elif per is not None and len(per) == k:  # analytic: polynomial in the variables of known degree
        N = [j for j in range(k) if per[j] is None]
        if N:
            b = np.maximum(b, np.max(np.abs(Bz[:, N]), axis=1))
        deg[:] = sum(int(per[j]) for j in range(k) if per[j] is not None)
    else:  # a kink or an unknown form: only the axes the target does not see
        deg[~np.any(seen, axis=1)] = 0
    return b, deg


#: a rotation of the two leading spike axes is taken when it cuts the predicted lattice by this
ROTATE_GAIN = 0.75
ROTATE_ANGLES = 90


def spike_rotation(Mmat: np.ndarray, c_eff: np.ndarray, h0: float, span: float, h_max: float,
                   u_max: float) -> np.ndarray | None:
    """An r x r rotation of the spike axes in the plane of the first two (the two largest
    singular directions of the spikes) whose product lattice of first steps ``2 pi / (span
    sqrt(1 + 4 b_i^2))`` (``b_i = max_g |M_gi| / sqrt(c_eff_g)``, clipped to [h0, h_max]) has
    at most :data:`ROTATE_GAIN` of the nodes of the unrotated one; None otherwise. The rule is
    the same kind on any orthonormal axes (the Gaussian is isotropic, the state basis-free): a
    group steep along a direction between two axes makes both fine, a rotation onto it one.
    Only when both axes are at the default step ``h0`` unrotated (a steep group already on an
    axis is not tilted off it: on one drawn setting that moved the state by 6e-10)."""
    r = Mmat.shape[1]
    if r < 2:
        return None
    sc = np.sqrt(np.asarray(c_eff, dtype=np.float64))[:, None]
    th = np.arange(ROTATE_ANGLES) * (0.5 * math.pi / ROTATE_ANGLES)  # 0 first: unrotated
    cs, sn = np.cos(th)[None, :], np.sin(th)[None, :]
    M0, M1 = Mmat[:, :1] / sc, Mmat[:, 1:2] / sc
    n, h0s = np.ones(len(th)), []
    for col in (M0 * cs + M1 * sn, M1 * cs - M0 * sn):  # the two axes rotated by each angle
        b = np.max(np.abs(col), axis=0)
        h = 2.0 * math.pi / (span * np.sqrt(1.0 + 4.0 * b * b))
        h0s.append(h[0])
        n *= 2.0 * np.floor(u_max / np.clip(h, h0, h_max)) + 1.0
    i = int(np.argmin(n))
    if not n[i] <= ROTATE_GAIN * n[0] or not np.all(np.array(h0s) <= h0):
        return None
    G = np.eye(r)
    G[0, 0], G[0, 1], G[1, 0], G[1, 1] = cs[0, i], -sn[0, i], sn[0, i], cs[0, i]
    return G


@kernel(cache=True, error_model="numpy")
def chebyshev_fit(vals: np.ndarray, T: np.ndarray, checks: np.ndarray, h: float) -> tuple:
    """Kernel: per piece p of half-length h, from the values ``vals`` (pieces, m + checks, q) at
    its m Chebyshev points then at its check points (fractions ``checks`` of h), the Chebyshev
    coefficients ``T @ vals[p, :m]`` (pieces, m, q), the largest |series - value| at the check
    points (pieces, q; the series summed by Clenshaw's recurrence, as
    ``multiindex.xi_lines._clenshaw4`` sums it for a piece at h (2 p + 1)) and the largest
    |value| (pieces, q)."""
    n_p, _, q = vals.shape
    m = T.shape[0]
    coef = np.zeros((n_p, m, q))
    err = np.zeros((n_p, q))
    big = np.zeros((n_p, q))
    for p in range(n_p):
        for j in range(m):
            for k in range(m):
                for c in range(q):
                    coef[p, j, c] += T[j, k] * vals[p, k, c]
        for k in range(vals.shape[1]):
            for c in range(q):
                big[p, c] = max(big[p, c], abs(vals[p, k, c]))
        centre = h * (2.0 * p + 1.0)
        for i in range(checks.shape[0]):
            t = centre + h * checks[i]
            x = min(max((t - (0.0 + h * (2 * p + 1))) / h, -1.0), 1.0)
            x2 = 2.0 * x
            for c in range(q):
                b1, b2 = 0.0, 0.0
                for j in range(m - 1, 0, -1):
                    b1, b2 = coef[p, j, c] + x2 * b1 - b2, b1
                approx = coef[p, 0, c] + x * b1 - b2
                err[p, c] = max(err[p, c], abs(approx - vals[p, m + i, c]))
    return coef, err, big
