"""Deterministic spectral measure of the trained network's first layer (docs/DERIVATIONS.md §7).

One giant step at large alpha0: row k of W1 minus the spike is
    b_k = (I + eta c1 M) w0_k + zeta-noise,   M = n0^-1 sum_i e_i x_i x_i^T,
whose covariance over rows is (c I + D)/d, D supported on span(v, t) (t the part of theta*
orthogonal to v). Projected on the plane (theta*, n), n the unit noise direction of
u = n0^-1 sum_i e_i x_i, M acts as the 2x2 matrix Mx and its spread outside the plane gives the
2x2 second moment Q (both with the self-terms of v and t, which are built from the same samples):
    Mx = [[E e + E[g He2], E[e^2 z]/(alpha0 nu)], [., E e + E e^3/(alpha0 nu)^2]],
    Q  = E[e^2 (x.a)(x.b)],   x.theta = z,  x.n = e/(alpha0 nu) + g,  nu^2 = E e^2/alpha0,
    Sigma_ab = [(I + eta c1 Mx)^2]_ab + eta^2 s2 Q_ab/alpha0   (a, b in {v, t}).
The measure is then :func:`asymptotics.marchenko_pastur.channel_measure` with the sRF (r, c,
gamma). Not included: the correlation of Bv with the bulk Omega outside span(v, t), and the
non-MP bulk of small alpha0 (the step's noise confined to the n0-dimensional span of the batch).
"""

from __future__ import annotations

import math

import numpy as np

from .cget import ge_coefficients
from .functions import Function, get_function
from .marchenko_pastur import SpectralMeasure, channel_measure
from .quadrature import gaussian_nodes
from .srf import srf_mapping


def step_covariances(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float,
    delta: float = 0.0,
) -> tuple[float, float, float]:
    """(svv, svt, stt): d times the covariances of the bulk rows along (v, t) after one giant
    step (docs/DERIVATIONS.md §7). (c, 0, c) when c1 = 0 and the self-terms vanish."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    z, w = z[0], w[0]
    a = g(z) - k.mu0  # e = a + sqrt(delta) xi
    dl = delta
    E = lambda f: float(np.sum(w * f))  # noqa: E731
    e1 = E(a)
    e2 = E(a * a) + dl
    e3 = E(a**3 + 3 * a * dl)
    e4 = E(a**4 + 6 * a * a * dl) + 3 * dl * dl
    e2z = E((a * a + dl) * z)
    e2zz = E((a * a + dl) * z * z)
    e3z = E((a**3 + 3 * a * dl) * z)
    ehe2 = E(a * (z * z - 1))
    nu = math.sqrt(e2 / alpha0)
    if nu == 0.0 or eta == 0.0:
        return sp.c, 0.0, sp.c
    an = alpha0 * nu
    Mx = np.array([[e1 + ehe2, e2z / an], [e2z / an, e1 + e3 / (an * an)]])
    Q = np.array([[e2zz, e3z / an], [e3z / an, e4 / (an * an) + e2]])
    L = np.eye(2) + eta * k.c1 * Mx
    Sig = L @ L + eta * eta * k.s2 * Q / alpha0
    gam, rho = sp.gamma, sp.rho
    vv = np.array([gam, rho])  # v = gamma theta + rho n
    tt = np.array([rho, -gam])  # t = rho theta - gamma n
    return float(vv @ Sig @ vv), float(vv @ Sig @ tt), float(tt @ Sig @ tt)


def network_measure(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float, beta: float,
    delta: float = 0.0,
) -> SpectralMeasure:
    """Deterministic measure of the network's first layer after one giant step: MP bulk with
    the channels of :func:`step_covariances` and the sRF spike (docs/DERIVATIONS.md §7)."""
    s, g = get_function(sigma), get_function(target)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta)
    svv, svt, stt = step_covariances(s, g, alpha0=alpha0, eta=eta, delta=delta)
    return channel_measure(beta, sp.c, svv, svt, stt, r=sp.r, gamma=sp.gamma)
