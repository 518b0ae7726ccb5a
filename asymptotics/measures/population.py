"""Deterministic spectral measure of the trained network's first layer (docs/DERIVATIONS.md §7).

The rank-one measure is :func:`asymptotics.measures.spectral.channel_measure` with the sRF (r, c,
gamma)
and the channels of the step's covariance on the plane (theta*, n) (:mod:`asymptotics.step.plane`)
(:func:`network_measure`; it lacks the correlation of Bv with the bulk outside span(v, t) and the
non-MP bulk of small alpha0). The default network theory, :func:`population_measure`, keeps the
whole population covariance C of the bulk rows: a generalised MP bulk of its spectrum and
channels weighted over its eigenvectors, by default from the deterministic Gauss rules of
:mod:`asymptotics.measures.population_quadrature`, else evaluated on a fixed-seed sampled first
batch (a
numerical-integration device with stratified theta*.x, cached per setting).
:func:`population_resolvent` gives the resolvent of that covariance in closed form (a
linear-pencil fixed point: the bulk and the forms on theta* and u), a check of the device.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gauss_hermite, gaussian_nodes
from asymptotics.measures.spectral import EMPTY, SpectralMeasure, channel_measure
from asymptotics.step.plane import step_covariances
from asymptotics.step.srf import srf_mapping


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
    mp_bulk: bool = False, stratify: bool = True, method: str | None = None,
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
    docs/DERIVATIONS.md §7). ``stratify`` (default): theta*.x_i is drawn by stratified
    sampling, one uniform draw in each of the n0 quantile cells of N(0, 1), instead of i.i.d.
    (the other coordinates stay Gaussian): still unbiased, it removes most of the O(n0^-1/2)
    fluctuation of the empirical law of the weights e_i (``False``: the i.i.d. device of the
    first releases). ``size=None``: 400 for alpha0 <= 20, 400 (20/alpha0)^(1/3) (at
    least 100) above, which caps the cost 2 alpha0 size^3 of M and Q at that of alpha0 = 20;
    ``batches=None``: min(8, max(2, ceil(8/alpha0))), more batches where they are cheap, and 1
    for 8 <= alpha0 <= 20 (stratified, one 400-batch there is more accurate than two i.i.d.).
    For n0 < size the eigenproblem is solved in the row space of the batch (exactly); the
    draws, M and Q do not depend on eta and are cached apart from it.
    The spike (r, gamma) is the sRF one, c = tr(Sigma)/size.

    ``method``: ``'resolvent'`` (the default unless a device option is given) evaluates the same
    measure without sampling, from the resolvent of C
    (:mod:`asymptotics.measures.population_quadrature`,
    docs/DERIVATIONS.md §7, 'A deterministic measure'); where its checks fail it falls back to
    the device with a warning (the measure's ``kind`` says which: ``'quadrature'`` or
    ``'population'``). ``'device'``: the sampled device described above."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    if eta == 0.0:
        return channel_measure(beta, sp.c, sp.c, 0.0, sp.c, r=sp.r, gamma=sp.gamma)
    device_options = (size, batches, seed, mp_bulk, stratify) != (None, None, 0, False, True)
    if method is None:
        method = "device" if device_options else "resolvent"
    if method not in ("resolvent", "device"):
        raise ValueError(f"method must be 'resolvent' or 'device', got {method!r}")
    if method == "resolvent":
        if device_options:
            raise ValueError("size, batches, seed, mp_bulk and stratify are options of the "
                             "sampled device: use them with method='device'")
        from asymptotics.measures.population_quadrature import QuadratureError, resolvent_measure

        try:
            return resolvent_measure(s, g, alpha0=alpha0, eta=eta, beta=beta, delta=delta)
        except QuadratureError as err:
            warnings.warn(f"{err}; using the sampled device instead", RuntimeWarning,
                          stacklevel=2)
    if size is None:
        size = 400 if alpha0 <= 20.0 else max(100, round(400 * (20.0 / alpha0) ** (1 / 3)))
    if batches is None:
        batches = 1 if 8.0 <= alpha0 <= 20.0 else min(8, max(2, math.ceil(8.0 / alpha0)))
    if int(size) < 2 or int(batches) < 1:
        raise ValueError(f"size must be >= 2 and batches >= 1, got {size}, {batches}")
    if 8.0 * max(round(alpha0 * size), 1) * size > MAX_DEVICE_BYTES:  # one batch X: n0 x size
        raise ValueError(f"the network theory's sampled device at alpha0={alpha0:g}, eta={eta:g} "
                         f"needs a first batch of {alpha0 * size:.3g} x {size} samples (more "
                         f"than {MAX_DEVICE_BYTES / 2**30:.0f} GiB); use a smaller alpha0 or "
                         "model='srf'")
    lam, F, G = _population_atoms(s, g, float(alpha0), float(eta), float(delta), int(size),
                                  int(batches), int(seed), bool(stratify))
    c = float(lam.mean())
    if mp_bulk:
        return SpectralMeasure("channels", float(beta), c, EMPTY, F, lam, G, r=sp.r,
                               gamma=sp.gamma)
    return SpectralMeasure("population", float(beta), c, lam, F, lam, G, r=sp.r,
                           gamma=sp.gamma)


#: at most this many bytes for one first batch of the sampled device (alpha0 size x size floats;
#: alpha0 = 1e10 asked for 728 TiB where the resolvent's checks failed)
MAX_DEVICE_BYTES = 2**31


@functools.lru_cache(maxsize=64)
def _population_atoms(
    s: Function, g: Function, alpha0: float, eta: float, delta: float, size: int, batches: int,
    seed: int, stratify: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sampled device of :func:`population_measure` (independent of beta, cached): the
    population eigenvalues lam_j and the weights F = (Var eps, b.e_j), G = (t.e_j).
    The draws and M, Q (which do not depend on eta) come from :func:`_population_samples`."""
    k = ge_coefficients(s, g)
    ezeta2 = max(k.s2 - k.c1 * k.c1, 0.0)
    a, bq = eta * k.c1, eta * eta * ezeta2 / alpha0
    lams, avals, tvals, eps = [], [], [], []
    for sample in _population_samples(s, g, alpha0, delta, size, batches, seed, stratify):
        lam, a_, t_, ep = _batch_atoms(sample, a, bq)
        lams.append(lam)
        avals.append(a_)
        tvals.append(t_)
        eps.append(ep)
    lam = np.concatenate(lams)
    w = 1.0 / math.sqrt(batches)  # each batch's columns carry weight 1/batches
    F = np.concatenate([[float(np.mean(eps))], w * np.concatenate(avals)])
    G = w * np.concatenate(tvals)
    return lam, F, G


@dataclass(frozen=True)
class _BatchSample:
    """One first batch of the device, reduced to what the step's covariance needs: M and Q on a
    space of dimension ``M.shape[0]`` holding v (unit), and theta* there (``theta``), with
    ``rest`` = |theta*|^2 outside it and ``ones`` further dimensions where C = I."""

    M: np.ndarray
    Q: np.ndarray
    v: np.ndarray
    theta: np.ndarray
    rest: float
    ones: int


@functools.lru_cache(maxsize=8)
def _population_samples(
    s: Function, g: Function, alpha0: float, delta: float, size: int, batches: int, seed: int,
    stratify: bool = True,
) -> tuple[_BatchSample, ...]:
    """The fixed-seed first batches of the device (x_i ~ N(0, I_size), theta* the first
    coordinate, e_i = g(theta*.x_i) - mu0 + sqrt(delta) xi_i; ``stratify``: theta*.x_i and xi_i
    stratified, one uniform draw per quantile cell of N(0, 1), xi_i in a random order) as
    :class:`_BatchSample` (cached: they depend on sigma only through mu0, and not on eta)."""
    k = ge_coefficients(s, g)
    rng = np.random.default_rng(seed)
    d = int(size)
    n0 = max(int(round(alpha0 * d)), 1)
    out = []
    for _ in range(batches):
        X = rng.standard_normal((n0, d))
        if stratify:  # one uniform draw in each of the n0 quantile cells of N(0, 1)
            X[:, 0] = ndtri((np.arange(n0) + rng.random(n0)) / n0)
            xi = ndtri((rng.permutation(n0) + rng.random(n0)) / n0)
        else:
            xi = rng.standard_normal(n0)
        e = g(X[:, 0]) - k.mu0 + math.sqrt(delta) * xi
        out.append(_batch_sample(X, e, reduce=n0 < d - 1))
    return tuple(out)


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


def _batch_sample(X: np.ndarray, e: np.ndarray, *, reduce: bool) -> _BatchSample:
    """M = n0^-1 X^T diag(e) X, Q = n0^-1 X^T diag(e^2) X and v = unit(X^T e) of one batch,
    in the full dimension d (``reduce=False``) or, exactly, in the n0-dimensional row space S
    of X (n0 < d): X^T = U T, and M, Q, v live in S, where they are T diag(e) T^T / n0, ... in
    the basis U; C = (I + a M)^2 + b Q is the identity on the d - n0 dimensions outside S
    (docs/DERIVATIONS.md §7)."""
    n0, d = X.shape
    if reduce:
        U, T = np.linalg.qr(X.T)  # X^T = U T, U: d x n0 orthonormal
        u = T @ e / n0
        theta = U[0].copy()  # U^T theta*
        M = _weighted_gram(T.T, e) / n0
        Q = _weighted_gram(T.T, e * e) / n0
        rest, ones = max(1.0 - float(theta @ theta), 0.0), d - n0
    else:
        u = X.T @ e / n0
        theta = np.zeros(d)
        theta[0] = 1.0
        M = _weighted_gram(X, e) / n0
        Q = _weighted_gram(X, e * e) / n0
        rest, ones = 0.0, 0
    return _BatchSample(M, Q, u / np.linalg.norm(u), theta, rest, ones)


def _batch_atoms(
    sample: _BatchSample, a: float, bq: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One batch's atoms: C = (I + a M)^2 + bq Q, Sigma = Pi C Pi (Pi = I - v v^T); the
    nonzero eigenvalues lam_j of Sigma, b.e_j with b = Sigma^+ Pi C v, t.e_j with t the unit
    part of theta* orthogonal to v, and Var eps = v.C.v - sum_j (b.e_j)^2 lam_j
    (docs/DERIVATIONS.md §7). On the ``ones`` dimensions where C = I, Sigma has the eigenvalue 1,
    which carries none of b and, on one eigenvector, the part of t outside the reduced space."""
    M, Q, v, theta = sample.M, sample.Q, sample.v, sample.theta
    L = np.eye(M.shape[0]) + a * M
    C = L @ L + bq * Q
    Cv = C @ v
    PC = C - np.outer(v, v @ C)  # Pi C
    lam, E = np.linalg.eigh(PC - np.outer(PC @ v, v))  # Pi C Pi
    keep = lam > 1e-9 * lam.max()
    lam, E = lam[keep], E[:, keep]
    proj = E.T @ (Cv - (v @ Cv) * v)
    t = theta - (v @ theta) * v
    tn = math.sqrt(float(t @ t) + sample.rest)
    avals, tvals = proj / lam, E.T @ t / tn
    ep = max(float(v @ Cv - np.sum(proj * proj / lam)), 0.0)
    if sample.ones:
        lam = np.concatenate([lam, np.ones(sample.ones)])
        avals = np.concatenate([avals, np.zeros(sample.ones)])
        tout = np.zeros(sample.ones)
        tout[0] = math.sqrt(sample.rest) / tn
        tvals = np.concatenate([tvals, tout])
    return lam, avals, tvals, ep



@dataclass(frozen=True)
class PopulationResolvent:
    """Deterministic (d -> infinity) resolvent R = (C - zeta)^-1 of the step's population
    covariance C (docs/DERIVATIONS.md §7): ``trace`` = tr(R)/d (the bulk) and the quadratic
    forms of R on theta* and on u = n0^-1 sum_i e_i x_i (not normalised; |u|^2 = ``u_norm2``,
    theta*.u = ``mu1``), with the parameters that produced them."""

    sigma: str
    target: str
    alpha0: float
    eta: float
    delta: float
    zeta: np.ndarray
    trace: np.ndarray
    theta_theta: np.ndarray
    theta_u: np.ndarray
    u_u: np.ndarray
    mu1: float
    u_norm2: float
    converged: bool


def population_resolvent(
    sigma: str | Function, target: str | Function, *, alpha0: float, eta: float,
    zeta: complex | np.ndarray, delta: float = 0.0, tol: float = 1e-13, maxiter: int = 5000,
) -> PopulationResolvent:
    """The resolvent of C = (I + a M)^2 + bq Q (a = eta c1, bq = eta^2 E zeta^2/alpha0, M, Q
    the weighted Wishart matrices of the first batch) from the Gaussian fixed point of a linear
    pencil of C (docs/DERIVATIONS.md §7, 'the bulk in closed form'). Bulk: with psi = 1/alpha0,
        g = (L0 - E_e[Lam^T gamma Lam])^-1,  gamma(e) = P (-I - psi Lam g Lam^T P)^-1,
    g 2 x 2, gamma(e) 3 x 3, Lam(e) = [[sqrt(bq) e, 0], [1, 0], [0, 1]], P(e) = diag(1,
    [[0, a e], [a e, 0]]), L0 = [[-zeta, 1], [1, -1]]; tr(R)/d = g_11. Forms on (theta*, u): the
    3 x 3 matrix K = K0 - E_{z,e}[X^T gamma X], X = [z Lam, -psi e (Lam g)_{:,1}],
    K0 = [[-zeta, 1, mu1], [1, -1, 0], [mu1, 0, -1 - psi E e^2 g_11]] (theta*'s coordinate and a
    unit probe block for u), and G = K^-1 gives u.R.u = -1/G_33 - 1, theta*.R.u = -G_13/G_33,
    theta*.R.theta* = G_11 - (theta*.R.u)^2 G_33. Damped iteration, vectorised over ``zeta``
    (Im zeta >= 0, or real outside the spectrum); NaN where it did not converge."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    zq, wq = gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    zn, w = zq[0], wq[0]
    e = g(zn) - k.mu0
    if delta > 0.0:
        gh, wh = gauss_hermite(12)
        e = (e[:, None] + math.sqrt(delta) * gh[None, :]).ravel()
        zn = np.repeat(zn, gh.size)
        w = (w[:, None] * wh[None, :]).ravel()
    w = w / w.sum()
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0
    psi = 1.0 / alpha0
    z = np.atleast_1d(np.asarray(zeta, dtype=np.complex128)).ravel()
    lam = np.zeros((e.size, 3, 2))
    lam[:, 0, 0], lam[:, 1, 0], lam[:, 2, 1] = math.sqrt(bq) * e, 1.0, 1.0
    P = np.zeros((e.size, 3, 3))
    P[:, 0, 0], P[:, 1, 2], P[:, 2, 1] = 1.0, a * e, a * e
    L0 = np.zeros((z.size, 2, 2), np.complex128)
    L0[:, 0, 0], L0[:, 0, 1], L0[:, 1, 0], L0[:, 1, 1] = -z, 1.0, 1.0, -1.0

    def gamma(G: np.ndarray) -> np.ndarray:
        Sn = psi * np.einsum("eab,zbc,edc->zead", lam, G, lam)
        return np.einsum("eab,zebc->zeac", P, np.linalg.inv(-np.eye(3) - Sn @ P[None]))

    G = np.linalg.inv(L0)
    err = np.full(z.size, np.inf)
    for _ in range(maxiter):
        Gn = np.linalg.inv(L0 - np.einsum("e,eba,zebc,ecd->zad", w, lam, gamma(G), lam))
        err = np.max(np.abs(Gn - G), axis=(1, 2))
        G = 0.5 * (G + Gn)
        if np.all(err < tol):
            break
    ok = err < math.sqrt(tol)
    gam = gamma(G)
    mu1, ee2 = float(w @ (e * zn)), float(w @ (e * e))
    X = np.zeros((z.size, e.size, 3, 3), np.complex128)
    X[:, :, :, :2] = (zn[:, None, None] * lam)[None]
    X[:, :, :, 2] = -psi * e[None, :, None] * np.einsum("erc,zc->zer", lam, G[:, :, 0])
    K = np.zeros((z.size, 3, 3), np.complex128)
    K[:, 0, 0], K[:, 0, 1], K[:, 1, 0], K[:, 1, 1] = -z, 1.0, 1.0, -1.0
    K[:, 0, 2] = K[:, 2, 0] = mu1
    K[:, 2, 2] = -1.0 - psi * ee2 * G[:, 0, 0]
    Gf = np.linalg.inv(K - np.einsum("e,zeba,zebc,zecd->zad", w, X, gam, X))
    g33 = Gf[:, 2, 2]
    uu = -1.0 / g33 - 1.0
    tu = -Gf[:, 0, 2] / g33
    tt = Gf[:, 0, 0] - tu * tu * g33
    nan = np.where(ok, 1.0, np.nan)
    shape = np.shape(zeta)
    return PopulationResolvent(
        s.name, g.name, float(alpha0), float(eta), float(delta), z.reshape(shape),
        (G[:, 0, 0] * nan).reshape(shape), (tt * nan).reshape(shape), (tu * nan).reshape(shape),
        (uu * nan).reshape(shape), mu1, mu1 * mu1 + psi * ee2, bool(np.all(ok)))
