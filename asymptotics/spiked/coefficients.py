"""Quadrature tables of the K-group, r-spike theory (docs/THEORY.md §10.2): the cGET
coefficients of each group on r-dimensional kappa nodes and the target's conditional moments.

For group g and a node kappa (xi ~ N(0, 1)), with t = u_g . kappa:
    mu0_g = E sigma(t + sqrt(c_g) xi),  mub1_g = E[xi sigma(t + sqrt(c_g) xi)]  (not / sqrt c),
    mus2_g = E sigma(t + sqrt(c_g) xi)^2 - mu0_g^2 - mub1_g^2,
and for the target, with z_j = Gamma_j . kappa + rho_j omega_j, omega ~ N(0, I_k):
    h = E g(z),  h1_j = E[omega_j g(z)],  h2 = E g(z)^2.
The kappa rule is a tensor Gauss-Hermite rule pruned of negligible weights; for r = 1 it is the
rule of the one-spike theory (``asymptotics.coefficients.cget``), split at the target's kinks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from asymptotics.coefficients.functions import Function, get_function, to_sympy
from asymptotics.coefficients.gauss_rules import (  # noqa: F401 (the tensor rules' names here)
    MAX_TENSOR_NODES,
    PRUNE,
    legendre,
    tensor_keep,
    tensor_rule,
)
from asymptotics.coefficients.line_moments import (
    GAIN,
    direct_moments,
    line_moments,
    on_line,
    rows_moments,
)
from asymptotics.coefficients.line_moments import relu_moments as _relu_moments
from asymptotics.coefficients.quadrature import (
    HALF_WIDTH,
    N_PIECE,
    N_SMOOTH,
    antisymmetric,
    gauss_hermite,
    grid_moments,
    mirror_pairs,
    mirror_rows,
)
from asymptotics.core import group_checks
from asymptotics.core.coldstart import kernel

#: shifts per block of :func:`_smooth_moments` (1024 x 96 values stay in the core's cache; a rule
#: of n < 96 nodes, e.g. a polynomial target's, takes SHIFT_BLOCK * (96 // n) shifts a block)
SHIFT_BLOCK = 1024
#: the target's values per block of kappa nodes in :func:`target_tables` (~1 MB temporaries,
#: in the core's cache; 2e6 took up to twice the time on a rotated target's 256 omega nodes)
TARGET_CHUNK = 131_072
#: default Gauss-Hermite nodes per unlearned target dimension (k' = 1, 2, 3, >= 4)
OMEGA_NODES = {1: 40, 2: 16, 3: 10}
#: inner rule for the feature coefficients when r >= 2 (r = 1 keeps the one-spike rule, 180)
INNER_NODES = dict(n_smooth=96, n_piece=40)
#: ``line_moments.on_line``'s gain in :func:`build_tables` (r >= 2): the ladder's next rule (1.7
#: to 3 times the shifts) reuses the pieces: built if they cost < 5 times the shifts' moments
LADDER_GAIN = 5.0
#: a tanh, erf or softplus line on ``on_line``'s mirrored points, each pair (p, -p) evaluated once
#: (the points an ulp from the plain line's: numbers within ~1e-15; False: the plain line, bit for
#: bit)
MIRROR = True
#: r >= 2, an odd sigma (tanh, erf), a centrally symmetric kappa rule (node n - 1 - j at -kappa_j):
#: the feature tables' line moments at the first half of the nodes, the rest by parity
#: (:func:`odd_sigma`; tables exactly symmetric, which ``spiked.anderson.solve_point`` sums over
#: half the nodes; False: every node's own moments, within ~1e-13 of these)
MIRROR_TABLES = True


@dataclass(frozen=True)
class Tables:
    """Everything the kernels need on the kappa nodes (arrays C-contiguous, float64)."""

    kappa: np.ndarray  # (n, r)
    weights: np.ndarray  # (n,), sum 1
    mu0: np.ndarray  # (n, K)
    mub1: np.ndarray  # (n, K)
    mus2: np.ndarray  # (n, K)
    h: np.ndarray  # (n,)
    h1: np.ndarray  # (n, k)
    h2: np.ndarray  # (n,)


def flush(values: np.ndarray, scale: float, rel: float = 1e-12) -> np.ndarray:
    """Exact zeros for round-off (as ``asymptotics.coefficients.cget``): empty channels stay
    exactly empty."""
    out = np.array(values, dtype=np.float64)
    if out.size and np.max(np.abs(out)) <= rel * scale:
        out[...] = 0.0
    else:
        out[np.abs(out) <= 1e-15 * scale] = 0.0
    return out


#: |z| at and beyond which scipy's erf is exactly +-1 (1 - erfc(z) with erfc(6) = 2.2e-17, below
#: half an ulp of 1; it first rounds to 1 at z = 5.92)
ERF_SATURATION = 6.0


def _erf(z: np.ndarray) -> np.ndarray:
    """scipy's erf, bit for bit, evaluated only where |z| < :data:`ERF_SATURATION`."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim == 0:
        return special.erf(z)
    out = np.sign(z)
    band = np.abs(z) < ERF_SATURATION
    out[band] = special.erf(z[band])
    return out


def _softplus(z: np.ndarray) -> np.ndarray:
    """log(1 + e^z) as max(z, 0) + log1p(exp(-|z|)) with numpy's vectorised exp and log1p
    (numpy's logaddexp(0, z) calls the C library's per element: within 3 ulps of it)."""
    z = np.asarray(z, dtype=np.float64)
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


#: below this x (2^-54) log1p(x) is x itself (:func:`_values_into` skips it there)
LOG1P_EXACT = 2.0**-54

_FAST = {"erf": _erf, "softplus": _softplus}
_FAST_FUNCTIONS: dict[str, Function] = {}


def fast(fn: Function) -> Function:
    """``fn`` with a cheaper evaluation of the same numbers (the registered erf bit for bit, the
    registered softplus to 3 ulps, an expression erf(a z + b) by :func:`_affine_erf` bit for
    bit; tests/test_kgroup_kernels.py compares them); other functions as given."""
    if fn.identity is None and fn.name == fn.expression and fn.name not in _FAST:  # (parsed)
        out = _AFFINE_ERF.setdefault(fn.expression, _affine_erf(fn.expression)) \
            if fn.expression not in _AFFINE_ERF else _AFFINE_ERF[fn.expression]
        return out if out is not None and out == fn and fn.f is get_function(fn.name).f else fn
    if fn.identity is not None or fn.name not in _FAST:
        return fn
    if fn.name not in _FAST_FUNCTIONS:
        _FAST_FUNCTIONS[fn.name] = replace(get_function(fn.name), f=_FAST[fn.name])
    out = _FAST_FUNCTIONS[fn.name]
    return out if out == fn and fn.f is get_function(fn.name).f else fn


_AFFINE_ERF: dict[str, Function | None] = {}  # (by expression: :func:`_affine_erf`)


def _affine_erf(text: str) -> Function | None:
    """The expression ``text`` = erf(a z + b) as its own lambdified a z + b (the same numpy
    arithmetic) through :func:`_erf`, checked bit for bit against it on [-40, 40]; else None."""
    import sympy as sp

    plain, (expr, sym) = get_function(text), to_sympy(text)
    if expr.func is not sp.erf or not expr.args[0].is_polynomial(sym["z"]) or \
            sp.Poly(expr.args[0], sym["z"]).degree() != 1:
        return None
    inner = sp.lambdify(sym["z"], expr.args[0], modules=["numpy"])
    out = replace(plain, f=lambda x: _erf(np.asarray(inner(x), dtype=np.float64)))
    grid = np.linspace(-40.0, 40.0, 8001)  # (the check: the same numbers bit for bit)
    return out if np.array_equal(out.f(grid), plain.f(grid)) else None


def _values_into(f: Function, z: np.ndarray) -> np.ndarray:
    """``f(z)`` written into ``z`` (the caller's temporary) for the registered tanh and the
    erf and softplus of :func:`fast`: the same ufuncs on the same values, the same numbers (no
    temporaries of the size of the rule); other functions ``f(z)``."""
    if f.f is np.tanh:
        return np.tanh(z, out=z)
    if f.f is _erf:
        band = np.abs(z) < ERF_SATURATION
        inner = special.erf(z[band])
        np.sign(z, out=z)
        z[band] = inner
        return z
    if f.f is _softplus:
        t = np.abs(z)
        np.exp(np.negative(t, out=t), out=t)
        # log1p only where exp(-|z|) >= 2^-54: below, log1p(x) is x itself (the C library's),
        # so the skipped entries (|z| > 37.4, most of a wide line's) already hold its value
        np.log1p(t, out=t, where=t >= LOG1P_EXACT)
        return np.add(np.maximum(z, 0.0, out=z), t, out=z)
    return f(z)


def _smooth_moments(fn: Function, f: Function, pts: np.ndarray, s: float, n: int,
                    mirror: bool = False) -> np.ndarray:
    """``direct_moments(fn, pts, s, n_smooth=n)`` of a smooth F (one Gauss-Hermite rule for every
    shift), F evaluated by ``f`` (:func:`fast`); ``mirror``, where :func:`_mirrored` holds: the
    shifts p > 0 and -p of a pair evaluated together (:func:`_pair_values`: the same numbers)."""
    (x, w), block = gauss_hermite(n), SHIFT_BLOCK * max(1, 96 // n)
    sx, out, groups = (s * x)[None, :], np.empty((pts.shape[0], 3)), ((None, None),)
    if mirror and _mirrored(f, n):
        first, twin, lone = mirror_pairs(pts)  # (pts[twin] = -pts[first], first > 0)
        groups = ((first, twin), (lone, None))
    for rows, twins in groups:
        for a in range(0, pts.shape[0] if rows is None else rows.shape[0], block):
            sel = slice(a, a + block) if rows is None else rows[a:a + block]
            if twins is None:
                values = _values_into(f, pts[sel, None] + sx)
            else:  # (each row's sums are its own: any blocks, any order)
                values, other = _pair_values(f, pts[sel, None] + sx)
                out[twins[a:a + block]] = rows_moments(other, x, w)[1]
            finite, out[sel] = rows_moments(np.ascontiguousarray(values), x, w)
            if not finite and not np.all(np.isfinite(values)):
                raise ValueError(f"function {fn.name!r} returned non-finite values at "
                                 "quadrature nodes")
    return out


def _pair_values(f: Function, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F(z), F(-z[:, ::-1])) by :func:`_values_into`'s operations, ``z`` overwritten: with
    x_{n-1-j} = -x_j, -z[:, ::-1] holds -p + s x_j exactly, so the second is the values of the
    shift -p (tanh, erf: odd bit for bit; softplus: its costly part log1p(exp(-|z|)) once)."""
    if f.f is not _softplus:  # (odd)
        v = _values_into(f, z)
        return v, np.negative(v[:, ::-1])
    t = np.abs(z)  # (log1p on every entry: numpy's, the C library's, is x itself below 2^-54)
    np.log1p(np.exp(np.negative(t, out=t), out=t), out=t)
    other = np.add(np.maximum(np.negative(z[:, ::-1]), 0.0), t[:, ::-1])
    return np.add(np.maximum(z, 0.0, out=z), t, out=z), other


_MIRRORED: dict = {}


def _mirrored(f: Function, n: int) -> bool:
    """Whether :func:`_pair_values` holds for ``f`` with ``n`` Gauss-Hermite nodes: ``f`` the
    registered tanh or erf (checked odd bit for bit on [-40, 40]) or softplus of :func:`fast`,
    the nodes exact negatives of each other (checked once a process)."""
    if f.f is not np.tanh and f.f is not _erf and f.f is not _softplus:
        return False
    if (f.f, n) not in _MIRRORED:
        z = np.concatenate([np.linspace(-40.0, 40.0, 80001), np.geomspace(1e-300, 40.0, 4001)])
        x = gauss_hermite(n)[0]
        _MIRRORED[f.f, n] = bool((f.f is _softplus or np.array_equal(f.f(-z), -f.f(z))) and
                                 np.array_equal(x, -x[::-1]))
    return _MIRRORED[f.f, n]


def moments(fn: Function, t: np.ndarray, s: float, line: bool, gain: float = GAIN,
            reach: tuple[float, float] | None = None, **kw) -> np.ndarray:
    """Rows (E F, E[F Z], E F^2) of F(t_i + s Z): ``line_moments`` (``line``) or
    ``direct_moments`` with the rule options ``kw``, through :func:`fast`, the smooth rule's sums
    by ``line_moments.rows_moments`` (the values by :func:`_values_into`; on a line, a tanh, erf
    or softplus's pieces on ``on_line``'s mirrored points, their pairs evaluated once) and, for the
    registered relu, :func:`_relu_moments` (its pieces, not numpy's numbers bit for bit, under
    their own cache key); ``gain``, ``reach``: ``on_line``'s."""
    s, f = float(s), fast(fn)
    rule = tuple(sorted(kw.items()))
    if fn.identity is None and fn.name == "relu" and fn.kinks == (0.0,) and s > 0.0 and \
            fn.f is get_function("relu").f:
        t_leg, w_leg = legendre(int(kw.get("n_piece", N_PIECE)))

        def direct(pts: np.ndarray) -> np.ndarray:
            return _relu_moments(np.ascontiguousarray(pts, dtype=np.float64), s, t_leg, w_leg,
                                 HALF_WIDTH)

        key: tuple = ("relu, one pass", s, rule)
    elif fn.kinks and s != 0.0:
        return line_moments(f, t, s, **kw) if line else direct_moments(f, t, s, **kw)
    else:
        n = int(kw.get("n_smooth", N_SMOOTH))
        mirror = MIRROR and line and _mirrored(f, n)

        def direct(pts: np.ndarray) -> np.ndarray:
            return _smooth_moments(fn, f, np.asarray(pts, dtype=np.float64), s, n, mirror)

        key = ("gaussian", fn, s, rule) + (("fast",) if fn.name == "softplus" and f is not fn
                                            else ()) + (("mirror",) if mirror else ())
    if not line:
        return direct(np.asarray(t, dtype=np.float64))
    return on_line(direct, t, s, key=key, moments=True, gain=gain, mirror=key[-1] == "mirror",
                   reach=reach)


def feature_tables(sigma: Function, kappa: np.ndarray, loadings: np.ndarray, bulk: np.ndarray,
                   gain: float = GAIN, reach: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mu0, mub1, mus2), each (n, K), of sigma(u_g . kappa + sqrt(c_g) xi) (``gain``: of the
    interpolated line, r >= 2; ``reach``: the nodes of the ladder's next rule, whose line
    pieces are built now too, ``on_line``'s ``reach``: the same tables)."""
    n, K = kappa.shape[0], loadings.shape[0]
    raw = np.empty((K, n, 3))  # (each group's rows contiguous, as the moments come)
    odd = loadings.shape[1] > 1 and n % 2 == 0 and n > 0 and odd_sigma(sigma)
    for g in range(K):
        t = kappa @ loadings[g]
        sq = math.sqrt(bulk[g])
        if loadings.shape[1] > 1:  # r >= 2: thousands of shifts, one interpolated line
            nxt = None if reach is None else reach @ loadings[g]
            span = None if nxt is None or not nxt.size else (float(nxt.min()), float(nxt.max()))
            if odd and antisymmetric(t):  # (the rule's central symmetry)
                nh = n // 2  # the first half; the mirrored shifts' rows by parity (gain per shift)
                raw[g, :nh] = moments(sigma, t[:nh], sq, True, 2.0 * gain, span, **INNER_NODES)
                mirror_rows(raw[g])
            else:
                raw[g] = moments(sigma, t, sq, True, gain, span, **INNER_NODES)
        else:
            raw[g] = moments(sigma, t, sq, False)
    return _finish_features(raw)


def odd_sigma(sigma: Function) -> bool:
    """Whether ``sigma``'s line moments are taken at half of a centrally symmetric rule's shifts
    (:data:`MIRROR_TABLES` and sigma, through :func:`fast`, the registered tanh or erf: odd bit
    for bit, ``_mirrored``): E F(-t + s Z) = -E F(t + s Z), E[F(-t + s Z) Z] = E[F(t + s Z) Z],
    E F(-t + s Z)^2 = E F(t + s Z)^2 for an odd F (docs/THEORY.md §10.2)."""
    f = fast(sigma)
    return MIRROR_TABLES and (f.f is np.tanh or f.f is _erf) and \
        _mirrored(f, int(INNER_NODES["n_smooth"]))


@kernel(cache=True, error_model="numpy")
def _finish_features(raw: np.ndarray) -> tuple:
    """Kernel: (mu0, mub1, mus2), each (n, K), from the moments ``raw`` (K, n, 3) of each group:
    the scale s_g = max_j E F^2 + 1e-300 (NaN if one is), the first two flushed against
    sqrt(s_g), E F^2 - mu0^2 - mub1^2 against s_g and then >= 0 (:func:`flush`'s rule per
    column: entries |x| <= 1e-15 scale to 0, a column whose largest |x| is <= 1e-12 scale all)."""
    K, n, _ = raw.shape
    mu0, mb1, ms2 = np.empty((n, K)), np.empty((n, K)), np.empty((n, K))
    for g in range(K):
        big = -np.inf
        for j in range(n):
            if big == big and not raw[g, j, 2] <= big:  # (a NaN is the maximum, as numpy's)
                big = raw[g, j, 2]
        scale = (big if n else 0.0) + 1e-300
        for c in range(3):
            out = mu0 if c == 0 else mb1 if c == 1 else ms2
            sc = math.sqrt(scale) if c < 2 else scale
            top = 0.0
            for j in range(n):
                x = raw[g, j, c] if c < 2 else \
                    raw[g, j, 2] - raw[g, j, 0] * raw[g, j, 0] - raw[g, j, 1] * raw[g, j, 1]
                a = abs(x)
                top = max(top, a)
                out[j, g] = 0.0 if a <= 1e-15 * sc else x
            for j in range(n):
                if top <= 1e-12 * sc:
                    out[j, g] = 0.0
                elif c == 2 and not out[j, g] > 0.0 and out[j, g] == out[j, g]:
                    out[j, g] = 0.0  # (np.maximum(x, 0.0): -0.0 too)
    return mu0, mb1, ms2


def target_tables(target: Function | Callable[[np.ndarray], np.ndarray], k: int,
                  kappa: np.ndarray, overlaps: np.ndarray, n_omega: int | None = None,
                  degrees: tuple[int | None, ...] | None = None, gain: float = GAIN
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h, h1, h2) on the kappa nodes; ``target`` is a Function (k = 1) or a vectorised g(Z),
    Z of shape (..., k). ``degrees``: per variable, the target's degree as a polynomial in it
    (None: not one) gets degree + 1 nodes, exact for h, h1, h2; ``gain``: the line's (k = 1)."""
    shift = kappa @ overlaps  # (n, k)
    rho = np.sqrt(np.maximum(1.0 - np.sum(overlaps**2, axis=0), 0.0))
    n = kappa.shape[0]
    if isinstance(target, Function) and kappa.shape[1] > 1 and degrees and \
            degrees[0] is not None:  # (a polynomial: degree + 1 nodes exact, not the line)
        mg = moments(target, shift[:, 0], float(rho[0]), False, n_smooth=degrees[0] + 1)
        h, h1, h2 = mg[:, 0], mg[:, 1:2], mg[:, 2]
    elif isinstance(target, Function):
        mg = moments(target, shift[:, 0], float(rho[0]), kappa.shape[1] > 1, gain)
        h, h1, h2 = mg[:, 0], mg[:, 1:2], mg[:, 2]
    else:
        free = [j for j in range(k) if rho[j] > 0]
        m = n_omega if n_omega is not None else OMEGA_NODES.get(len(free), 8)
        counts = tuple(m if degrees is None or degrees[j] is None else min(m, degrees[j] + 1)
                       for j in free)
        if free:
            om, wo = tensor_rule(len(free), counts)
        else:
            om, wo = np.zeros((1, 0)), np.ones(1)
        group_checks.quadrature_size(n * om.shape[0], om.shape[0], f"{len(free)} unlearned "
                                     f"directions x {n} kappa nodes")
        h, h2, h1 = np.zeros(n), np.zeros(n), np.zeros((n, k))
        mk = max(om.shape[0] * k, 1)  # (blocks of >= 256 rows, and never more than 2e6 values)
        chunk = min(max(1, 2_000_000 // mk), max(256, TARGET_CHUNK // mk))
        wom = wo[:, None] * om  # (m, k'): weights times the free omegas
        raw = getattr(target, "raw", None) if free else None
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            if raw is not None:  # (each z_j on its own axis of the grid: the same numbers)
                gv = _on_grid(raw, shift[s:e], rho, free, counts)
            else:
                Zt = np.empty((k, e - s, om.shape[0]))  # Z[..., j] contiguous (g reads it)
                Zt[...] = shift[s:e].T[:, :, None]
                for i, j in enumerate(free):
                    Zt[j] += rho[j] * om[None, :, i]
                gv = np.asarray(target(np.moveaxis(Zt, 0, -1)), dtype=np.float64).T.copy()
            finite, h[s:e], h2[s:e], h1t = grid_moments(gv, wo, wom)  # (gv: the rule's rows)
            if not finite:
                raise ValueError("target returned non-finite values at quadrature nodes")
            h1[s:e][:, free] = h1t.T
    g_scale = float(np.max(h2)) + 1e-300
    return (flush(h, math.sqrt(g_scale)), flush(np.asarray(h1), math.sqrt(g_scale)),
            np.array(h2, dtype=np.float64))


def _on_grid(raw: Callable, shift: np.ndarray, rho: np.ndarray, free: list[int],
             counts: tuple[int, ...]) -> np.ndarray:
    """A lambdified target ``raw(z_1, ..., z_k)`` on the kept nodes of the omega tensor rule
    of ``counts`` over the variables ``free``, (m, n) C-contiguous: z_j = rho_j x + shift_j,
    x on axis j of the grid only and the n nodes on the last axis (numpy broadcasts: a term of
    z_j alone is evaluated once per distinct z_j), the numbers of the target on the (n, m)
    arrays of :func:`target_tables` element for element."""
    n, nf = shift.shape[0], len(free)
    args = []
    for j in range(shift.shape[1]):
        z = np.ascontiguousarray(shift[:, j])
        if j in free:
            i = free.index(j)
            x = rho[j] * gauss_hermite(counts[i])[0]
            z = x.reshape((1,) * i + (counts[i],) + (1,) * (nf - i)) + z
        args.append(z)
    with np.errstate(all="ignore"):
        out = np.asarray(raw(*args), dtype=np.float64)
    shape = tuple(counts) + (n,)  # (writable as the other branch's: one grid_moments signature)
    full = (out if out.shape == shape else np.broadcast_to(out, shape)).reshape((-1, n))
    if nf > 1:  # (the one-dimensional rule is not pruned)
        keep = tensor_keep(tuple(counts))[1]
        full = full if keep.shape[0] == full.shape[0] else full[keep]
    return np.array(full, order="C", copy=None if full.flags.writeable else True)
