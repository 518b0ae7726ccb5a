"""Spectrum of the first layer: the eigenvalues of W W^T (p x p, the squared singular values of
W) after one giant step (docs/THEORY.md §16.3) and after several steps or with a finite-support
readout (§16.6: :func:`steps_weights`, :func:`rowvar_solver`, :func:`lowrank_outliers`).

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
from asymptotics.spectra.bbp import (
    Cached,
    outlier_locations,
    overlap_vectors,
    signed_overlaps,
)
from asymptotics.spectra.branch import real_solution
from asymptotics.spectra.law import Outlier, Solver, bulk_support
from asymptotics.spectra.traces.srf_rowvar import RowvarSolver

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

    #: the support by grids and the outliers' real solutions by the path, not on the real
    #: branch (:mod:`asymptotics.spectra.branch`): continued on the exact resolvent, the branch
    #: met NaN forms far above the bulk, and the walk down from above missed a small top
    #: component of the one-step relu network's features that the grid finds
    real_branch = False

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
        x, ok = real_solution(sol, lam)
        m = float(sol.stieltjes(x)[0].real) if ok else math.nan
        y = beta * m
        if forms is None:
            vv = 1.0 / (1.0 + y * c)
            return m, vv, gamma * vv
        vv, tv = forms(y)
        return m, vv, tv

    def phis_(lam: float) -> tuple[np.ndarray, np.ndarray]:
        m, vv, _ = vform(lam)
        return np.array([[lam * r * r * p * (-m)]]), np.array([[vv / lam]])

    phis = Cached(phis_)

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


def rowvar_solver(c: np.ndarray, w: np.ndarray, beta: float) -> Solver:
    """The law of W W^T (p x p) for W = D^(1/2) G (docs/THEORY.md §16.6): G p x d with i.i.d.
    entries of variance 1/d, row variances D of law sum_j w_j delta(c_j), beta = p/d. Unknowns
    (m_t, m): the d x d transform m_t = 1/(-z + beta E[c/(1 + c m_t)]) and the p x p one
    m = -E[1/(z (1 + c m_t))] (the diagonal of the p x p resolvent, row i: -1/(z(1 + c_i m_t)))."""
    c, w = np.asarray(c, float), np.asarray(w, float) / np.sum(w)
    wc, c_, w_ = (w * c)[None, :], c[None, :], w[None, :]  # (the products of every call)

    def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        mt, m = x[:, 0], x[:, 1]
        q = 1.0 + c_ * mt[:, None]
        out = np.empty((x.shape[0], 2), dtype=np.result_type(x, z, 1.0))
        out[:, 0] = mt * (-z + beta * (wc / q).sum(axis=1)) - 1.0
        out[:, 1] = z * m + (w_ / q).sum(axis=1)
        return out

    def start(z: np.ndarray) -> np.ndarray:
        return np.stack([-1.0 / z, -1.0 / z], axis=1)

    sol = RowvarSolver(residual, start, lambda x: x[:, 1], scale=float(w @ c), c=c, w=w,
                       beta=beta)  # (the path's Broyden steps compiled)
    sol.atom = max(0.0, 1.0 - 1.0 / beta)
    return sol


def rowvar_bulk(c: np.ndarray, w: np.ndarray, beta: float) -> tuple[Solver, list, float]:
    """(solver, support intervals, atom) of :func:`rowvar_solver`."""
    sol = rowvar_solver(c, w, beta)
    hi = float(np.max(c)) * (1.0 + math.sqrt(beta)) ** 2 * 1.5
    return sol, bulk_support(sol, hi), sol.atom


def lowrank_outliers(mt: Callable[[float], float], edge: float, *, p: float, c: np.ndarray,
                     w: np.ndarray, left: np.ndarray, gram: np.ndarray
                     ) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Outliers of W W^T, W = D^(1/2) G + P Q^T (docs/THEORY.md §16.6): the left vectors are
    functions of the row's label (``left``: labels x r, the rows' labels of law ``w``, variance
    ``c`` per label), the right ones have Gram ``gram`` (r x r) and are generic for G. Then
    Phi1 = p E[l l^T/(1 + c m_t)], Phi2 = -m_t Q^T Q, with ``mt(lam)`` the d x d transform
    above the bulk's ``edge``. Returns (location, Q^T v, P^T u) per outlier, descending."""
    c, w = np.asarray(c, float), np.asarray(w, float) / np.sum(w)
    left, gram = np.asarray(left, float), np.asarray(gram, float)

    def phis_(lam: float) -> tuple[np.ndarray, np.ndarray]:
        m = mt(lam)
        if not math.isfinite(m):
            r = gram.shape[0]
            return np.full((r, r), np.nan), np.full((r, r), np.nan)
        q = w / (1.0 + c * m)
        return p * (left.T * q[None, :]) @ left, -m * gram

    phis = Cached(phis_)

    out = []
    for lam in outlier_locations(phis, edge, gram.shape[0]):
        if not math.isfinite(lam):
            continue
        qv, pu = signed_overlaps(phis, lam)
        out.append((lam, qv, pu))
    return out


def steps_weights(s: Function, target: object, *, alpha0: float, eta: float, delta: float,
                  beta: float, readout: object, steps: int, d: float | None
                  ) -> tuple[Solver, list, float, list[Outlier], dict]:
    """W W^T after ``steps`` fresh-batch giant steps with a finite-support readout, from the
    groups of :func:`asymptotics.multiindex.steps.steps_mapping` (docs/THEORY.md §12, §16.6):
    group g's rows are sqrt(c_g) G_i + s_g, so W = D^(1/2) G + P Q^T with P's columns the
    loadings of the spikes on the groups and Q an orthonormal basis of the spikes' span."""
    from asymptotics.multiindex.steps import steps_mapping

    tname = target if isinstance(target, str) else getattr(target, "name", None)
    if not isinstance(tname, str):
        raise TypeError(f"target must be an expression in z1..zk for of='weights' with steps > 1 "
                        f"or a non-constant readout, got {target!r}")
    mp = steps_mapping(s, tname, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout)
    state = mp.states[-1]
    fr = np.asarray(mp.readout.weights, float)
    eps = np.asarray(mp.readout.values, float)
    c = np.asarray(state.c, float)
    loadings, overlaps, rot = state.spiked_model()
    gamma = np.asarray(overlaps) @ np.asarray(rot).T  # V_a . theta_j (original targets)
    sol, support, atom = rowvar_bulk(c, fr, beta)
    params = dict(bulk=c.tolist(), fractions=fr.tolist(), loadings=np.asarray(loadings).tolist(),
                  learned_target_overlaps=gamma.tolist(), spike_gram=state.spike_gram.tolist())
    r, k = gamma.shape
    if not np.any(np.asarray(loadings) != 0.0):
        return sol, support, atom, [], params
    if d is None:  # every spike has strength ~ sqrt(p): the outliers diverge
        return sol, support, atom, diverging_outliers(gamma), params
    edge, mt = rowvar_top(c, fr, beta)
    p = beta * d
    L = np.asarray(loadings, float)
    outs = []
    for lam, qv, pu in lowrank_outliers(mt, edge, p=p, c=c, w=fr, left=L, gram=np.eye(r)):
        q = fr / (1.0 + c * mt(lam))
        E = (L.T * q[None, :]) @ L  # E[l l^T/(1 + c m_t)]
        y = np.linalg.solve(p * E, pu)
        ov = {}
        for name, t in (("mean", np.ones_like(fr)), ("readout", eps / math.sqrt(fr @ eps ** 2))):
            # t(g)/sqrt p against u: sqrt p E[t l^T/(1 + c m_t)] (p E)^-1 P^T u
            ov[name] = float(math.sqrt(p) * ((q * t) @ L) @ y) ** 2
        ov.update({f"learned {a + 1}": float(qv[a] ** 2) for a in range(r)})
        ov["learned span"] = float(qv @ qv)
        ov.update({f"target {j + 1}": float((gamma[:, j] @ qv) ** 2) for j in range(k)})
        a_top = int(np.argmax(np.abs(qv)))
        outs.append(Outlier(float(lam), f"learned {a_top + 1}", ov))
    return sol, support, atom, outs, params


def diverging_outliers(gamma: np.ndarray) -> list[Outlier]:
    """The p -> infinity outliers of the weights' r learned spikes (strength ~ sqrt(p), at
    infinity; THEORY.md §16.6): each one's squared overlaps, 1 with its learned direction and
    ``gamma[a, j]^2`` with target direction j."""
    r, k = gamma.shape
    return [Outlier(math.inf, f"learned {a + 1}",
                    {f"learned {a + 1}": 1.0,
                     **{f"target {j + 1}": float(gamma[a, j] ** 2) for j in range(k)}})
            for a in range(r)]


def rowvar_top(c: np.ndarray, w: np.ndarray, beta: float
               ) -> tuple[float, Callable[[float], float]]:
    """The upper edge of :func:`rowvar_solver`'s law and m_t(lam) above it, on the real axis:
    lam(m) = -1/m + beta E[c/(1 + c m)] is the inverse of m_t; from m = 0- it decreases to the
    edge (its first local minimum), and the physical m_t(lam > edge) lies between (Silverstein
    and Choi 1995)."""
    from scipy.optimize import brentq, minimize_scalar

    c, w = np.asarray(c, float), np.asarray(w, float) / np.sum(w)

    def lam_of(m: float) -> float:
        return -1.0 / m + beta * float(w @ (c / (1.0 + c * m)))

    lo = -1.0 / float(np.max(c))
    t = np.geomspace(1e-6, 1.0 - 1e-9, 4000)
    ms = lo * t
    ls = -1.0 / ms + beta * ((w[None, :] * c[None, :]) / (1.0 + c[None, :] * ms[:, None])
                             ).sum(axis=1)
    up = np.nonzero(np.diff(ls) > 0.0)[0]
    i = int(up[0]) if up.size else ls.size - 1
    a, b = ms[min(i + 1, ms.size - 1)], ms[max(i - 1, 0)]
    res = minimize_scalar(lam_of, bounds=(a, b), method="bounded",
                          options={"xatol": 1e-14 * abs(lo)})
    m_star = float(res.x)
    edge = lam_of(m_star)

    def mt(lam: float) -> float:
        if not lam > edge:
            return math.nan
        m_hi = -0.5 / (lam + beta * float(np.max(c)))  # lam_of(m_hi) >= 2 lam
        return float(brentq(lambda m: lam_of(m) - lam, m_star, m_hi, xtol=1e-15, rtol=1e-13))

    return edge, mt
