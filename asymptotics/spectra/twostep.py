"""The outliers of W2 after two giant steps with eta_t = eta_tilde_t p^(1/2 + a_t) and a Gaussian
readout, at the user's p and d (docs/THEORY.md §16.7; the setting of Moniri & Hassani 2026,
arXiv:2605.17767, and of validation/reports/SPECTRA.md).

Protocol (:mod:`asymptotics.multiindex.spikes`): rows of W0 on the unit sphere, a_i = g_i/sqrt p,
g_i ~ N(0, 1), full-batch steps on fresh batches of n = alpha0 d samples; the step on row i is
eps_t g_i (1/n) sum_mu e_mu sigma'(<w_i, x_mu>) x_mu with eps_t = eta_tilde_t p^(a_t - 1/2).
Given g, each row is the sum of

* a part common to all rows with the same g: eps1 mu1 g u (u = (1/n) sum y x, the first step's
  spike) and, from the second step, sum_k l_k(g) v_k with l_k(g) = eps2 g c_k(g) t(g)^k,
  t(g) = eps1 mu1 g, c_k(g) = E sigma^(k+1)(s(g) zeta)/k! and v_k = (1/n) sum e kappa^k x,
  kappa = <u, x> (Taylor order k of sigma'(<w1, x>) in the first step's shift t kappa);
* a row-specific part, isotropic at leading order: row variance c(g) (the scaled W0 row and the
  two steps' batch noise, of squared norm d/n E[e^2 (sigma' - E_zeta sigma')^2]).

So W2 = D^(1/2) G + P Q^T with P's columns functions of g and Q = (eps1 mu1 u, v_0, ..., v_K),
whose Gram has a mean part (Stein: E[h(z, kappa) x] lies in span(theta, u)) and the batch noise
part (d/n) E[e^2 kappa^(j+k)]: each v_k's noise is a distinct direction, which is what lets
several outliers leave the bulk. The outliers solve det(I - Phi1 Phi2) = 0
(:func:`asymptotics.spectra.weights.lowrank_outliers`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtri

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.core import checks
from asymptotics.spectra.law import Outlier, Solver, SpectralLaw, bulk_support, density_of
from asymptotics.spectra.weights import lowrank_outliers, rowvar_solver, rowvar_top

DEG_MAX = 8  # Hermite degrees of the readout scanned for an outlier's left vector
N_GH = 24  # Gauss-Hermite nodes per axis for the expectations
CHUNK = 32  # readout nodes per block
RANK_TOL = 1e-12  # eigenvalues of the right vectors' Gram kept (relative)
N_BINS = 60  # bins of the central 90% of the rows' variances


@dataclass(frozen=True)
class TwoStepWeights:
    """The singular values of W2 predicted at (p, d): ``outliers`` (descending, the leading one
    first), the Hermite ``degrees`` of their left vectors as functions of the readout g
    (degree m: the second step's Taylor order k = m - 1) and the ``channels`` so named, the
    bulk's upper ``edge`` (singular value) and the detection ``threshold`` edge + kappa c (c:
    the fitted spacing of s_j ~ edge - c j^(2/3) of the predicted quantiles, the rule of the
    simulations' counts); ``count`` = outliers above the threshold minus the leading one;
    ``theta_overlaps``: the squared overlap of each outlier's right vector with theta."""

    params: dict
    outliers: tuple
    channels: tuple
    degrees: tuple
    theta_overlaps: tuple
    edge: float
    threshold: float
    count: int
    _solver: Solver = field(repr=False, compare=False)

    def density(self, x: object) -> np.ndarray:
        """The bulk density of the eigenvalues of W2 W2^T (p x p) at x."""
        return density_of(self._solver, np.atleast_1d(np.asarray(x, dtype=np.float64)))


def _fit_window(m: int) -> int:
    return int(min(max(8, round(2 * m ** (1 / 3))), 40, max(3, m // 4)))


def two_step_weights(sigma: str | Function, target: str | Function = "linear", *, a1: float,
                     a2: float, d: float, eta1: float = 1.0, eta2: float = 1.0,
                     beta: float = 0.5, alpha0: float = 1.0, delta: float = 0.0,
                     kappa: float = 2.0, n_g: int | None = None, n_gh: int = N_GH
                     ) -> TwoStepWeights:
    """The law of :func:`two_step_law` (what ``asymptotics.spectrum(of="weights", steps=2,
    readout="gaussian", exponents=(a1, a2), eta=(eta1, eta2), d=d)`` returns) as a
    :class:`TwoStepWeights`: singular values instead of eigenvalues of W2 W2^T."""
    law = two_step_law(sigma, target, a1=a1, a2=a2, d=d, eta1=eta1, eta2=eta2, beta=beta,
                       alpha0=alpha0, delta=delta, kappa=kappa, n_g=n_g, n_gh=n_gh)
    q = law.params
    keep = ("sigma", "target", "a1", "a2", "d", "p", "eta1", "eta2", "beta", "alpha0", "delta",
            "kappa", "n_g", "n_gh")
    return TwoStepWeights({k: q[k] for k in keep},
                          tuple(math.sqrt(o.location) for o in law.outliers),
                          tuple(o.channel for o in law.outliers), tuple(q["degrees"]),
                          tuple(o.overlaps["target 1"] for o in law.outliers),
                          math.sqrt(law.edge), math.sqrt(q["threshold"]), int(q["count"]),
                          law._solver)


def two_step_law(sigma: str | Function, target: str | Function = "linear", *, a1: float,
                 a2: float, d: float, eta1: float = 1.0, eta2: float = 1.0,
                 beta: float = 0.5, alpha0: float = 1.0, delta: float = 0.0,
                 kappa: float = 2.0, n_g: int | None = None, n_gh: int = N_GH) -> SpectralLaw:
    """The eigenvalues of W2 W2^T at the given d (module docstring) as a :class:`SpectralLaw`:
    its bulk (support's top edge the exact real-axis one), the outliers (channel: the order of
    g of the left vector; overlap ``target 1``: the right vector with theta) and in ``params``
    the left vectors' Hermite ``degrees``, the detection ``threshold`` (eigenvalue) and the
    ``count`` of outliers above it but the leading one. ``target``: a single-index function
    of z (unit-variance teacher direction); ``kappa``: the detection margin in fitted spacings
    (2, as the simulations'); ``n_g``: the readout's quantile nodes (default p: the rows
    present), ``n_gh``: Gauss-Hermite nodes per axis for the expectations."""
    a1 = checks.real("a1", a1, 0.0, 0.5, hi_open=True)
    a2 = checks.real("a2", a2, 0.0, 0.5, hi_open=True)
    d = checks.real("d", d, 8.0)
    eta1 = checks.positive("eta1", eta1, allow_zero=True)
    eta2 = checks.positive("eta2", eta2, allow_zero=True)
    beta = checks.positive("beta", beta)
    alpha0 = checks.positive("alpha0", alpha0)
    delta = checks.positive("delta", delta, allow_zero=True)
    n_g = int(round(beta * d)) if n_g is None else checks.integer("n_g", n_g, 20)
    n_gh = checks.integer("n_gh", n_gh, 8)
    s, y_fn = get_function(sigma), get_function(target)
    p = float(round(beta * d))
    e1, e2 = eta1 * p ** (a1 - 0.5), eta2 * p ** (a2 - 0.5)
    x, w = gauss_hermite(n_gh)
    # first step: mu1 = E sigma', omega1 = E y E sigma'' (the W0-row scaling), nu1 its noise
    ds = s.derivative(x)
    mu1 = float(w @ ds)
    Ey, Eyz, Ey2 = float(w @ y_fn(x)), float(w @ (y_fn(x) * x)), float(w @ y_fn(x) ** 2)
    om1 = Ey * float(w @ (ds * x))
    nu1 = (Ey2 + delta) * float(w @ (ds - mu1) ** 2) / alpha0
    U, rho = Eyz ** 2 + (Ey2 + delta) / alpha0, Eyz  # |u|^2 and <u, theta>
    # the readouts: g at the p expected order statistics (quantile midpoints): the rows present
    G = ndtri((np.arange(n_g) + 0.5) / n_g)
    wg = np.full(n_g, 1.0 / n_g)
    s2 = (1.0 + e1 * G * om1) ** 2 + (e1 * G) ** 2 * nu1  # Var <w1_i, x> given kappa
    sg, tg = np.sqrt(s2), e1 * mu1 * G
    # (z, kappa) with kappa = rho z + sqrt(U - rho^2) xi; zeta the row's own coordinate
    z, xi = np.meshgrid(x, x, indexing="ij")
    wz = np.outer(w, w).ravel()
    z, xi = z.ravel(), xi.ravel()
    kap = rho * z + math.sqrt(max(U - rho * rho, 0.0)) * xi
    # per g: f1's share E_zeta sigma, h_g(kappa) = E_zeta sigma', its variance, E[e sigma'']
    f1 = np.zeros(kap.size)
    hg = np.empty((n_g, kap.size))
    var = np.empty((n_g, kap.size))
    es2 = np.empty((n_g, kap.size))
    for i0 in range(0, n_g, CHUNK):
        sl = slice(i0, i0 + CHUNK)
        a_ = sg[sl, None, None] * x[None, :, None] + tg[sl, None, None] * kap[None, None, :]
        v, d1 = s.value_and_derivative(a_)
        f1 += (wg[sl] * G[sl]) @ np.einsum("j,gjm->gm", w, v)
        hg[sl] = np.einsum("j,gjm->gm", w, d1)
        var[sl] = np.einsum("j,gjm->gm", w, d1 * d1) - hg[sl] ** 2
        es2[sl] = np.einsum("j,gjm->gm", w * x, d1) / sg[sl, None]  # E_zeta sigma'' (Stein)
    e = y_fn(z) - f1  # the second step's residual, f1 = mean over rows of g sigma(<w1, x>)
    phi = e2 * G * ((es2 * e[None, :]) @ wz)
    nu2 = ((e * e + delta)[None, :] * var) @ wz / alpha0
    c = (1.0 + phi) ** 2 * s2 + (e2 * G) ** 2 * nu2  # the rows' variances
    # the common right vector of the rows with readout g: R(g) = eps1 mu1 g u + eps2 g V(g),
    # V(g) = (1/n) sum e h_g(kappa) x; Gram: the mean part (Stein in (z, kappa)) and the batch
    # noise (d/n) E[(e^2 + delta) h_g h_g'] (a distinct direction per g)
    Sig = np.array([[1.0, rho], [rho, U]])
    eh = hg * e[None, :]
    mom = np.stack([(eh * z[None, :]) @ wz, (eh * kap[None, :]) @ wz], axis=1)  # n_g x 2
    bm = np.linalg.solve(Sig, mom.T).T
    a0 = e1 * mu1
    # R(g) in the orthonormal coordinates (theta, u_perp) and the noise coordinates
    Lc = np.linalg.cholesky(Sig)  # <b Sig b'> = (Lc^T b).(Lc^T b')
    mean = G[:, None] * (a0 * np.array([[rho, math.sqrt(max(U - rho * rho, 0.0))]])
                         + e2 * bm @ Lc)
    noise = (e2 * G)[:, None] * hg * np.sqrt((e * e + delta) * wz / alpha0)[None, :]
    F = np.hstack([mean, noise])  # R(g_j) . R(g_k) = (F F^T)_jk
    # P Q^T with orthonormal right vectors: left functions of g, l(g_j) = (F V S)_j.
    # the right singular vectors of diag(wg)^(1/2) F (thin SVD: n_g x (2 + n_gh^2) costs
    # n_g^2 n_gh^2, where the eigenvectors of its Gram cost n_gh^6), the Gram's eigenvalues s^2
    _, sv, Vt = np.linalg.svd(F * np.sqrt(wg)[:, None], full_matrices=False)
    basis = Vt[sv * sv > RANK_TOL * sv[0] ** 2].T  # the right vectors in F's coordinates
    left = F @ basis  # n_g x r; coordinate 0 of F is theta
    # the bulk: the rows' variances, the central 90% merged into equal-count bins
    cn, cw = _compress(c, wg)
    edge2, mt = rowvar_top(cn, cw, beta)
    sol = rowvar_solver(cn, cw, beta)
    params = dict(sigma=s.name, target=y_fn.name, a1=a1, a2=a2, d=d, p=p, eta1=eta1, eta2=eta2,
                  beta=beta, alpha0=alpha0, delta=delta, kappa=kappa, n_g=n_g, n_gh=n_gh)
    outs = lowrank_outliers(mt, edge2, p=p, c=c, w=wg, left=left, gram=np.eye(left.shape[1]))
    locs = tuple(math.sqrt(o[0]) for o in outs)
    theta = tuple(float((basis[0] @ o[1]) ** 2) for o in outs)  # <v, theta>^2
    # the left vector as a function of g: u(g) ~ l(g) . Phi1^-1 P^T u / (1 + c(g) m_t)
    H = np.stack([_hermite(G, m) for m in range(1, DEG_MAX + 1)])
    degs = []
    for lam, _, pu in outs:
        q = wg / (1.0 + c * mt(lam))
        y = np.linalg.solve((left.T * q[None, :]) @ left, pu)
        u = (left @ y) / (1.0 + c * mt(lam))
        degs.append(int(np.argmax(np.abs(H @ (wg * u)))) + 1)
    degs = tuple(degs)
    # the detection threshold: fit s_j ~ E - c j^(2/3) to the predicted quantiles
    m = int(min(p, d))
    J = _fit_window(m)
    j = np.arange(1, J + 1)
    lam_j = _top_quantiles(sol, edge2, (j - 0.5) / p)
    A = np.column_stack([np.ones(J), -j ** (2 / 3)])
    (E, cc), *_ = np.linalg.lstsq(A, np.sqrt(lam_j), rcond=None)
    thr = float(E + kappa * cc)
    count = max(0, sum(v > thr for v in locs) - 1)
    chans = tuple("step 1 + order 0" if m == 1 else f"order {m - 1}" for m in degs)
    support = bulk_support(sol, float(np.max(cn)) * (1.0 + math.sqrt(beta)) ** 2 * 1.5)
    if support:  # the top edge: the exact real-axis one
        support[-1] = (support[-1][0], float(edge2))
    params.update(steps=2, readout="gaussian", exponents=(a1, a2), eta=(eta1, eta2),
                  degrees=list(degs), threshold=thr * thr, count=int(count))
    outs = tuple(Outlier(o[0], ch, {"target 1": th})
                 for o, ch, th in zip(outs, chans, theta, strict=True))
    ok = bool(support)
    return SpectralLaw(of="weights", matrix="W W^T (p x p): the squared singular values of the "
                       "first layer after two steps", model="network", params=params,
                       support=tuple(support), atom=float(sol.atom), outliers=outs, d=d,
                       status="converged" if ok else "failed",
                       message="" if ok else "the bulk's support was not found", _solver=sol)


def _top_quantiles(sol: Solver, top: float, q: np.ndarray) -> np.ndarray:
    """The eigenvalues x with mass q above them (q small: near the top edge ``top``), from the
    density integrated down from the edge on a grid refined toward it."""
    for frac in (0.1, 0.25, 0.5, 1.0):
        a = top * (1.0 - frac)
        th = np.linspace(0.0, 0.5 * math.pi, 161)
        xg = top - (top - a) * (1.0 - np.cos(th))  # dense near the edge
        f = density_of(sol, xg) * (top - a) * np.sin(th)
        mass = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(th))])
        if mass[-1] >= q.max():
            break
    return np.interp(q, mass, xg)


def _hermite(x: np.ndarray, m: int) -> np.ndarray:
    """The normalised probabilists' Hermite polynomial He_m(x)/sqrt(m!)."""
    h0, h1 = np.ones_like(x), x.copy()
    if m == 0:
        return h0
    for k in range(2, m + 1):
        h0, h1 = h1, x * h1 - (k - 1) * h0
    return h1 / math.sqrt(math.factorial(m))


def _compress(c: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The law sum_j w_j delta(c_j) with its central 90% merged into N_BINS equal-mass bins
    (their mean c): the tails, which set the bulk's edges, are kept node by node."""
    o = np.argsort(c)
    c, w = c[o], w[o]
    cum = np.cumsum(w) / np.sum(w)
    lo, hi = np.searchsorted(cum, 0.05), np.searchsorted(cum, 0.95)
    if hi - lo <= N_BINS:
        return c, w
    mid = np.array_split(np.arange(lo, hi), N_BINS)
    cm = np.array([np.average(c[i], weights=w[i]) for i in mid])
    wm = np.array([w[i].sum() for i in mid])
    return np.concatenate([c[:lo], cm, c[hi:]]), np.concatenate([w[:lo], wm, w[hi:]])
