"""Spectrum of the first layer after one giant step: the eigenvalues of W1 W1^T (p x p, the squared
singular values of W1), docs/THEORY.md §16.4.

W1 = B + r 1_p v^T with bulk rows of population covariance C/d (given the first batch they are
i.i.d.): the bulk law is the generalised Marchenko-Pastur law of C (Silverstein and Bai 1995),
    m(z) (-z + E_H[t/(1 + beta t m(z))]) = 1,
H the spectral law of C: c delta_c for the sRF surrogate (W1 = sqrt(c) W0 + r 1 v^T), the network
theory's population law (C = (I + eta c1 M)^2 + eta^2 (s2 - c1^2) Q/alpha0, the Gauss rule of
:func:`asymptotics.measures.population_quadrature.population_rules`) for the trained network.
Outlier: P = r 1_p, Q = v, with 1^T (lam - B B^T)^-1 1 = -p m(lam) and
v^T (lam - B^T B)^-1 v = v^T (I + beta m(lam) C)^-1 v / lam (the forms of (C - zeta)^-1 on v and
theta* from :func:`asymptotics.measures.resolvent_kernels.dyson_forms`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function
from asymptotics.measures.population_quadrature import TOL, law_nodes, population_rules
from asymptotics.measures.resolvent_kernels import dyson_forms
from asymptotics.spectra.bbp import outlier_locations, overlap_vectors
from asymptotics.spectra.law import Outlier, Solver, bulk_support

N_POP = 16  # Gauss nodes of the population law of the network's bulk rows (its default)


def gmp_solver(nodes: np.ndarray, weights: np.ndarray, beta: float) -> Solver:
    """The generalised MP law of B B^T, B = Z C^(1/2)/sqrt(d) (p x d), C with spectral law
    sum_j weights_j delta(nodes_j)."""
    t, w = np.asarray(nodes, float), np.asarray(weights, float) / np.sum(weights)

    def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        m = x[:, 0]
        s = (w[None, :] * t[None, :] / (1.0 + beta * t[None, :] * m[:, None])).sum(axis=1)
        return (m * (-z + s) - 1.0)[:, None]

    def start(z: np.ndarray) -> np.ndarray:
        return (-1.0 / z)[:, None]

    return Solver(residual, start, lambda x: x[:, 0], scale=float(w @ t))


def network_gmp_solver(s: Function, g: Function, *, alpha0: float, eta: float, delta: float,
                       beta: float, mean: float) -> Solver:
    """The generalised MP law of the network's bulk with the exact Stieltjes transform of the
    population law, s_H(zeta) = tr (C - zeta)^-1/d (the resolvent kernel of the network theory):
    E_H[t/(1 + beta t m)] = (1 - s_H(-1/(beta m))/(beta m))/(beta m). (A Gauss rule of H would
    put spurious small components beside the bulk, one per tail node.)"""
    k = ge_coefficients(s, g)
    z, e, w = law_nodes(g, k.mu0, delta)
    a = eta * k.c1
    bq = eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0
    psi = 1.0 / alpha0

    def s_h(zeta: np.ndarray) -> np.ndarray:
        out, _, ok = dyson_forms(np.ascontiguousarray(zeta), e, z, w, a, bq, psi, TOL, 20000)
        return np.where(ok, out[:, 0], np.nan)

    def residual(x: np.ndarray, zz: np.ndarray) -> np.ndarray:
        m = x[:, 0]
        bm = beta * m
        return (-zz * m + (1.0 - s_h(-1.0 / bm) / bm) / beta - 1.0)[:, None]

    return Solver(residual, lambda zz: (-1.0 / zz)[:, None], lambda x: x[:, 0], scale=mean)


class PolishedSolver(Solver):
    """The exact solver started from a cheap approximate one at the final z (a few Newton steps
    instead of the whole path); where that fails (not converged, or a change above 10%), the
    exact path for those points only."""

    def __init__(self, exact: Solver, approx: Solver) -> None:
        super().__init__(exact.residual, exact.start, exact.stieltjes, exact.scale)
        self.approx = approx

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        zt = z.real + 1j * np.maximum(z.imag, 1e-10 * self.scale)
        x0, ok0 = self.approx.solve(z)
        x, ok = self._newton(x0, zt)
        m, m0 = self.stieltjes(x), self.stieltjes(x0)
        ok &= ok0 & np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        ok &= np.abs(m - m0) <= 0.1 * np.abs(m0)
        bad = np.nonzero(~ok)[0]
        if bad.size:
            xb, okb = Solver.solve(self, z[bad])
            x[bad], ok[bad] = xb, okb
        return x, ok


def population(s: Function, g: Function, *, alpha0: float, eta: float, delta: float,
               model: str) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, weights) of the spectral law of C."""
    if model == "network" and eta > 0.0:
        rules = population_rules(s, g, float(alpha0), float(eta), float(delta), N_POP)
        keep = rules.weights[0] > 0.0
        return rules.nodes[0][keep], rules.weights[0][keep]
    from asymptotics.step.srf import srf_mapping

    c = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta).c
    return np.array([c]), np.array([1.0])


def network_forms(s: Function, g: Function, *, alpha0: float, eta: float, delta: float
                  ) -> Callable[[float], tuple[float, float]]:
    """y -> (v.(I + y C)^-1.v, theta*.(I + y C)^-1.v) for the network's C (real y < 0 with
    -1/y above the spectrum of C)."""
    k = ge_coefficients(s, g)
    z, e, w = law_nodes(g, k.mu0, delta)
    a = eta * k.c1
    bq = eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0
    psi = 1.0 / alpha0
    mu1 = float(w @ (e * z))
    un2 = mu1 * mu1 + psi * float(w @ (e * e))
    un = math.sqrt(un2)

    def forms(y: float) -> tuple[float, float]:
        zeta = np.array([-1.0 / y + 0j])
        out, _, ok = dyson_forms(zeta, e, z, w, a, bq, psi, TOL, 20000)
        if not ok[0]:
            return math.nan, math.nan
        tu, uu = out[0, 2].real, out[0, 3].real
        return uu / un2 / y, tu / un / y

    return forms


def weights_outliers(sol: Solver, edge: float, *, r: float, gamma: float, c: float | None,
                     beta: float, d: float | None,
                     forms: Callable[[float], tuple[float, float]] | None) -> list[Outlier]:
    """The spike's outlier of W1 W1^T at width p = beta d (d = None: it diverges like r^2 p,
    its vectors align with (1_p, v)). ``c``: the sRF bulk (C = c I) or None with ``forms``."""
    if r == 0.0:
        return []
    if d is None:
        return [Outlier(math.inf, "learned 1",
                        {"mean": 1.0, "learned 1": 1.0, "target 1": gamma * gamma})]
    p = beta * d

    def vform(lam: float) -> tuple[float, float, float]:
        m = float(sol.m(np.array([lam + 0j]))[0].real)
        y = beta * m
        if forms is None:
            vv = 1.0 / (1.0 + y * c)
            return m, vv, gamma * vv
        vv, tv = forms(y)
        return m, vv, tv

    def phis(lam: float) -> tuple[np.ndarray, np.ndarray]:
        m, vv, _ = vform(lam)
        return np.array([[lam * r * r * p * (-m)]]), np.array([[vv / lam]])

    out = []
    for lam in outlier_locations(phis, edge, 1):
        qv, pu = overlap_vectors(phis, lam)
        _, vv, tv = vform(lam)
        ov_v = float(qv[0])
        out.append(Outlier(lam, "learned 1", {"mean": float(pu[0] / (r * r * p)),
                                             "learned 1": ov_v,
                                             "target 1": float(ov_v * (tv / vv) ** 2)}))
    return out


def weights_bulk(nodes: np.ndarray, wts: np.ndarray, beta: float, exact: Solver | None = None
                 ) -> tuple[Solver, list, float]:
    """(solver, support intervals, atom at 0 = max(0, 1 - 1/beta)); ``exact``: a solver to use
    instead of the one of the rule (nodes, wts), which then only bounds the spectrum."""
    sol = gmp_solver(nodes, wts, beta)
    if exact is not None:
        sol = PolishedSolver(exact, sol)
    sol.atom = max(0.0, 1.0 - 1.0 / beta)
    hi = float(np.max(nodes)) * (1.0 + math.sqrt(beta)) ** 2 * 1.5
    return sol, bulk_support(sol, hi), sol.atom
