"""The network's giant step on the plane (theta*, n) (docs/DERIVATIONS.md §7).

One giant step at large alpha0: row k of W1 minus the spike is
    b_k = (I + eta c1 M) w0_k + zeta-noise,   M = n0^-1 sum_i e_i x_i x_i^T,
whose covariance over rows is (c I + D)/d, D supported on span(v, t) (t the part of theta*
orthogonal to v). Projected on the plane (theta*, n), n the unit noise direction of
u = n0^-1 sum_i e_i x_i, M acts as the 2x2 matrix Mx and its spread outside the plane gives the
2x2 second moment Q (both with the self-terms of v and t, which are built from the same samples):
    Mx = [[E e + E[g He2], E[e^2 z]/(alpha0 nu)], [., E e + E e^3/(alpha0 nu)^2]],
    Q  = E[e^2 (x.a)(x.b)],   x.theta = z,  x.n = e/(alpha0 nu) + g,  nu^2 = E e^2/alpha0,
    Sigma_ab = [(I + eta c1 Mx)^2]_ab + eta^2 s2 Q_ab/alpha0   (a, b in {v, t}).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gauss_hermite, gaussian_nodes
from asymptotics.step.srf import srf_mapping


def step_plane(
    sigma: str | Function, target: str | Function, *, alpha0: float, delta: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The step's moments on the plane (theta*, n) of docs/DERIVATIONS.md §7, with the self-terms
    of the first batch: (Mx, Q, selfn), Mx_ab = E[e x_a x_b], Q_ab = E[e^2 x_a x_b] with
    x.theta* = z, x.n = e/(alpha0 nu) + g (nu^2 = E e^2/alpha0), and selfn = the parts of
    n.M theta*, n.M n from the sample's own term in u. None when E e^2 = 0."""
    return _step_plane(get_function(sigma), get_function(target), float(alpha0), float(delta))


@functools.lru_cache(maxsize=256)
def _step_plane(
    s: Function, g: Function, alpha0: float, delta: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Cached body of :func:`step_plane` (read-only arrays)."""
    k = ge_coefficients(s, g)
    zq, wq = gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    # tensor grid over (z, label noise xi, g): e = g(z) - mu0 + sqrt(delta) xi; the integrands
    # below are polynomials of degree <= 4 in xi and <= 2 in g, which 3 Gauss-Hermite nodes
    # integrate exactly (one node xi = 0 without label noise)
    gh, wh = gauss_hermite(3)
    xh, wx = (gh, wh) if delta > 0.0 else (np.zeros(1), np.ones(1))
    z = zq[0][:, None, None]
    e = (g(zq[0]) - k.mu0)[:, None, None] + math.sqrt(delta) * xh[None, :, None]
    gg = gh[None, None, :]
    w = wq[0][:, None, None] * wx[None, :, None] * wh[None, None, :]
    E = lambda f: float(np.sum(w * f))  # noqa: E731
    nu = math.sqrt(E(e * e) / alpha0)
    if nu == 0.0:
        return None
    an = alpha0 * nu
    X = (z, e / an + gg)  # x.n with the self-term of the sample in u
    Mx = np.array([[E(e * X[a] * X[b]) for b in range(2)] for a in range(2)])
    Q = np.array([[E(e * e * X[a] * X[b]) for b in range(2)] for a in range(2)])
    out = (Mx, Q, np.array([E(e * e * z) / an, E(e**3) / (an * an)]))
    for arr in out:
        arr.flags.writeable = False
    return out


def step_covariances(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float,
    delta: float = 0.0,
) -> tuple[float, float, float, tuple[np.ndarray, np.ndarray] | None]:
    """(svv, svt, stt, extra): d times the covariances of the bulk rows along (v, t) after one
    giant step, and (cvu, Cuu), those with the two bulk directions outside span(v, t) that the
    step correlates with them (docs/DERIVATIONS.md §7). (c, 0, c, None) when eta = 0."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    plane = step_plane(s, g, alpha0=alpha0, delta=delta)
    if plane is None or eta == 0.0:
        return sp.c, 0.0, sp.c, None
    Mx, Q, selfn = plane
    L = np.eye(2) + eta * k.c1 * Mx
    # the spread of M a outside the plane, Gram Q/alpha0 over all directions orthogonal to
    # theta*, already holds the self-term components along n that Mx carries: remove them
    # (selfn = the parts of n.M theta*, n.M n coming from the sample's own term in u)
    Grest = Q / alpha0 - np.outer(selfn, selfn)
    ezeta2 = max(k.s2 - k.c1 * k.c1, 0.0)
    Sig = L @ L + (eta * k.c1) ** 2 * Grest + eta * eta * ezeta2 * Q / alpha0
    gam, rho = sp.gamma, sp.rho
    vv = np.array([gam, rho])  # v = gamma theta + rho n
    tt = np.array([rho, -gam])  # t = rho theta - gamma n
    # bulk directions outside the plane: the linear part of the step, I + eta c1 M, maps the
    # plane into two rest directions R a = eta c1 (M a)_rest with Gram G = (eta c1)^2 Q/alpha0;
    # in the (v, t) basis: Cov(b_u, b_p) = Rc (Lp + s), Cov(b_u) = Rc Rc^T + c (Rc^T Rc = G)
    P = np.stack([vv, tt], axis=1)
    Lp = P.T @ L @ P
    Gm = (eta * k.c1) ** 2 * (P.T @ Grest @ P)
    w_, V_ = np.linalg.eigh(Gm)
    Rc = (V_ * np.sqrt(np.maximum(w_, 0.0))) @ V_.T
    cvu = Rc @ (Lp + sp.scale * np.eye(2))  # rows u, columns (v, t)
    cuu = Rc @ Rc.T + sp.c * np.eye(2)
    Sp = P.T @ Sig @ P
    return (float(Sp[0, 0]), float(Sp[0, 1]), float(Sp[1, 1]), (cvu, cuu))


