"""The bulk-variance channel of the trained network (docs/DERIVATIONS.md §7, "The bulk-variance
channel").

The He2 part of sigma' (coefficient c2 = E[sigma'(z) He2(z)]) makes one giant step add
eta c2 (w0_k . u) w0_k to row k (u = n0^-1 sum_i e_i x_i = |u| v), so the bulk variance of row k,
c_k = |Pi w1_k|^2, is c + eps_k with eps_k = 2 eta c2 s |u| (w0_k . v) + (independent noise):
O(d^-1/2) per neuron, but aligned with the spike fluctuation (Bv)_k. Conditional on kappa the
mean of feature k is then mu0(k) + (Bv)_k k mu1(k) + eps_k nu(k), nu = d mu0/dc =
E sigma''(r k + sqrt(c) z)/2, and the part of eps along Bv, lam_v Bv with
lam_v = d Cov(eps_k, (Bv)_k)/sigma_vv, turns the mean function of the v channel into
k mu1(k) + lam_v nu(k). The kernels of ``fixed_point`` use kappa only through k mu1(k), so the
channel is passed as the effective kappa k + lam_v nu(k)/mu1(k) (``Problem.kappa_shift``).
Zero when c2 = 0 (relu, linear) and at eta = 0; the sRF model has no such channel.
"""

from __future__ import annotations

import functools

import numpy as np

from asymptotics.coefficients.cget import (
    ConditionalCoefficients,
    conditional_coefficients,
    ge_coefficients,
)
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gaussian_nodes
from asymptotics.step.srf import SpikeMapping, srf_mapping

_C2_NODES = 201


def he2_coefficient(sigma: str | Function) -> float:
    """c2 = E[sigma'(z) He2(z)] = E[sigma(z) He3(z)] (Stein), z ~ N(0, 1), by quadrature split
    at the kinks of sigma (the He3 form needs no derivative). Cached per sigma."""
    return _he2(get_function(sigma))


@functools.lru_cache(maxsize=64)
def _he2(s: Function) -> float:
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), tuple(s.kinks), n_smooth=_C2_NODES)
    z, w = z[0], w[0]
    return float(np.sum(w * s(z) * (z**3 - 3.0 * z)))


def row_variance_slope(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float,
    delta: float = 0.0,
) -> float:
    """lam_v = d Cov(eps_k, (Bv)_k)/sigma_vv: the regression of the bulk variances c_k - c of
    the trained rows on the spike fluctuations (Bv)_k (module docstring). With
    eps_k = 2 eta c2 s |u| (w0_k . v) and d Cov(w0_k . v, (Bv)_k) = v.L v (L = I + eta c1 M on
    the plane of docs/DERIVATIONS.md §7), lam_v = 2 eta c2 s |u| (v.L v)/sigma_vv. Cached."""
    return _slope(get_function(sigma), get_function(target), float(alpha0), float(eta),
                  float(delta))


@functools.lru_cache(maxsize=256)
def _slope(s: Function, g: Function, alpha0: float, eta: float, delta: float) -> float:
    from asymptotics.step.plane import (
        step_covariances,  # lazy: network pulls in the heavier measure code
    )

    c2 = he2_coefficient(s)
    if eta == 0.0 or abs(c2) < 1e-12:  # relu, linear: c2 = 0 up to rounding
        return 0.0
    k = ge_coefficients(s, g)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    svv, _, _, _ = step_covariances(s, g, alpha0=alpha0, eta=eta, delta=delta)
    vlv = sp.scale if k.c1 == 0.0 else _vlv(s, g, k, sp, alpha0=alpha0, eta=eta, delta=delta)
    return 2.0 * eta * c2 * sp.scale * sp.u_norm * vlv / svv


def _vlv(s: Function, g: Function, k, sp: SpikeMapping, *, alpha0: float, eta: float,
         delta: float) -> float:
    """v.(I + eta c1 Mx) v on the plane (theta*, n) of docs/DERIVATIONS.md §7 (Mx with the
    self-terms of the first batch, :func:`asymptotics.step.plane.step_plane`),
    v = gamma theta* + rho n."""
    from asymptotics.step.plane import step_plane

    Mx = step_plane(s, g, alpha0=alpha0, delta=delta)[0]
    vv = np.array([sp.gamma, sp.rho])
    return float(vv @ (np.eye(2) + eta * k.c1 * Mx) @ vv)


def kappa_shift(coefficients: ConditionalCoefficients, sigma: Function, target: Function, *,
                spike: SpikeMapping, lam_v: float, n_kappa: int = 120) -> np.ndarray | None:
    """lam_v nu(k)/mu1(k) on the kappa nodes of ``coefficients`` (None when lam_v = 0), with
    nu = d mu0/dc at (r, c) by a central difference of the cGET tables (relative step 1e-4)."""
    if lam_v == 0.0:
        return None
    kappa, nu = _nu(sigma, target, float(spike.r), float(spike.c), float(spike.gamma),
                    int(n_kappa))
    same = kappa is coefficients.kappa or np.array_equal(kappa, coefficients.kappa)
    if not (same or np.allclose(kappa, coefficients.kappa)):
        raise RuntimeError("the kappa rule of the bulk-variance channel differs from the tables'")
    mu1 = coefficients.mu1
    return lam_v * np.divide(nu, mu1, out=np.zeros_like(nu), where=np.abs(mu1) > 1e-200)


@functools.lru_cache(maxsize=256)
def _nu(s: Function, g: Function, r: float, c: float, gamma: float,
        n_kappa: int) -> tuple[np.ndarray, np.ndarray]:
    """(kappa nodes, nu = d mu0/dc on them) by a central difference of two cGET tables."""
    h = 1e-4 * c
    up, dn = (conditional_coefficients(s, g, r=r, c=c + d, gamma=gamma, n_kappa=n_kappa)
              for d in (h, -h))
    if not np.allclose(up.kappa, dn.kappa):
        raise RuntimeError("the kappa rule moved with c; the bulk-variance channel needs fixed "
                           "nodes")
    nu = (up.mu0 - dn.mu0) / (2.0 * h)
    nu.flags.writeable = False
    return up.kappa, nu
