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
The rank-one measure is then :func:`asymptotics.marchenko_pastur.channel_measure` with the sRF
(r, c, gamma) (:func:`network_measure`; it lacks the correlation of Bv with the bulk outside
span(v, t) and the non-MP bulk of small alpha0). The default network theory,
:func:`population_measure`, keeps the whole population covariance C of the bulk rows: a
generalised MP bulk of its spectrum and channels weighted over its eigenvectors, evaluated on a
fixed-seed sampled first batch (a numerical-integration device, cached per setting).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .cget import ge_coefficients
from .functions import Function, get_function
from .marchenko_pastur import _EMPTY, SpectralMeasure, channel_measure
from .quadrature import gauss_hermite, gaussian_nodes
from .srf import srf_mapping


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
    zq, wq = gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    gh, wh = gauss_hermite(12)  # exact for the polynomials in (xi, g) below
    # tensor grid over (z, label noise xi, g): e = g(z) - mu0 + sqrt(delta) xi
    z = zq[0][:, None, None]
    e = (g(zq[0]) - k.mu0)[:, None, None] + math.sqrt(delta) * gh[None, :, None]
    gg = gh[None, None, :]
    w = wq[0][:, None, None] * wh[None, :, None] * wh[None, None, :]
    E = lambda f: float(np.sum(w * f))  # noqa: E731
    e2 = E(e * e)
    nu = math.sqrt(e2 / alpha0)
    if nu == 0.0 or eta == 0.0:
        return sp.c, 0.0, sp.c, None
    an = alpha0 * nu
    xn = e / an + gg  # x.n with the self-term of the sample in u
    X = (z, xn)
    Mx = np.array([[E(e * X[a] * X[b]) for b in range(2)] for a in range(2)])
    Q = np.array([[E(e * e * X[a] * X[b]) for b in range(2)] for a in range(2)])
    L = np.eye(2) + eta * k.c1 * Mx
    # the spread of M a outside the plane, Gram Q/alpha0 over all directions orthogonal to
    # theta*, already holds the self-term components along n that Mx carries: remove them
    # (selfn = the parts of n.M theta*, n.M n coming from the sample's own term in u)
    selfn = np.array([E(e * e * z) / an, E(e**3) / (an * an)])
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


def network_measure(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float, beta: float,
    delta: float = 0.0, with_rest: bool = False,
) -> SpectralMeasure:
    """Deterministic measure of the network's first layer after one giant step: MP bulk with
    the channels of :func:`step_covariances` and the sRF spike (docs/DERIVATIONS.md §7).
    ``with_rest`` adds the two bulk directions outside span(v, t) that the linear part of the
    step correlates with b.v (a tested variant that does worse against simulation; see §7)."""
    s, g = get_function(sigma), get_function(target)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta)
    svv, svt, stt, extra = step_covariances(s, g, alpha0=alpha0, eta=eta, delta=delta)
    if not with_rest:
        extra = None
    return channel_measure(beta, sp.c, svv, svt, stt, extra=extra, r=sp.r, gamma=sp.gamma)


def population_measure(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float, beta: float,
    delta: float = 0.0, size: int | None = None, batches: int | None = None, seed: int = 0,
    mp_bulk: bool = False,
) -> SpectralMeasure:
    """Measure of the network's first layer from the population covariance of its bulk rows,
    C = (I + eta c1 M)^2 + eta^2 E zeta^2 Q/alpha0 (docs/DERIVATIONS.md §7, 'the exact
    structure'): Sigma = Pi C Pi = sum_j lam_j e_j e_j^T; the bulk of Omega is the generalised
    MP law of the population spectrum {lam_j} (``mp_bulk``: MP(c) instead), and every channel a
    weighted sum over the e_j (Bv = (B Pi) b + eps, b = Sigma^+ Pi C v).

    M and Q (weighted Wishart matrices of ratio 1/alpha0 with the spike theta* and the
    sample-built direction v) enter only through this weighted spectral measure, which is
    evaluated by a numerical-integration device: ``batches`` first batches of dimension ``size``
    drawn with the fixed ``seed`` (deterministic output; its error against larger sizes is in
    docs/DERIVATIONS.md §7). ``size=None``: 400 for alpha0 <= 20, 400 (20/alpha0)^(1/3) (at
    least 100) above, which caps the cost 2 alpha0 size^3 of M and Q at that of alpha0 = 20;
    ``batches=None``: min(8, max(2, ceil(8/alpha0))), more batches where they are cheap.
    The spike (r, gamma) is the sRF one, c = tr(Sigma)/size."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    if eta == 0.0:
        return channel_measure(beta, sp.c, sp.c, 0.0, sp.c, r=sp.r, gamma=sp.gamma)
    if size is None:
        size = 400 if alpha0 <= 20.0 else max(100, round(400 * (20.0 / alpha0) ** (1 / 3)))
    if batches is None:
        batches = min(8, max(2, math.ceil(8.0 / alpha0)))
    if int(size) < 2 or int(batches) < 1:
        raise ValueError(f"size must be >= 2 and batches >= 1, got {size}, {batches}")
    lam, F, G = _population_atoms(s, g, float(alpha0), float(eta), float(delta), int(size),
                                  int(batches), int(seed))
    c = float(lam.mean())
    if mp_bulk:
        return SpectralMeasure("channels", float(beta), c, _EMPTY, F, lam, G, r=sp.r,
                               gamma=sp.gamma)
    return SpectralMeasure("population", float(beta), c, lam, F, lam, G, r=sp.r,
                           gamma=sp.gamma)


@functools.lru_cache(maxsize=64)
def _population_atoms(
    s: Function, g: Function, alpha0: float, eta: float, delta: float, size: int, batches: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sampled device of :func:`population_measure` (independent of beta, cached): the
    population eigenvalues lam_j and the weights F = (Var eps, b.e_j), G = (t.e_j)."""
    k = ge_coefficients(s, g)
    rng = np.random.default_rng(seed)
    d = int(size)
    n0 = max(int(round(alpha0 * d)), 1)
    lams, avals, tvals, eps = [], [], [], []
    ezeta2 = max(k.s2 - k.c1 * k.c1, 0.0)
    for _ in range(batches):
        X = rng.standard_normal((n0, d))
        e = g(X[:, 0]) - k.mu0 + math.sqrt(delta) * rng.standard_normal(n0)
        batch = _population_batch if n0 < d - 1 else _population_batch_direct
        lam, a_, t_, ep = batch(X, e, eta * k.c1, eta * eta * ezeta2 / alpha0)
        lams.append(lam)
        avals.append(a_)
        tvals.append(t_)
        eps.append(ep)
    lam = np.concatenate(lams)
    w = 1.0 / math.sqrt(batches)  # each batch's columns carry weight 1/batches
    F = np.concatenate([[float(np.mean(eps))], w * np.concatenate(avals)])
    G = w * np.concatenate(tvals)
    return lam, F, G


def _weighted_gram(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """X^T diag(w) X for real weights of either sign, as two symmetric rank-k products
    (BLAS syrk: half the flops of a general product)."""
    r = np.sqrt(np.abs(w))[:, None] * X
    pos = w > 0
    P, N = r[pos], r[~pos]
    out = P.T @ P
    if N.shape[0]:
        out -= N.T @ N
    return out


def _population_batch_direct(
    X: np.ndarray, e: np.ndarray, a: float, bq: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One batch of the device in the full dimension d (theta* = the first coordinate):
    C = (I + a M)^2 + bq Q, Sigma = Pi C Pi; returns the nonzero eigenvalues lam_j of Sigma,
    b.e_j, t.e_j and Var eps (docs/DERIVATIONS.md §7)."""
    n0, d = X.shape
    theta = np.zeros(d)
    theta[0] = 1.0
    u = X.T @ e / n0
    v = u / np.linalg.norm(u)
    M = _weighted_gram(X, e) / n0
    Q = _weighted_gram(X, e * e) / n0
    L = np.eye(d) + a * M
    C = L @ L + bq * Q
    return _compressed_spectrum(C, v, theta, 0.0)


def _population_batch(
    X: np.ndarray, e: np.ndarray, a: float, bq: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The same batch as :func:`_population_batch_direct` when n0 < d - 1, exactly, in the
    n0-dimensional row space S of X: M, Q and v live in S and C = I on its complement, so
    Sigma has the eigenvalue 1 with multiplicity d - n0 there, which carries only the part of t
    outside S (weight 1 - |P_S theta*|^2 before normalisation) and none of b (docs/DERIVATIONS.md
    §7). The eigenproblem is n0 x n0 instead of d x d."""
    n0, d = X.shape
    U, T = np.linalg.qr(X.T)  # X^T = U T, U: d x n0 orthonormal
    u = T @ e / n0
    v = u / np.linalg.norm(u)
    M = _weighted_gram(T.T, e) / n0  # U^T M U = T diag(e) T^T / n0
    Q = _weighted_gram(T.T, e * e) / n0
    L = np.eye(n0) + a * M
    C = L @ L + bq * Q
    theta = U[0].copy()  # U^T theta*
    rest = max(1.0 - float(theta @ theta), 0.0)  # |theta* outside S|^2
    lam, avals, tvals, ep = _compressed_spectrum(C, v, theta, rest)
    tn = math.sqrt(max(1.0 - float(v @ theta) ** 2, 0.0))
    ones = d - n0
    lam = np.concatenate([lam, np.ones(ones)])
    avals = np.concatenate([avals, np.zeros(ones)])
    tout = np.zeros(ones)
    tout[0] = math.sqrt(rest) / tn
    tvals = np.concatenate([tvals, tout])
    return lam, avals, tvals, ep


def _compressed_spectrum(
    C: np.ndarray, v: np.ndarray, theta: np.ndarray, rest: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Eigen-decomposition of Sigma = Pi C Pi (Pi = I - v v^T) and the weights of
    b = Sigma^+ Pi C v and of t, the unit part of theta orthogonal to v (``rest``: the squared
    norm of theta outside the space of C, which only enters t's normalisation)."""
    n = C.shape[0]
    Cv = C @ v
    PC = C - np.outer(v, v @ C)  # Pi C
    Sig = PC - np.outer(PC @ v, v)  # Pi C Pi
    lam, E = np.linalg.eigh(Sig)
    keep = lam > 1e-9 * lam.max()
    lam, E = lam[keep], E[:, keep]
    proj = E.T @ (Cv - (v @ Cv) * v)
    t = theta - (v @ theta) * v
    tn = math.sqrt(float(t @ t) + rest)
    del n
    return (lam, proj / lam, E.T @ t / tn,
            max(float(v @ Cv - np.sum(proj * proj / lam)), 0.0))
