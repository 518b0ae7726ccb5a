"""Risk after one large step with ``eta = eta_tilde p^(1/2 + a)``, ``0 < a < 1/2``, and a Gaussian
frozen readout: the polynomial spikes as unpenalised mean channels (docs/THEORY.md §13).

Convention (THEORY.md §8, :mod:`asymptotics.multiindex.spikes`; Moniri, Lee, Hassani, Dobriban
2023, arXiv 2310.07891): rows of ``W0`` uniform on the unit sphere, ``f(x) = a . sigma(W x) /
sqrt(p)`` with the frozen readout ``a_j = g_j / sqrt(p)``, ``g_j ~ N(0, 1)``; one full-batch step on
``n0 = alpha0 d`` samples of ``y = g(theta . x) + sqrt(delta) xi`` with ``eta = eta_tilde
p^(1/2 + a)``; then ridge on the readout with the *sum* loss ``sum_{i<=n} (y_i - f(x_i))^2 +
lam |a|^2`` on ``n = alpha d`` fresh samples, risk ``E (g - f)^2`` on fresh noiseless inputs
(THEORY.md §1).

The limit (THEORY.md §13; a closure, checked in ``tests/test_polynomial_spikes.py`` and
``validation/reports/POLYNOMIAL_SPIKES.md``). Row ``j`` moves by ``u_j v`` with
``u_j = eta_tilde g_j p^(a - 1/2) E[sigma'] |u|`` (``|u|^2 = mu1*^2 + (E y^2 + delta)/alpha0``,
overlap ``gamma = <v, theta> = mu1*/|u|``; the initial output is ``O(p^(-1/2))``) plus a row noise
and a rescaling of ``W0`` that vanish like ``p^(a - 1/2)``. In the features
``sigma(<w0_j, x> + u_j kappa)``, ``kappa = <v, x>``, the Taylor term of order ``l`` has the
rank-one mean part ``(E[sigma He_l] / l!) kappa^l (u^l)^T``, whose operator norm grows against
the bulk like ``p^(1/2 - l (1/2 - a))`` (``l = 0``: the mean ``mu0 1 1^T``, like ``p^(1/2)``). The
divergent ones, ``S = {l : a > (l - 1)/(2 l), E[sigma He_l] != 0}``, are directions the readout
reaches at vanishing penalty: unpenalised columns ``kappa^l``, ``l in S``. Everything else tends
to the random-features bulk (``c = 1``, no spike). So the limit is random features plus
unpenalised columns ``kappa^l``, and the K-group equations (THEORY.md §10 with ``u = 0``) say
that the columns take the projection ``P`` of ``h(kappa) = E[g | kappa]`` on ``span{kappa^l}``
while the bulk sees the rest: the risk is the random-features risk of an effective target with

- mean ``mu0* - E P``,
- linear coefficient ``|mu1* theta - E[P kappa] v|`` (``mu1* rho`` when ``1 in S``),
- power ``E g^2 - E P^2`` (with ``S = {0, 1, 2}``: nonlinear power ``mu*^2 - gamma^4 c_2^2/2``,
  ``c_l = E[g He_l]``).

Implemented for ``ell = max S <= 2`` (``a < 1/3`` for a generic activation; ``a < 3/8`` when
``E[sigma He_3] = 0``, e.g. ReLU). On a threshold ``a = (l - 1)/(2 l)`` with
``E[sigma He_l] != 0`` (including ``a = 0`` when ``E sigma' != 0``) the order-``l`` term is a spike
of finite strength, which this limit does not describe: ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.gauss_rules import gaussian_nodes
from asymptotics.core.parameters import default

#: the largest order implemented
MAX_ELL = 2
#: Hermite degrees inspected for divergent orders beyond MAX_ELL
MAX_DEGREE = 12
#: a normalised Hermite coefficient below this (relative to max(1, max |c|)) counts as zero
COEFF_TOL = 1e-9
#: a closer than this to a threshold (l - 1)/(2 l) counts as on it
THRESHOLD_TOL = 1e-12


@dataclass(frozen=True)
class PolynomialSpikeResult:
    """The limit of THEORY.md §13 at one point.

    ``orders``: the divergent orders ``S`` (0 = the mean channel, present iff ``mu0 != 0``);
    ``ell = max S`` (0 if ``S`` is empty). ``gamma``, ``rho``: overlap of the spike direction
    with ``theta``. ``projection``: the Hermite coefficients ``(p0, p1, p2)`` of the fitted
    polynomial ``P = p0 + p1 He_1 + p2 He_2`` of ``kappa``. ``mean_eff``, ``linear_eff``,
    ``nonlinear_eff``: the effective target seen by the random-features bulk (mean, linear
    coefficient, nonlinear power ``E g_eff^2 - mean^2 - linear^2``). ``risk_rf``: random features
    on the original target (``eta_tilde = 0``), for comparison."""

    alpha: float
    a: float
    sigma: str
    target: str
    alpha0: float
    eta: float
    lam: float
    beta: float
    delta: float
    orders: tuple[int, ...]
    ell: int
    gamma: float
    rho: float
    sigma_hermite: tuple[float, ...]
    target_hermite: tuple[float, ...]
    projection: tuple[float, float, float]
    mean_eff: float
    linear_eff: float
    nonlinear_eff: float
    risk: float
    risk_rf: float
    converged: bool
    message: str = ""


def hermite_moments(fn: Function, max_degree: int) -> np.ndarray:
    """``E[f(z) He_l(z)]``, l = 0..max_degree (not normalised), by a kink-split rule
    (:func:`asymptotics.coefficients.gauss_rules.gaussian_nodes`)."""
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), fn.kinks)
    z, w = np.asarray(z[0]), np.asarray(w[0])
    fz = fn(z)
    out = np.empty(max_degree + 1)
    he_prev, he = np.zeros_like(z), np.ones_like(z)
    for l in range(max_degree + 1):
        out[l] = float(np.sum(w * fz * he))
        he_prev, he = he, z * he - l * he_prev
    return out


def _nonzero(moments: np.ndarray) -> np.ndarray:
    norm = moments / np.sqrt([math.factorial(l) for l in range(moments.size)])
    return np.abs(norm) > COEFF_TOL * max(1.0, float(np.max(np.abs(norm))))


def divergent_orders(a: float, sigma: str | Function, *, eta: float = 1.0) -> tuple[int, ...]:
    """The divergent orders ``S`` (module docstring) for ``a`` in ``[0, 1/2)``; raises ValueError
    on a threshold with a nonzero coefficient and when an order above :data:`MAX_ELL` diverges."""
    a = _exponent(a)
    fn = get_function(sigma) if not isinstance(sigma, Function) else sigma
    top = min(MAX_DEGREE, max(MAX_ELL + 1, math.ceil(1.0 / (1.0 - 2.0 * a)) + 1))
    nz = _nonzero(hermite_moments(fn, top))
    orders = [0] if nz[0] else []
    if eta == 0:
        return tuple(orders)
    for l in range(1, top + 1):
        thr = (l - 1) / (2 * l)
        if not nz[l]:
            continue
        if abs(a - thr) <= THRESHOLD_TOL:
            raise ValueError(
                f"a={a:g} is the threshold (l-1)/(2l) of order l={l}, where E[sigma He_{l}] != 0: "
                f"the order-{l} term is a spike of finite strength, not an unpenalised channel, "
                "and this limit does not describe it (THEORY.md §13; the K-group model of the "
                "step at finite width, asymptotics.risk_readout, does)")
        if a > thr:
            if l > MAX_ELL:
                raise ValueError(
                    f"a={a:g} opens the spike of order {l} (a > {thr:g} and E[sigma He_{l}] != 0): "
                    f"polynomial_spike_risk is implemented for ell <= {MAX_ELL}")
            orders.append(l)
    if 1.0 / (1.0 - 2.0 * a) > MAX_DEGREE:
        raise ValueError(f"a={a:g} opens orders beyond {MAX_DEGREE}: polynomial_spike_risk is "
                         f"implemented for ell <= {MAX_ELL}")
    return tuple(orders)


def _exponent(a: object) -> float:
    if isinstance(a, (bool, str, bytes)):
        raise TypeError(f"a must be a real number, got {a!r}")
    try:
        v = float(a)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(f"a must be a real number, got {a!r}") from None
    if not (math.isfinite(v) and 0.0 <= v < 0.5):
        raise ValueError(f"a must be in [0, 1/2) (eta = eta_tilde p^(1/2 + a)), got {a!r}")
    # a number of lower precision (np.float32(1/3)) within its own rounding of a threshold
    # (l - 1)/(2 l) is that threshold: on it the limit raises (module docstring)
    tol = 4.0 * float(np.finfo(a.dtype).eps) if isinstance(a, np.floating) else 0.0
    for l in range(1, MAX_DEGREE + 1):
        if abs(v - (l - 1) / (2 * l)) <= tol:
            return (l - 1) / (2 * l)
    return v


def _check(name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)  # type: ignore[arg-type]
    ok = (v > 0) if positive else (v >= 0)
    if not (ok and math.isfinite(v)):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be {bound} and finite, got {value!r}")
    return v


def projection(orders: tuple[int, ...], h: tuple[float, float, float]) -> np.ndarray:
    """Hermite coefficients ``(p0, p1, p2)`` of the least-squares projection (Gaussian kappa) of
    ``h = h0 + h1 He_1 + h2 He_2 + (higher)`` on ``span{kappa^l : l in orders}``, orders in
    {0, 1, 2} (``kappa^2 = He_2 + 1``)."""
    basis = {0: np.array([1.0, 0.0, 0.0]), 1: np.array([0.0, 1.0, 0.0]),
             2: np.array([1.0, 0.0, 1.0])}
    gram = np.diag([1.0, 1.0, 2.0])  # E He_i He_j = i! delta_ij
    if not orders:
        return np.zeros(3)
    B = np.array([basis[l] for l in orders]).T  # 3 x |S|
    G = B.T @ gram @ B
    rhs = B.T @ gram @ np.asarray(h, dtype=np.float64)
    return B @ np.linalg.solve(G, rhs)


def polynomial_spike_risk(
    alpha: float,
    *,
    a: float,
    sigma: str | Function = default("sigma"),
    target: str | Function = default("target"),
    alpha0: float = default("alpha0"),
    eta: float = default("eta"),
    lam: float = default("lam"),
    beta: float = default("beta"),
    delta: float = default("delta"),
) -> PolynomialSpikeResult:
    """The ``d -> infinity`` test error after one step with ``eta = eta_tilde p^(1/2 + a)`` and a
    Gaussian frozen readout (module docstring, THEORY.md §13), for ``ell <= 2``. ``eta`` is
    ``eta_tilde``; the limit does not depend on it (nor on ``a``) beyond which orders diverge,
    and ``eta = 0`` is random features. The random-features risk of the effective target is
    solved by the K-group solver with zero loading (``asymptotics.spiked.risk_spiked``, which
    is random features, THEORY.md §10.7); ``lam = 0`` is the ridgeless limit there.

    A limit only: at the d that can be simulated (500-2000) the trained network is 5-48 s.e.
    away from it in 12 of the 15 measured rows of ``validation/reports/POLYNOMIAL_SPIKES.md``,
    while the finite-width K-group model of the step at the network's width
    (:func:`asymptotics.risk_readout` with the readout quantised on Gauss-Hermite groups,
    THEORY.md §13.5) is within 3 s.e. of it in all 15; use that model for finite d."""
    from asymptotics.spiked.solve import risk_spiked

    alpha = _check("alpha", alpha, positive=True)
    a = _exponent(a)
    alpha0 = _check("alpha0", alpha0, positive=True)
    eta = _check("eta", eta)
    lam = _check("lam", lam)
    beta = _check("beta", beta, positive=True)
    delta = _check("delta", delta)
    fs = get_function(sigma) if not isinstance(sigma, Function) else sigma
    ft = get_function(target) if not isinstance(target, Function) else target
    orders = divergent_orders(a, fs, eta=eta)
    k = ge_coefficients(fs, ft)
    th = hermite_moments(ft, 2)
    ee2 = k.mu2_star + delta  # the initial output is O(p^-1/2): the residual is y
    u2 = k.mu1_star**2 + ee2 / alpha0 if math.isfinite(alpha0) else k.mu1_star**2
    gamma = k.mu1_star / math.sqrt(u2) if u2 > 0 else 0.0
    gamma = max(-1.0, min(1.0, gamma))
    rho = math.sqrt(max(0.0, 1.0 - gamma * gamma))
    h = (float(th[0]), gamma * float(th[1]), gamma**2 * float(th[2]) / 2.0)
    P = projection(orders, h)
    mean_eff = float(th[0] - P[0])
    lin2 = k.mu1_star**2 - 2.0 * k.mu1_star * gamma * P[1] + P[1] ** 2
    linear_eff = math.sqrt(max(lin2, 0.0))
    power_eff = k.mu2_star - (P[0] ** 2 + P[1] ** 2 + 2.0 * P[2] ** 2)
    nonlinear_eff = max(power_eff - mean_eff**2 - linear_eff**2, 0.0)
    expr = (f"({mean_eff!r}) + ({linear_eff!r})*z + "
            f"({math.sqrt(nonlinear_eff / 2.0)!r})*(z**2 - 1)")
    # random features: the K-group model with one group, zero loading, bulk 1 (THEORY.md §10.7)
    common = dict(loadings=[[0.0]], bulk=[1.0], fractions=[1.0], overlaps=[[0.0]], lam=lam,
                  beta=beta, delta=delta)
    res = risk_spiked(alpha, sigma=fs, target=get_function(expr), **common)
    rf = risk_spiked(alpha, sigma=fs, target=ft, **common)
    return PolynomialSpikeResult(
        alpha=alpha, a=a, sigma=fs.name, target=ft.name, alpha0=alpha0, eta=eta, lam=lam,
        beta=beta, delta=delta, orders=orders, ell=max(orders, default=0), gamma=float(gamma),
        rho=rho, sigma_hermite=tuple(float(x) for x in hermite_moments(fs, 3)),
        target_hermite=tuple(float(x) for x in th), projection=tuple(float(x) for x in P),
        mean_eff=mean_eff, linear_eff=linear_eff, nonlinear_eff=nonlinear_eff,
        risk=float(res.risk), risk_rf=float(rf.risk), converged=bool(res.converged),
        message=str(getattr(res, "message", "") or ""))


# the steps mapping's rule on the other axes for a target's polynomial variables
# (step_rules.other_axes, docs/THEORY.md §12.4)
def triangular_span(A: np.ndarray, degrees: list[int], D: int, seen: float
                    ) -> tuple[np.ndarray, list[int]]:
    """An orthonormal basis of the span of the columns of ``A`` (the polynomial variables'
    directions, by decreasing degree) by Gram-Schmidt in column order, so that variable j sees
    the axes of variables 0..j only, and per axis its Gauss-Hermite node count: the target's
    degree on the axis of variable i is at most ``min(D, sum of degrees[i:])``, and d + 1 nodes
    are exact for e, e R, e^2 (degree 2 d + 1 at most on that axis). Directions shorter than
    ``seen`` add no axis (``step_rules.other_axes``' rule of the polynomial variables)."""
    cols, nodes = [], []
    for i in range(A.shape[1]):
        v = A[:, i].copy()
        for _ in range(2):  # twice: orthogonal to rounding
            for q in cols:
                v -= q * (q @ v)
        nv = float(np.linalg.norm(v))
        if nv > seen:
            cols.append(v / nv)
            nodes.append(min(D, int(sum(degrees[i:]))) + 1)
    Q = np.column_stack(cols) if cols else np.zeros((A.shape[0], 0))
    return Q, nodes


# the steps mapping's other-axes sums of a target g = p(z) + t(z_j), p polynomial and t a sum of
# bounded analytic functions of z_j (docs/THEORY.md §12.4)
BOUNDED = ("tanh", "sin", "cos", "erf")
SPLIT_ROWS = 8192  # rows per block of split_rest's polynomial sums (a multiple of 64)


@dataclass(frozen=True, eq=False)
class SplitTarget:
    """``g(z) = p(z) + t(z_j)``: ``p`` (of k arrays, z1..zk) polynomial, ``t`` (a
    vectorised function of one variable) a sum of ``c f(alpha z_j + b)`` with f bounded and
    analytic (tanh, sin, cos, erf); ``scale`` the least ``1 / |alpha|`` (at most 1)."""

    p: object
    t: object
    j: int
    scale: float
    degree: int  # p's total degree


@lru_cache(maxsize=64)
def split_target(text: str, k: int, per: tuple[int | None, ...] | None) -> SplitTarget | None:
    """The split of a target text whose only non-polynomial variable ``z_j`` (``per[j]`` None)
    enters through such a sum, else None."""
    if not isinstance(text, str) or per is None or len(per) != k or k < 2:
        return None
    N = [j for j in range(k) if per[j] is None]
    if len(N) != 1:
        return None
    try:
        return _split(text, k, N[0])
    except Exception:  # noqa: BLE001 (sympy raises many kinds on other expressions)
        return None


def _split(text: str, k: int, j: int) -> SplitTarget | None:
    import sympy as sp

    from asymptotics.coefficients.targets import parse_target

    expr, zs = parse_target(text)
    zs = tuple(zs)[:k]
    poly, smooth, scale = sp.Integer(0), sp.Integer(0), 1.0
    for term in sp.Add.make_args(sp.expand(expr)):
        if term.is_polynomial(*zs):
            poly += term
            continue
        c, core = term.as_coeff_Mul()
        arg = core.args[0].as_poly(zs[j]) if len(core.args) == 1 else None
        if (core.func.__name__ not in BOUNDED or arg is None or arg.degree() != 1
                or core.args[0].free_symbols - {zs[j]} or c.free_symbols):
            return None
        smooth += term
        scale = min(scale, 1.0 / abs(float(arg.coeff_monomial(zs[j]))))
    if smooth == 0:
        return None
    fp = sp.lambdify(zs, poly, "numpy")
    ft = sp.lambdify(zs[j], smooth, "numpy")

    def p(*cols: np.ndarray) -> np.ndarray:  # p(z1, ..., zk) on arrays of one shape
        return np.broadcast_to(np.asarray(fp(*cols), dtype=np.float64), np.shape(cols[0]))

    def t(x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(ft(x), dtype=np.float64), np.shape(x))

    return SplitTarget(p, t, j, scale, int(sp.Poly(poly, *zs).total_degree()) if poly != 0 else 0)


def split_rule(split: SplitTarget | None, other_axes: Callable, Bo: np.ndarray, k: int,
               n_rest: int, per: tuple, R: np.ndarray, B: np.ndarray
               ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(R2, w2)`` of :func:`split_rest`: ``other_axes`` (``step_rules.other_axes``) with
    ``D + 1`` nodes on z_j's axis, when that is the first of the rule ``(R, B)`` (and the only
    one carrying z_j) and the rule is smaller; else ``(None, None)``."""
    if split is None:
        return None, None
    R2, w2, B2 = other_axes(Bo, k, n_rest, per, split.degree + 1)
    if (R2.shape[0] >= R.shape[0] or B2.shape != B.shape or np.any(B2 != B)
            or np.max(np.abs(B[1:, split.j]), initial=0.0) > 1e-12 * abs(B[0, split.j])):
        return None, None
    return R2, w2


def split_rest(split: SplitTarget, Uz: np.ndarray, R: np.ndarray, w: np.ndarray,
               R2: np.ndarray, w2: np.ndarray, Bz: np.ndarray, f: np.ndarray, delta: float
               ) -> tuple[np.ndarray, ...]:
    """``(e0, e1, e2)`` of ``steps.advance``'s node terms (e = g - f) for a split target, from
    the other axes' rule (R, w), whose first axis s alone carries z_j (``z = Uz + R Bz``), and
    the same rule with ``D + 1`` nodes on s (R2, w2; exact for p, p R, p^2): the p parts by
    (R2, w2), the t parts ``E t, E[t s], E t^2`` and ``E[t l_i(s)]`` (l_i the Lagrange basis on
    the s nodes of R2) as functions of z_j's spike part by ``xi_lines.on_pieces`` (the s rule's
    sums to 1e-13 of their scale), the cross term ``E[p t] = sum_i P(s_i) E[t l_i(s)]`` with
    ``P(s) = E[p | s]`` a polynomial of degree <= D (exact)."""
    from asymptotics.multiindex.xi_lines import on_pieces

    s_nodes = np.unique(R2[:, 0])
    ws = np.array([float(w2[R2[:, 0] == x].sum()) for x in s_nodes])
    x1 = np.unique(R[:, 0])
    wx = np.array([float(w[R[:, 0] == x].sum()) for x in x1])
    ell = np.ones((len(s_nodes), len(x1)))
    for i, si in enumerate(s_nodes):
        for m, sm in enumerate(s_nodes):
            if m != i:
                ell[i] *= (x1 - sm) / (si - sm)
    beta = float(Bz[0, split.j])
    W = wx[:, None] * ell.T  # E[t l_i]; E t = sum_i E[t l_i], E[t s] = sum_i s_i E[t l_i]

    def direct(a: np.ndarray) -> np.ndarray:
        rows, out = max(1, 131_072 // len(x1)), np.empty((len(a), W.shape[1] + 1))
        for lo in range(0, len(a), rows):
            T = split.t(a[lo:lo + rows, None] + beta * x1[None, :])
            out[lo:lo + rows, :W.shape[1]] = T @ W
            out[lo:lo + rows, -1] = (T * T) @ wx
        return out

    G = on_pieces(direct, np.ascontiguousarray(Uz[:, split.j]), split.scale, None)
    L, t2 = G[:, :-1], G[:, -1]  # t0 = E t, t1 = E[t s] per block below (no array of n)
    i_s, RB = np.searchsorted(s_nodes, R2[:, 0]), R2 @ Bz
    C = np.zeros((R2.shape[0], len(s_nodes)))
    C[np.arange(R2.shape[0]), i_s] = w2 / ws[i_s]  # E[p | s_i] = Pv @ C[:, i]
    m, n, sw = R2.shape[1], Uz.shape[0], float(w2.sum())
    WC, e0, e1, e2 = np.column_stack([w2, w2[:, None] * R2, C]), np.empty(n), np.empty((n, m)), \
        np.empty(n)
    starts = list(range(0, n, SPLIT_ROWS)) or [0]
    starts[-1] -= n > 1 and n - starts[-1] == 1  # no block of one row (numpy's vector products)
    for sl in map(slice, starts, starts[1:] + [n]):  # each row's numbers as on all rows
        Pv = split.p(*[Uz[sl, i, None] + RB[None, :, i] for i in range(Bz.shape[1])])
        A = Pv @ WC  # E p, E[p R], E[p | s_i]
        d = Pv - f[sl, None]
        d *= d
        t0 = L[sl].sum(axis=1)
        e0[sl] = A[:, 0] + t0 - f[sl] * sw
        e1[sl] = A[:, 1:1 + m] - f[sl, None] * (w2 @ R2)[None, :]
        e1[sl, 0] += L[sl] @ s_nodes
        e2[sl] = d @ w2 + 2.0 * (np.einsum("ij,ij->i", A[:, 1 + m:], L[sl]) - f[sl] * t0) + \
            t2[sl] + delta * sw
    return e0, e1, e2
