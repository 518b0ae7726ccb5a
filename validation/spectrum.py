"""Spectra of the learned first-layer weights after one and two full-batch gradient steps.

Convention (Moniri, Lee, Hassani & Dobriban 2023, arXiv:2310.07891; Moniri & Hassani 2026,
arXiv:2605.17767), written in
THEORY.md §1 units so that one code path covers both:

* inputs ``x ~ N(0, I_d)``, labels ``y = g(<theta_1, x>, ..., <theta_k, x>) + sqrt(delta) xi``,
  orthonormal ``theta_j`` (random, drawn from their own seed stream);
* network ``f(x) = (1/sqrt p) sum_j a_j sigma(<w_j, x>)``; rows of ``W0`` uniform on the unit
  sphere; the readout ``a`` is drawn once and never trained: ``a_j = g_j / sqrt p`` with
  ``g_j ~ N(0, 1)`` (``readout='gaussian'``, the papers'), ``g_j ~ Uniform[-sqrt 3, sqrt 3]``
  (``'uniform'``: bounded, so no row of the update is exceptionally heavy at finite p) or
  ``g_j = 1`` (``'constant'``, THEORY.md §1; every spike then shares the left vector 1_p);
* step ``t``: ``W_t = W_{t-1} - eta_t grad_W L_t``, ``L_t = (1/(2 n)) sum_i (y_i - f(x_i))^2`` on
  ``n = alpha0 d`` samples (``batch='fresh'``: a new batch for the second step; ``'reused'``: the
  first batch again), i.e. row by row
  ``w_j <- w_j + (eta_t a_j / (n sqrt p)) sum_i (y_i - f(x_i)) sigma'(<w_j, x_i>) x_i``;
* learning rates ``eta_t = eta_tilde_t p^(1/2 + a_t)``. The rank-one part of the gradient,
  ``(E sigma') a u^T / sqrt p`` with ``u = (1/n) sum_i y_i x_i``, has operator norm of order
  ``p^(-1/2)``, so the step adds a spike of order ``p^a_t`` to a bulk of order one: ``a = 0`` is the
  constant-step regime of those papers (an order-one spike, BBP-dependent) and ``a = 1/2`` with a
  constant readout is exactly THEORY.md §1 (``eta = eta_tilde p``). The convention is checked by
  the one-step count: the features ``sigma(X W1^T)`` on fresh inputs carry a spike of order ``l``
  iff ``a > (l-1)/(2l)`` and ``E sigma^(l) != 0`` (``asymptotics.spikes``); see
  ``validation/reports/SPECTRA.md``.

Finite size (measured, ``validation/reports/SPECTRA.md``): the first step moves each
pre-activation by ``eps_j kappa ~ eta_tilde_1 E sigma' |u| p^(a1 - 1/2) g_j``, and the second step
adds a bulk perturbation of relative size ``~ eta_tilde_2 p^(a2 - 1/2)``; both vanish as p grows but
are of order one at p ~ 1000 when ``a`` is close to 1/2. Taylor terms match the simulated
amplitudes only while ``eps_j kappa`` is small (``eta_tilde_1 <~ 1``), and a large ``eta_tilde_2``
inflates the bulk. Hence the defaults ``eta_tilde = (1, 3)`` and the Gaussian readout (its powers
``a^(k+1)`` are less collinear than a uniform readout's, so the higher terms stand out more).

Spectral analysis (:func:`weight_spectrum`, :func:`feature_spectrum`): singular values, a bulk
edge, the outliers above ``threshold = edge + margin`` and their singular vectors' alignments:
right vectors with the target directions ``theta_j``; left vectors with the orthonormalised
polynomials of the readout (degree m, close to ``He_m(sqrt p a)`` for a Gaussian readout: the
second step's term of Taylor order ``k`` has left vector ``a^(k+1)``); for features, left vectors
with the Hermite features ``He_l(X theta_j)``. Two bulk-edge estimates:

* ``'fit'`` (default; Onatski-type): the top of a bulk with a square-root edge obeys
  ``s_(r+j) ~ E - c j^(2/3)``; starting from ``r = r_max`` the fit on ``J`` bulk values gives
  ``E`` and the local spacing ``c`` (of order ``m^(-2/3)``, ``m = min(p, d)``), the threshold is
  ``E + kappa c``, ``r`` is recounted and the fit repeated until ``r`` is stable. It follows
  deformed bulks (the finite-p noise of the steps) that the Marchenko-Pastur law does not.
* ``'mp'`` (Gavish-Donoho): the scale matching the median singular value to the Marchenko-Pastur
  median, edge ``scale (1 + sqrt beta)``, threshold ``edge (1 + kappa m^(-2/3))``. Exact for
  ``W0``; biased once the steps have deformed the bulk.

Seeds: ``numpy.random.SeedSequence(seed, spawn_key=(stream,))`` with separate streams for ``W0``
(0), the readout (1), the teacher directions (2), the first batch (3), the second batch (4) and
test inputs (5). Everything is float64; results are frozen dataclasses.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from asymptotics import checks
from asymptotics.functions import Function, get_function
from asymptotics.marchenko_pastur import (  # noqa: F401  (re-exported)
    mp_density,
    mp_median,
    mp_singular_density,
)
from asymptotics.quadrature import gauss_hermite
from asymptotics.spikes import (
    hermite_coefficients,
    one_step_spike_count,
    target_function,
    two_step_outlier_count,
    two_step_outlier_count_for,
)

from . import montecarlo as mc
from .argtypes import integer
from .montecarlo import sphere_rows, teacher_directions  # noqa: F401  (re-exported)

STREAMS = {"W0": 0, "readout": 1, "teacher": 2, "batch1": 3, "batch2": 4, "test": 5}
READOUTS = ("gaussian", "uniform", "constant")
BATCHES = ("fresh", "reused")
EDGE_METHODS = ("fit", "mp")
MAX_FEATURE_ORDER = 20


def rng_for(seed: int, stream: str) -> np.random.Generator:
    """The generator of one named stream: child ``STREAMS[stream]`` of ``SeedSequence(seed)``
    (:func:`validation.montecarlo.streams`)."""
    return np.random.default_rng(mc.streams(np.random.SeedSequence(seed), list(STREAMS))[stream])


# ---------------------------------------------------------------------------------------------
# Configuration


def _real(value, name: str, lo: float, hi: float = math.inf, *, lo_open=False, hi_open=False):
    return checks.real(name, value, lo, hi, lo_open=lo_open, hi_open=hi_open)


@dataclass(frozen=True)
class StepConfig:
    """One (``a2 is None``) or two full-batch steps on W, in the module's convention.

    ``eta1``/``eta2`` are ``eta_tilde``: the learning rates are ``eta_tilde p^(1/2 + a)``."""

    d: int
    a1: float
    a2: float | None = None
    beta: float = 0.5
    alpha0: float = 1.0
    sigma: str = "tanh"
    target: str = "z1"
    eta1: float = 1.0
    eta2: float = 1.0
    batch: str = "fresh"
    readout: str = "gaussian"
    delta: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or self.d < 8:
            raise ValueError(f"d must be an integer >= 8, got {self.d!r}")
        object.__setattr__(self, "d", int(self.d))
        object.__setattr__(self, "a1", _real(self.a1, "a1", 0.0, 0.5))
        if self.a2 is not None:
            object.__setattr__(self, "a2", _real(self.a2, "a2", 0.0, 0.5))
        object.__setattr__(self, "beta", _real(self.beta, "beta", 0.0, 64.0, lo_open=True))
        object.__setattr__(self, "alpha0", _real(self.alpha0, "alpha0", 0.0, 64.0, lo_open=True))
        object.__setattr__(self, "eta1", _real(self.eta1, "eta1", 0.0))
        object.__setattr__(self, "eta2", _real(self.eta2, "eta2", 0.0))
        object.__setattr__(self, "delta", _real(self.delta, "delta", 0.0))
        if self.batch not in BATCHES:
            raise ValueError(f"batch must be one of {BATCHES}, got {self.batch!r}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {self.readout!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) \
                or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
        get_function(self.sigma)  # raises on unknown names or bad expressions
        target_function(self.target, None)
        if self.p < 2 or self.n < 2:
            raise ValueError(f"beta*d and alpha0*d must be >= 2 (got p={self.p}, n={self.n})")

    @property
    def p(self) -> int:
        return int(round(self.beta * self.d))

    @property
    def n(self) -> int:
        return int(round(self.alpha0 * self.d))

    @property
    def steps(self) -> int:
        return 1 if self.a2 is None else 2

    @property
    def learning_rates(self) -> tuple[float, ...]:
        """``eta_t = eta_tilde_t p^(1/2 + a_t)``."""
        rates = [self.eta1 * self.p ** (0.5 + self.a1)]
        if self.a2 is not None:
            rates.append(self.eta2 * self.p ** (0.5 + self.a2))
        return tuple(rates)


# ---------------------------------------------------------------------------------------------
# Simulation


@dataclass(frozen=True, eq=False)
class Simulation:
    """Weights before and after the steps; ``W2`` is None for one step. ``theta`` is k x d."""

    config: StepConfig
    W0: np.ndarray = field(repr=False)
    W1: np.ndarray = field(repr=False)
    W2: np.ndarray | None = field(repr=False)
    a: np.ndarray = field(repr=False)
    theta: np.ndarray = field(repr=False)
    train_loss: tuple[float, ...] = ()


def draw_readout(rng: np.random.Generator, p: int, kind: str) -> np.ndarray:
    """Frozen readout a (entries O(1/sqrt p)), see the module docstring."""
    if kind == "gaussian":
        g = rng.standard_normal(p)
    elif kind == "uniform":
        g = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), p)
    elif kind == "constant":
        g = np.ones(p)
    else:
        raise ValueError(f"readout must be one of {READOUTS}, got {kind!r}")
    return g / math.sqrt(p)


def draw_batch(rng, n: int, theta: np.ndarray, g, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Inputs X (n x d) and labels y = g(X theta^T) + sqrt(delta) xi."""
    X = rng.standard_normal((n, theta.shape[1]))
    return X, np.asarray(mc.labels(X @ theta.T, g, delta, rng), dtype=np.float64)


def gd_step(
    W: np.ndarray, a: np.ndarray, X: np.ndarray, y: np.ndarray, sigma: Function, eta: float
) -> tuple[np.ndarray, float]:
    """One full-batch step on W of L = (1/(2n)) sum_i (y_i - f(x_i))^2; returns (W_new, L)
    (:func:`validation.montecarlo.giant_step` on a single chunk)."""
    return mc.giant_step(W, [(X, y)], sigma, rate=eta / (X.shape[0] * W.shape[0]), a=a)


def simulate(config: StepConfig) -> Simulation:
    """Run the one or two steps of ``config`` (seed streams as in the module docstring)."""
    sigma = get_function(config.sigma)
    g, k = target_function(config.target, None)
    p, d, n = config.p, config.d, config.n
    W0 = sphere_rows(rng_for(config.seed, "W0"), p, d)
    a = draw_readout(rng_for(config.seed, "readout"), p, config.readout)
    theta = teacher_directions(rng_for(config.seed, "teacher"), k, d)
    X, y = draw_batch(rng_for(config.seed, "batch1"), n, theta, g, config.delta)
    rates = config.learning_rates
    W1, loss1 = gd_step(W0, a, X, y, sigma, rates[0])
    if config.steps == 1:
        return Simulation(config, W0, W1, None, a, theta, (loss1,))
    if config.batch == "fresh":
        X, y = draw_batch(rng_for(config.seed, "batch2"), n, theta, g, config.delta)
    W2, loss2 = gd_step(W1, a, X, y, sigma, rates[1])
    return Simulation(config, W0, W1, W2, a, theta, (loss1, loss2))


# ---------------------------------------------------------------------------------------------
# Bulk edge


@dataclass(frozen=True)
class BulkEdge:
    """Bulk edge estimate: outliers are the singular values above ``threshold``."""

    method: str
    edge: float
    threshold: float
    spacing: float  # 'fit': c of s_(r+j) ~ E - c j^(2/3); 'mp': the MP scale
    n_outliers: int


def _fit_window(m: int) -> int:
    return int(min(max(8, round(2 * m ** (1 / 3))), 40, max(3, m // 4)))


def bulk_edge(
    singular_values: np.ndarray,
    shape: tuple[int, int],
    *,
    method: str = "fit",
    kappa: float = 2.0,
    r_max: int | None = None,
) -> BulkEdge:
    """Bulk edge and outlier threshold of the singular values of a ``shape = (p, d)`` matrix whose
    bulk is normalised as ``W0`` (entries of variance ~ 1/d). See the module docstring for the
    ``'fit'`` and ``'mp'`` methods; ``kappa`` sets the margin (in units of the fitted spacing, or
    of ``m^(-2/3)`` relative to the MP edge), which shrinks with the size."""
    if method not in EDGE_METHODS:
        raise ValueError(f"method must be one of {EDGE_METHODS}, got {method!r}")
    kappa = _real(kappa, "kappa", 0.0)
    s = np.sort(np.asarray(singular_values, dtype=np.float64))[::-1]
    p, d = shape
    m = s.size
    if m != min(p, d) or m < 12:
        raise ValueError(f"need the min(p, d) >= 12 singular values of a {p} x {d} matrix, "
                         f"got {m}")
    beta = p / d
    if method == "mp":
        f, q = max(1.0, beta), min(beta, 1.0 / beta)
        scale = float(np.median(s)) / math.sqrt(f * mp_median(q))
        edge = scale * (1 + math.sqrt(beta))
        thr = edge * (1 + kappa * m ** (-2 / 3))
        return BulkEdge("mp", edge, thr, scale, int(np.sum(s > thr)))
    J = _fit_window(m)
    r_cap = max(0, min(m - J - 1, m // 3))
    r = min(r_max if r_max is not None else min(10, m // 10), r_cap)
    j23 = np.arange(1, J + 1) ** (2 / 3)
    A = np.column_stack([np.ones(J), -j23])
    seen: list[int] = []
    E = c = thr = math.nan
    for _ in range(60):
        (E, c), *_ = np.linalg.lstsq(A, s[r : r + J], rcond=None)
        c = max(float(c), 1e-12 * max(abs(float(E)), 1.0))
        thr = float(E) + kappa * c
        r_new = min(int(np.sum(s > thr)), r_cap)
        if r_new == r or r_new in seen:
            r = r_new
            break
        seen.append(r)
        r = r_new
    return BulkEdge("fit", float(E), float(thr), float(c), int(np.sum(s > thr)))


# ---------------------------------------------------------------------------------------------
# Spectral analysis


@dataclass(frozen=True, eq=False)
class WeightSpectrum:
    """Spectrum of a weight matrix and its outliers.

    ``right_overlaps[i, j] = |<v_i, theta_j>|``; ``left_overlaps[i, m-1] = |<u_i, h_m>|`` with
    ``h_m`` the degree-m polynomial of the readout orthonormalised against degrees < m (NaN where
    the readout's powers are degenerate); ``left_degree[i]`` the argmax (a second-step term of
    Taylor order k has degree k + 1)."""

    singular_values: np.ndarray = field(repr=False)
    edge: BulkEdge
    outliers: np.ndarray
    right_overlaps: np.ndarray
    left_overlaps: np.ndarray
    left_degree: np.ndarray

    @property
    def n_outliers(self) -> int:
        return int(self.outliers.size)


def readout_polynomials(a: np.ndarray, max_degree: int) -> np.ndarray:
    """p x max_degree: column m-1 is a^m (entrywise) orthonormalised against 1, a, ..., a^(m-1)
    (close to He_m(sqrt p a) / norm for a Gaussian readout); NaN columns where degenerate."""
    g = np.asarray(a, dtype=np.float64) * math.sqrt(a.size)
    V = np.column_stack([g**m for m in range(max_degree + 1)])
    out = np.full((a.size, max_degree), np.nan)
    basis: list[np.ndarray] = []
    for m in range(max_degree + 1):
        v = V[:, m].copy()
        for b in basis:
            v -= (b @ v) * b
        for b in basis:  # second pass for stability
            v -= (b @ v) * b
        nv = np.linalg.norm(v)
        if nv > 1e-8 * np.linalg.norm(V[:, m]):
            v /= nv
            basis.append(v)
            if m >= 1:
                out[:, m - 1] = v
    return out


def singular_values(M: np.ndarray) -> np.ndarray:
    """All ``min(p, d)`` singular values of ``M`` in decreasing order, as square roots of the
    eigenvalues of the smaller Gram matrix (``M M^T`` or ``M^T M``): 5-10x faster than an SVD at
    p ~ 2000 and accurate to ``~1e-16 s_max^2 / s`` absolutely, ample for an order-one bulk."""
    M = np.asarray(M, dtype=np.float64)
    G = M @ M.T if M.shape[0] <= M.shape[1] else M.T @ M
    ev = np.linalg.eigvalsh(G)[::-1]
    return np.sqrt(np.clip(ev, 0.0, None))


def top_singular_vectors(M: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(U_r, s_r, V_r)``: the top ``r`` singular triplets of ``M`` (``U_r`` p x r, ``V_r`` d x r),
    from a partial eigendecomposition of the smaller Gram matrix."""
    from scipy import linalg

    M = np.asarray(M, dtype=np.float64)
    p, d = M.shape
    if r <= 0:
        return np.zeros((p, 0)), np.zeros(0), np.zeros((d, 0))
    left = p <= d
    G = M @ M.T if left else M.T @ M
    m = G.shape[0]
    ev, vec = linalg.eigh(G, subset_by_index=[m - r, m - 1])
    ev, vec = ev[::-1], vec[:, ::-1]
    s = np.sqrt(np.clip(ev, 0.0, None))
    safe = np.where(s > 0, s, 1.0)
    if left:
        return vec, s, (M.T @ vec) / safe
    return (M @ vec) / safe, s, vec


def weight_spectrum(
    M: np.ndarray,
    *,
    directions: np.ndarray | None = None,
    readout: np.ndarray | None = None,
    max_degree: int = 5,
    method: str = "fit",
    kappa: float = 2.0,
) -> WeightSpectrum:
    """Singular values of ``M`` (p x d), bulk edge, outliers and their alignments."""
    M = np.asarray(M, dtype=np.float64)
    s = singular_values(M)
    edge = bulk_edge(s, M.shape, method=method, kappa=kappa)
    r = edge.n_outliers
    U, _, V = top_singular_vectors(M, r)
    if directions is not None:
        right = np.abs(V.T @ np.atleast_2d(directions).T)
    else:
        right = np.zeros((r, 0))
    if readout is not None:
        H = readout_polynomials(readout, max_degree)
        left = np.abs(U.T @ H)
        filled = np.where(np.isnan(left), -1.0, left)
        degree = np.argmax(filled, axis=1) + 1 if r else np.zeros(0, dtype=int)
    else:
        left = np.zeros((r, 0))
        degree = np.zeros(r, dtype=int)
    return WeightSpectrum(s, edge, s[:r].copy(), right, left, np.asarray(degree))


@dataclass(frozen=True, eq=False)
class FeatureSpectrum:
    """Spectrum of the centred features ``(sigma(X W^T) - E sigma(z)) / sqrt n`` and its outliers;
    ``hermite_overlaps[i, j, l-1] = |cos(u_i, He_l(X theta_j))|`` for the left vectors u_i."""

    singular_values: np.ndarray = field(repr=False)
    edge: BulkEdge
    outliers: np.ndarray
    hermite_overlaps: np.ndarray

    @property
    def n_outliers(self) -> int:
        return int(self.outliers.size)


def _gaussian_mean(fn: Function) -> float:
    z, w = gauss_hermite(160)
    return float(np.sum(w * fn(z)))


def feature_spectrum(
    W: np.ndarray,
    X: np.ndarray,
    sigma: str | Function,
    *,
    directions: np.ndarray | None = None,
    max_degree: int = 5,
    method: str = "fit",
    kappa: float = 2.0,
) -> FeatureSpectrum:
    """Spike analysis of the features of W on the inputs X (n x d), centred by ``E sigma(z)``."""
    fn = get_function(sigma)
    F = (fn(X @ W.T) - _gaussian_mean(fn)) / math.sqrt(X.shape[0])
    s = singular_values(F)
    edge = bulk_edge(s, F.shape, method=method, kappa=kappa)
    r = edge.n_outliers
    U = top_singular_vectors(F, r)[0]
    if directions is None:
        return FeatureSpectrum(s, edge, s[:r].copy(), np.zeros((r, 0, max_degree)))
    Z = X @ np.atleast_2d(directions).T
    ov = np.empty((r, Z.shape[1], max_degree))
    for j in range(Z.shape[1]):
        he_prev, he = np.ones_like(Z[:, j]), Z[:, j].copy()
        for l in range(1, max_degree + 1):
            ov[:, j, l - 1] = np.abs(U.T @ he) / np.linalg.norm(he)
            he_prev, he = he, Z[:, j] * he - l * he_prev
    return FeatureSpectrum(s, edge, s[:r].copy(), ov)


def polynomial_amplitudes(
    delta_W: np.ndarray, readout: np.ndarray, max_degree: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """``A_m = |h_m^T delta_W|`` for the readout polynomials ``h_1..h_max_degree`` (see
    :func:`readout_polynomials`) and their noise floors ``F_m = (sum_j h_mj^2 |r_j|^2)^(1/2)``,
    ``r_j`` the rows of ``(I - P) delta_W`` (P the projector on 1, h_1, ...): what ``A_m`` would be
    if row j carried only its own residual, so ``sqrt(A_m^2 - F_m^2)`` estimates the signal on
    degree m. The second step's term of Taylor order k lives on degree k + 1 and grows like
    ``p^(a2 - k (1/2 - a1))`` (``asymptotics.spikes``)."""
    H = readout_polynomials(readout, max_degree)
    ok = ~np.isnan(H[0])
    amps = np.full(max_degree, np.nan)
    floors = np.full(max_degree, np.nan)
    amps[ok] = np.linalg.norm(H[:, ok].T @ delta_W, axis=1)
    B = np.column_stack([np.ones(H.shape[0]) / math.sqrt(H.shape[0]), H[:, ok]])
    resid = delta_W - B @ (B.T @ delta_W)
    row2 = np.sum(resid * resid, axis=1) * H.shape[0] / (H.shape[0] - B.shape[1])
    floors[ok] = np.sqrt((H[:, ok] ** 2).T @ row2)
    return amps, floors


# ---------------------------------------------------------------------------------------------
# One call: simulate, analyse, predict


@dataclass(frozen=True, eq=False)
class SpectrumRun:
    """Measured vs predicted counts for one configuration.

    Two steps: ``measured`` = outliers of W2 beyond the leading one, ``predicted`` =
    ``floor(a2 / (1/2 - a1))`` (generic activation), ``predicted_activation`` the count with the
    activation's vanishing Hermite coefficients removed. One step: the spikes of the features
    ``sigma(X W1^T)`` on fresh inputs vs ``#{l: a > (l-1)/(2l), E sigma^(l) != 0}`` (orders up to
    20), and ``weights`` is the spectrum of W1 (one leading outlier expected for a > 0)."""

    config: StepConfig
    measured: int
    predicted: int | None
    predicted_activation: int | None
    weights: WeightSpectrum
    features: FeatureSpectrum | None
    amplitudes: np.ndarray
    amplitude_floors: np.ndarray
    seconds: float

    def record(self) -> dict:
        """A flat dict (one CSV row)."""
        c = self.config
        w = self.weights
        row = dict(
            d=c.d, p=c.p, n=c.n, beta=c.beta, alpha0=c.alpha0, steps=c.steps, a1=c.a1,
            a2=c.a2 if c.a2 is not None else math.nan, eta1=c.eta1, eta2=c.eta2,
            sigma=c.sigma, target=c.target, batch=c.batch, readout=c.readout, delta=c.delta,
            seed=c.seed, measured=self.measured,
            predicted=self.predicted if self.predicted is not None else -1,
            predicted_activation=(self.predicted_activation
                                  if self.predicted_activation is not None else -1),
            weight_outliers=w.n_outliers, edge=w.edge.edge, threshold=w.edge.threshold,
            top_sv=float(w.singular_values[0]),
            second_sv=float(w.singular_values[1]), seconds=self.seconds,
        )
        for m, (v, f) in enumerate(zip(self.amplitudes, self.amplitude_floors, strict=True),
                                   start=1):
            row[f"amp{m}"] = float(v)
            row[f"floor{m}"] = float(f)
        for i in range(min(w.n_outliers, 6)):
            row[f"sv{i + 1}"] = float(w.outliers[i])
            for j in range(w.right_overlaps.shape[1]):
                row[f"ov{i + 1}_theta{j + 1}"] = float(w.right_overlaps[i, j])
            if w.left_degree.size:
                row[f"deg{i + 1}"] = int(w.left_degree[i])
        return row


def run_spectrum(
    config: StepConfig,
    *,
    method: str = "fit",
    kappa: float = 2.0,
    features: bool | None = None,
    max_degree: int = 5,
    simulation: Simulation | None = None,
) -> SpectrumRun:
    """Simulate ``config`` and compare the outlier count with ``asymptotics.spikes``.
    ``features`` (default: True for one step) adds the feature-matrix analysis on
    ``n`` fresh inputs (stream 'test')."""
    import time

    t0 = time.perf_counter()
    sim = simulation if simulation is not None else simulate(config)
    two = config.steps == 2
    W = sim.W2 if two else sim.W1
    ws = weight_spectrum(W, directions=sim.theta, readout=sim.a, max_degree=max_degree,
                         method=method, kappa=kappa)
    amps, floors = polynomial_amplitudes(W - (sim.W1 if two else sim.W0), sim.a, max_degree)
    fs = None
    if features if features is not None else not two:
        X = rng_for(config.seed, "test").standard_normal((config.n, config.d))
        fs = feature_spectrum(sim.W1, X, config.sigma, directions=sim.theta,
                              max_degree=max_degree, method=method, kappa=kappa)
    if two:
        measured = max(ws.n_outliers - 1, 0)
        if config.a1 < 0.5 and config.a2 < 0.5:
            predicted = two_step_outlier_count(config.a1, config.a2)
            coeffs = hermite_coefficients(config.sigma, predicted + 2)
            predicted_act = two_step_outlier_count_for(config.a1, config.a2, coeffs)
        else:
            predicted = predicted_act = None
    else:
        assert fs is not None
        measured = fs.n_outliers
        if config.a1 < 0.5:
            coeffs = hermite_coefficients(config.sigma, MAX_FEATURE_ORDER)
            predicted = predicted_act = one_step_spike_count(config.a1, coeffs)
        else:
            predicted = predicted_act = None
    return SpectrumRun(config, measured, predicted, predicted_act, ws, fs, amps, floors,
                       time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------------
# Plot


def plot_spectrum(
    ws: WeightSpectrum, shape: tuple[int, int], path: str, *, title: str = "",
    reference: np.ndarray | None = None,
) -> None:
    """Histogram of the singular values with the MP bulk density (median-matched scale), the
    threshold and the outliers marked; ``reference`` (e.g. W0's singular values) drawn as a step."""
    from matplotlib.figure import Figure

    p, d = shape
    beta = p / d
    s = ws.singular_values
    f, q = max(1.0, beta), min(beta, 1.0 / beta)
    scale = float(np.median(s)) / math.sqrt(f * mp_median(q))
    bulk = s[ws.n_outliers:]
    fig = Figure(figsize=(6.0, 3.8), constrained_layout=True)
    ax = fig.subplots()
    hi = float(bulk.max()) * 1.15
    bins = np.linspace(0.0, hi, 60)
    if reference is not None:
        ax.hist(reference, bins=bins, density=True, histtype="step", color="0.5",
                label=r"$W_0$")
    ax.hist(bulk, bins=bins, density=True, alpha=0.55, color="#0072B2", label="bulk")
    x = np.linspace(1e-6, hi, 600)
    ax.plot(x, mp_singular_density(x, beta, scale), color="#D55E00",
            label=f"Marchenko-Pastur, scale {scale:.3f}")
    ax.axvline(ws.edge.threshold, color="k", ls=":", lw=1, label="outlier threshold")
    if ws.n_outliers:
        ymax = ax.get_ylim()[1]
        shown = [v for v in ws.outliers if v <= hi * 1.5]
        ax.plot(shown, [0.05 * ymax] * len(shown), "v", color="#CC0000", ms=8,
                label=f"{ws.n_outliers} outlier(s)")
        far = [v for v in ws.outliers if v > hi * 1.5]
        if far:
            ax.annotate("outliers at " + ", ".join(f"{v:.3g}" for v in far) + r" $\rightarrow$",
                        xy=(0.98, 0.5), xycoords="axes fraction", ha="right", fontsize=8)
    ax.set_xlabel("singular value")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(frameon=False, fontsize=8)
    fig.savefig(path, dpi=150, metadata={"Software": None})


# ---------------------------------------------------------------------------------------------
# Command line


CLI_HELP = """\
convention: rows of W0 on the unit sphere, f(x) = (1/sqrt p) sum_j a_j sigma(<w_j, x>) with a
frozen readout a_j = g_j / sqrt p; full-batch steps on L = (1/(2n)) sum_i (y_i - f(x_i))^2 with
n = alpha0 d and eta_t = eta_tilde_t p^(1/2 + a_t). Prints outliers=<measured> and
predicted=<formula>: for --steps 2, the outliers of W2 beyond the leading one vs
floor(a2/(1/2 - a1)); for --steps 1, the spikes of the features sigma(X W1^T) on fresh inputs vs
#{l >= 1: a1 > (l-1)/(2l), E sigma^(l) != 0}.
"""


def _cli_real(name: str, lo: float, hi: float = math.inf, hi_open: bool = False):
    def parse(text: str) -> float:
        try:
            return _real(text, name, lo, hi, hi_open=hi_open)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Add the ``spectrum`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "spectrum", help="outliers of the weights after one or two large steps",
        description="Simulate one or two full-batch gradient steps on the first layer and count "
                    "the outliers of the spectrum.",
        epilog=CLI_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, choices=(1, 2), default=2, help="1 or 2 (default: 2)")
    p.add_argument("--a1", type=_cli_real("a1", 0.0, 0.5), default=0.2,
                   help="exponent of the first step, eta1 = eta_tilde1 p^(1/2+a1), in [0, 1/2] "
                        "(default: 0.2)")
    p.add_argument("--a2", type=_cli_real("a2", 0.0, 0.5), default=0.3,
                   help="exponent of the second step, in [0, 1/2] (default: 0.3)")
    p.add_argument("--d", type=integer("d", 16), default=1000, help="input dimension")
    p.add_argument("--beta", type=_cli_real("beta", 1e-3, 64.0), default=0.5,
                   help="width ratio p/d (default: 0.5)")
    p.add_argument("--alpha0", type=_cli_real("alpha0", 1e-3, 64.0), default=1.0,
                   help="batch ratio n/d (default: 1)")
    p.add_argument("--sigma", default="tanh(z+0.5)",
                   help="activation: name or expression in z (default: tanh(z+0.5), all Hermite "
                        "coefficients nonzero)")
    p.add_argument("--target", default="z1",
                   help="target: expression in z1..zk (multi-index) or a name / expression in z "
                        "(single index) (default: z1)")
    p.add_argument("--eta1", type=_cli_real("eta1", 0.0), default=1.0,
                   help="eta_tilde of the first step (default: 1)")
    p.add_argument("--eta2", type=_cli_real("eta2", 0.0), default=3.0,
                   help="eta_tilde of the second step (default: 3)")
    p.add_argument("--batch", choices=BATCHES, default="fresh",
                   help="second-step batch (default: fresh)")
    p.add_argument("--readout", choices=READOUTS, default="gaussian",
                   help="frozen readout distribution (default: gaussian)")
    p.add_argument("--delta", type=_cli_real("delta", 0.0), default=0.0,
                   help="label-noise variance (default: 0)")
    p.add_argument("--seed", type=integer("seed", 0), default=0, help="seed entropy")
    p.add_argument("--edge", choices=EDGE_METHODS, default="fit",
                   help="bulk-edge estimate (default: fit)")
    p.add_argument("--kappa", type=_cli_real("kappa", 0.0), default=2.0,
                   help="outlier margin in units of the edge spacing (default: 2)")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="histogram of the singular values with the bulk density and outliers")
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Execute the ``spectrum`` subcommand; prints key=value lines. Returns the exit status."""
    try:
        config = StepConfig(
            d=args.d, a1=args.a1, a2=args.a2 if args.steps == 2 else None, beta=args.beta,
            alpha0=args.alpha0, sigma=args.sigma, target=args.target, eta1=args.eta1,
            eta2=args.eta2, batch=args.batch, readout=args.readout, delta=args.delta,
            seed=args.seed)
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sim = simulate(config)
    res = run_spectrum(config, method=args.edge, kappa=args.kappa, simulation=sim)
    ws = res.weights
    out = sys.stdout
    out.write(f"outliers={res.measured}\n")
    out.write(f"predicted={'nan' if res.predicted is None else res.predicted}\n")
    if res.predicted_activation is not None:
        out.write(f"predicted_activation={res.predicted_activation}\n")
    name = "W2" if config.steps == 2 else "W1"
    out.write(f"matrix={name} p={config.p} d={config.d} n={config.n}\n")
    out.write(f"weight_outliers={ws.n_outliers}\n")
    out.write(f"bulk_edge={ws.edge.edge:.6g}\nthreshold={ws.edge.threshold:.6g}\n")
    out.write("singular_values=" + ",".join(f"{v:.6g}" for v in ws.singular_values[:12]) + "\n")
    for i in range(ws.n_outliers):
        th = ",".join(f"{v:.3f}" for v in ws.right_overlaps[i])
        lv = ",".join("nan" if math.isnan(v) else f"{v:.3f}" for v in ws.left_overlaps[i])
        out.write(f"outlier{i + 1}: s={ws.outliers[i]:.6g} |<v,theta_j>|={th} "
                  f"|<u,h_m>|={lv} degree={int(ws.left_degree[i])}\n")
    if res.features is not None:
        fs = res.features
        out.write(f"feature_outliers={fs.n_outliers} feature_threshold={fs.edge.threshold:.6g}\n")
        for i in range(fs.n_outliers):
            he = ";".join(",".join(f"{v:.3f}" for v in fs.hermite_overlaps[i, j])
                          for j in range(fs.hermite_overlaps.shape[1]))
            out.write(f"feature{i + 1}: s={fs.outliers[i]:.6g} |cos(u,He_l(X theta_j))|={he}\n")
    out.write("amplitudes=" + ",".join(f"{v:.4g}" for v in res.amplitudes)
              + " floors=" + ",".join(f"{v:.4g}" for v in res.amplitude_floors) + "\n")
    if args.plot:
        ref = np.linalg.svd(sim.W0, compute_uv=False)
        plot_spectrum(ws, (config.p, config.d), args.plot, reference=ref,
                      title=f"{name}: steps={config.steps}, a1={config.a1:g}"
                            + (f", a2={config.a2:g}, {config.batch} batch" if config.a2 is not None
                               else "")
                            + f", d={config.d}, sigma={config.sigma}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m validation.spectrum``) until the lead wires it."""

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            self.exit(2, f"error: {message}\n")

    parser = _Parser(prog="python -m validation")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_subparser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
