"""Deterministic population measure of the trained network's first layer (docs/DERIVATIONS.md
§7, 'A deterministic measure from the resolvent').

The network theory's measure is the population covariance C = (I + a M)^2 + bq Q of the bulk
rows after the step (Sigma = Pi C Pi on v^perp): its spectral law (the bulk of the generalised
Marchenko-Pastur law) and the spectral measures of b = Sigma^+ Pi C v and t against it (the
channels). Their Stieltjes transforms all follow from the resolvent R = (C - zeta)^-1: the bulk
from tr(R)/d, the channels from the forms of R on (theta*, u) (kernel
:func:`asymptotics.measures.resolvent_kernels.dyson_forms`), with w = Pi C v,
    w.R_perp.w = const - zeta - 1/(v.R.v),  t.R_perp.w = -t.R.v/(v.R.v),
    t.R_perp.t = t.R.t - (t.R.v)^2/(v.R.v),   Var eps = 1/(v.C^-1.v),
and b = w/lam atom by atom. Each measure is turned into a Gauss rule: Chebyshev moments in the
variable log(lam) from a contour integral of its transform (a Bernstein ellipse in the log
plane, trapezoidal rule, real measures so half the points by conjugation), then the modified
Chebyshev algorithm (Gautschi 2004) and the eigenvalues of the Jacobi matrix. The cross channel
is the polarisation of the rules of b + t and b - t. No sampling: the output is a function of
(sigma, target, alpha0, eta, delta) and the quadrature sizes only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh_tridiagonal

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gauss_hermite, gaussian_nodes
from asymptotics.measures.resolvent_kernels import chebyshev_jacobi, dyson_forms
from asymptotics.measures.spectral import EMPTY, SpectralMeasure
from asymptotics.step.srf import srf_mapping

N_NODES = 16  # Gauss nodes per measure (exact to degree 31 in log lam)
N_CONTOUR = 64  # trapezoidal points on the contour (half of them computed)
N_LAW = 48  # quadrature nodes of the law of theta*.x (Gauss-Hermite; 24 per piece with kinks)
RHO = 1.5  # Bernstein ellipse parameter of the contour in the log plane
TOL = 1e-14  # fixed-point tolerance (the moments of order 2n amplify its error by rho^2n)
MASS_TOL = 1e-7  # the bulk and t have mass 1: a larger miss means the contour cut the spectrum


class QuadratureError(ArithmeticError):
    """The deterministic measure failed one of its checks (unconverged fixed point, a spectrum
    outside the contour); the message says which."""


@dataclass(frozen=True)
class PopulationRules:
    """Gauss rules of the five measures (bulk, b, t, b + t, b - t; ``nodes``/``weights`` of
    shape (5, n), padded with zero weights where a rule needed fewer nodes), Var eps, the
    interval [lo, hi] of the contour and the largest fixed-point iteration count."""

    nodes: np.ndarray
    weights: np.ndarray
    var_eps: float
    lo: float
    hi: float
    iterations: int


def law_nodes(
    target: Function, mu0: float, delta: float, n: int = N_LAW,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, e, w): nodes of z = theta*.x ~ N(0, 1) and of the step's weight
    e = g(z) - mu0 + sqrt(delta) xi, with weights summing to 1 (Gauss-Hermite, or Gauss-Legendre
    pieces between the kinks of the target; label noise by 8 Gauss-Hermite nodes); nodes of
    weight below 1e-18 are dropped (they bound the spectrum without moving it)."""
    zq, wq = gaussian_nodes(np.zeros(1), np.ones(1), tuple(target.kinks), n_smooth=n,
                            n_piece=max(n // 2, 8))
    z, w = zq[0], wq[0]
    e = target(z) - mu0
    if delta > 0.0:
        gh, wh = gauss_hermite(8)
        e = (e[:, None] + math.sqrt(delta) * gh[None, :]).ravel()
        z = np.repeat(z, gh.size)
        w = (w[:, None] * wh[None, :]).ravel()
    keep = w > 1e-18 * w.max()
    z, e, w = z[keep], e[keep], w[keep]
    return np.ascontiguousarray(z), np.ascontiguousarray(e), w / w.sum()


def gauss_from_chebyshev(mom: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss rule (nodes in [-1, 1], weights) of a positive measure from its Chebyshev moments
    mom[k] = int T_k, k < 2n (:func:`asymptotics.measures.resolvent_kernels.chebyshev_jacobi`, then
    the
    eigenvalues of the Jacobi matrix, Golub and Welsch 1969). The rule stops early, padded with
    zero weights, where the measure is resolved to rounding or the recurrence breaks down."""
    alpha, beta, m = chebyshev_jacobi(np.ascontiguousarray(mom, dtype=np.float64), int(n))
    x, Q = eigh_tridiagonal(alpha[:m], np.sqrt(beta[1:m]))
    w = beta[0] * Q[0] ** 2
    pad = n - x.size
    return np.concatenate([x, np.full(pad, x[-1])]), np.concatenate([w, np.zeros(pad)])


@functools.lru_cache(maxsize=128)
def population_rules(
    s: Function, g: Function, alpha0: float, eta: float, delta: float, n: int = N_NODES,
    n_contour: int = N_CONTOUR, n_law: int = N_LAW,
) -> PopulationRules:
    """The Gauss rules of the population measure at one setting (cached; module docstring).
    The contour's lower end is tried at 10^-3 and, if a check fails there (a spectrum reaching
    below it), at 10^-7. Raises :class:`QuadratureError` when a check fails."""
    try:
        return _rules(s, g, alpha0, eta, delta, n, n_contour, n_law, 1e-3)
    except QuadratureError:
        k = ge_coefficients(s, g)
        if abs(eta * k.c1) < 1e-12:  # C >= I: the lower end was not the problem
            raise
        return _rules(s, g, alpha0, eta, delta, n, n_contour, n_law, 1e-7)


def _rules(
    s: Function, g: Function, alpha0: float, eta: float, delta: float, n: int, n_contour: int,
    n_law: int, lo_any: float,
) -> PopulationRules:
    """:func:`population_rules` with the contour's lower end ``lo_any`` where C >= I does not
    hold."""
    k = ge_coefficients(s, g)
    z, e, w = law_nodes(g, k.mu0, delta, n_law)
    a = eta * k.c1
    bq = eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0
    psi = 1.0 / alpha0
    # the spectrum of C lies in [lo, hi]: C >= I when a = 0, C >= 0 always (lo_any is then
    # checked a posteriori by the masses); |M| <= max|e| (1 + sqrt psi)^2, Q likewise. The
    # contour must stay away from the spectrum (an atom at 1 when alpha0 < 1, C = I when
    # bq = a = 0): a margin on both ends
    E = float(np.max(np.abs(e)))
    edge = (1.0 + math.sqrt(psi)) ** 2
    hi = 1.25 * ((1.0 + abs(a) * E * edge) ** 2 + bq * E * E * edge)
    lo = 0.5 if abs(a) < 1e-12 else lo_any
    hi = max(hi, lo * 2.5)
    Xlo, Xhi = math.log(lo), math.log(hi)
    mid, hw = 0.5 * (Xlo + Xhi), 0.5 * (Xhi - Xlo)
    # the transforms are analytic in the log plane off the spectrum and its copies at
    # Im X = +-2 pi, which the Joukowski map puts at |w| = r2: take the ellipse |w| = rho between
    # 1 and r2, and enough points that the trapezoidal error ~ min(rho, r2/rho)^-(M - 2n) is
    # below 1e-9 (at least ``n_contour``)
    r2 = 2.0 * math.pi / hw + math.sqrt((2.0 * math.pi / hw) ** 2 + 1.0)
    rho_c = min(RHO, math.sqrt(r2))
    need = 2 * n + math.ceil(21.0 / math.log(min(rho_c, r2 / rho_c)))
    half = max(n_contour, need + need % 2) // 2
    theta = math.pi * (np.arange(half) + 0.5) / half  # upper half of the ellipse
    wv = rho_c * np.exp(1j * theta)
    X = mid + hw * 0.5 * (wv + 1.0 / wv)
    dX = hw * 0.5j * (wv - 1.0 / wv)
    zeta = np.exp(X)
    zeta_all = np.concatenate([zeta, [0.0 + 0j]])  # zeta = 0 last: Var eps
    out, its, ok = dyson_forms(zeta_all, e, z, w, a, bq, psi, TOL, 20000)
    if not np.all(ok):
        raise QuadratureError(f"the resolvent did not converge at {np.sum(~ok)} of "
                              f"{ok.size} points (sigma={s.name}, target={g.name}, "
                              f"alpha0={alpha0:g}, eta={eta:g})")
    mu1 = float(w @ (e * z))
    un2 = mu1 * mu1 + psi * float(w @ (e * e))
    un = math.sqrt(un2)
    gam = mu1 / un
    rho = math.sqrt(max(1.0 - gam * gam, 0.0))
    tr, tt_, tu_, uu_ = out[:, 0], out[:, 1], out[:, 2], out[:, 3]
    vRv = uu_ / un2
    thv = tu_ / un
    tRv = (thv - gam * vRv) / rho
    tRt = (tt_ - 2.0 * gam * thv + gam * gam * vRv) / (rho * rho)
    var_eps = float((1.0 / vRv[-1]).real)
    zt = zeta_all[:-1]
    sww = -zt - 1.0 / vRv[:-1]  # up to a constant, which integrates to 0
    stw = -tRv[:-1] / vRv[:-1]
    stt = tRt[:-1] - tRv[:-1] ** 2 / vRv[:-1]
    bb, bt = sww / (zt * zt), stw / zt  # b = w/lam: the transforms of lam^-2 w w, lam^-1 t w
    transforms = np.stack([tr[:-1], bb, stt, bb + 2.0 * bt + stt, bb - 2.0 * bt + stt])
    # int f dmu = -(1/2 pi i) oint f(zeta) m(zeta) dzeta, zeta = exp(X), dzeta = zeta dX;
    # the lower half of the ellipse is the conjugate of the upper (real measures)
    kk = np.arange(2 * n)
    Tk = 0.5 * (wv[None, :] ** kk[:, None] + wv[None, :] ** (-kk[:, None]))
    integrand = transforms * (zeta * dX)[None, :]
    mom = -(np.real(integrand @ Tk.T / 1j) * 2.0) / (2.0 * half)
    masses = mom[:, 0]
    # a measure of zero mass (b when the step leaves C = I: a = bq = 0) has no rule
    zero = np.abs(masses) < 1e-12 * max(1.0, float(np.max(np.abs(masses))))
    bounded = np.all((np.abs(mom) <= masses[:, None] * (1.0 + 1e-6) + 1e-12)[~zero])
    if abs(masses[0] - 1.0) > MASS_TOL or abs(masses[2] - 1.0) > MASS_TOL or not bounded:
        raise QuadratureError(
            f"the spectrum is not inside the contour [{lo:.3g}, {hi:.3g}] or the contour "
            f"integrals are not converged (masses of the bulk and of t: {masses[0]:.9f}, "
            f"{masses[2]:.9f}, Chebyshev moments bounded by the mass: {bounded}; "
            f"sigma={s.name}, target={g.name}, alpha0={alpha0:g}, eta={eta:g})")
    nodes = np.empty((5, n))
    weights = np.empty((5, n))
    for j in range(5):
        if zero[j]:
            nodes[j], weights[j] = 1.0, 0.0
            continue
        x, wj = gauss_from_chebyshev(mom[j], n)
        out_ = np.abs(x) > 1.0 + 1e-9
        if np.any(wj[out_] > 1e-6 * masses[j]):
            raise QuadratureError(
                f"a Gauss node of measure {j} lies outside the contour's interval with weight "
                f"{float(np.max(wj[out_])):.3g} (sigma={s.name}, target={g.name}, "
                f"alpha0={alpha0:g}, eta={eta:g})")
        wj = np.where(out_, 0.0, wj)  # nodes of the moments' rounding (< 1e-6 of the mass)
        nodes[j], weights[j] = np.exp(mid + hw * np.clip(x, -1.0, 1.0)), wj
    if not (np.all(np.isfinite(nodes)) and np.all(weights >= 0.0) and var_eps > 0.0):
        raise QuadratureError(f"the Gauss rules are not valid (sigma={s.name}, "
                              f"target={g.name}, alpha0={alpha0:g}, eta={eta:g})")
    return PopulationRules(nodes, weights, var_eps, lo, hi, int(its.max()))


def resolvent_measure(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float, beta: float,
    delta: float = 0.0, n: int = N_NODES, n_contour: int = N_CONTOUR, n_law: int = N_LAW,
) -> SpectralMeasure:
    """The network theory's population measure without sampling (module docstring): a
    :class:`SpectralMeasure` of kind ``'quadrature'`` with the sRF spike (r, gamma) and
    c = the mean of the population spectrum. Raises :class:`QuadratureError` when a check fails
    (:func:`asymptotics.measures.population.population_measure` then falls back to the sampled
    device)."""
    s, g = get_function(sigma), get_function(target)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta)
    rules = population_rules(s, g, float(alpha0), float(eta), float(delta), int(n),
                             int(n_contour), int(n_law))
    c = float(rules.nodes[0] @ rules.weights[0])
    return SpectralMeasure("quadrature", float(beta), c, rules.nodes.ravel(),
                           rules.weights.ravel(), np.array([rules.var_eps]), EMPTY, r=sp.r,
                           gamma=sp.gamma)
