"""Several giant steps on the first layer with fresh batches: overlaps with a multi-index target.

Protocol (docs/THEORY.md §1 and §8; Dandi et al. 2023, arXiv:2305.18270, eq. 4 and Theorems 1-2):

* inputs ``x ~ N(0, I_d)``; labels ``y = g(<theta_1, x>, ..., <theta_k, x>) + sqrt(delta) xi`` with
  Haar-random orthonormal ``theta_j`` and ``g`` an expression in ``z1..zk`` (``He<n>(.)`` allowed,
  see :func:`asymptotics.coefficients.hermite.parse_target`);
* network ``f(x) = (1/sqrt p) sum_k a_k sigma(<w_k, x>)``, ``p = round(beta d)``, rows of ``W0``
  uniform on the unit sphere; the readout is never trained by the steps: ``a_k = 1/sqrt p``
  (``readout='constant'``, THEORY.md §1) or ``a_k = +-1/sqrt p`` on two halves
  (``'pm1'``, the theory's name, or its alias ``'hypercube'``: the first ``ceil(p/2)`` rows +,
  the rest -; the constant ``E sigma`` then cancels in ``f``);
* step ``t = 1..T``: a fresh batch of ``n = round(alpha0 d^kappa)`` samples (``kappa >= 1`` real),
  ``W_t = W_(t-1) - eta_t grad_W L_t``, ``L_t = (1/(2n)) sum_i (y_i - f(x_i; a, W_(t-1)))^2``.

Learning-rate convention (Dandi et al. 2023, Theorem 2:
``eta = p d^((l-1)/2)`` for ``n ~ d^l``): ``eta_t = eta_tilde_t * p * d^((kappa - 1)/2)``. For
``kappa = 1`` this is THEORY.md §1's ``eta = eta_tilde p``. Row by row,
``w_k <- w_k + eta_tilde_t d^((kappa-1)/2) (sqrt(p) a_k) (1/n) sum_i (y_i - f(x_i))
sigma'(<w_k, x_i>) x_i``. The factor ``d^((kappa-1)/2)`` makes a degree-``l`` Hermite component
of ``g`` (signal ``~ m^(l-1) ~ d^(-(l-1)/2)`` at initial overlaps ``m ~ d^(-1/2)``) and the sampling
noise of the gradient (norm ``~ sqrt(d/n)``) both of order one when ``kappa = l``.

Recorded after every step ``t = 0..T`` (0 = initialisation): the overlap matrix
``O[k, j] = |<w_k, theta_j>| / |w_k|`` (all neurons x directions), its mean and max over neurons
per direction, and ``|W Theta^T|_F / |W|_F`` (the fraction of the weights' Frobenius norm in the
target subspace; ``~ sqrt(k/d)`` at initialisation); with ``groups``, the statistics per readout
group of :mod:`validation.multistep.groups`. Optionally a ridge readout
``argmin_a sum_i (y_i - <a, sigma(W_t x_i)>/sqrt p)^2 + lam |a|^2`` on ``n_r = ridge_alpha d`` fresh
samples (a SUM over samples, THEORY.md §1; ``lam`` defaults to the parameter table's, 0.01,
as the theory; the committed overlap campaigns of :mod:`validation.multistep.experiment` were run
with 1e-3, their ``CAMPAIGN_LAM``, which their records carry) and its test error
``E (g - f)^2`` on ``n_test`` fresh noiseless inputs; the same ridge and test samples are used
after every step. ``ridge_alphas`` (several sizes): the readouts on the first
``round(alpha d)`` samples of one pool (:func:`validation.protocol.montecarlo.ridge_test_errors`).

Randomness: ``SeedSequence(seed)`` spawns one child per repetition; each child spawns the streams
``weights, teacher, ridge, ridge_noise, test`` and one batch and one label-noise stream per step.
Every pass over samples is chunked (``n`` up to ``~d^2`` at ``d <= 256`` costs one chunk of memory).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.targets import target_callable
from asymptotics.core import checks
from asymptotics.core.parameters import default

from ..protocol import montecarlo as mc
from ..protocol.montecarlo import (  # noqa: F401  (descent_direction: re-exported)
    descent_direction,
    ridge_readout,
    sphere_rows,
    teacher_directions,
)
from . import groups as mg

READOUTS = ("constant", "pm1", "hypercube")  # hypercube: an alias of pm1
STREAMS = ("weights", "teacher", "ridge", "ridge_noise", "test")
CHUNK_BYTES = 32 * 2**20


@lru_cache(maxsize=256)
def _target_k(text: str) -> int:
    """The number of variables of a target text (its callable built once a text: every task's
    ``record`` asks, and sympy's parse and lambdify cost milliseconds each)."""
    return target_callable(text)[1]


def default_eta(steps: int) -> tuple[float, ...]:
    """The schedule of the experiments: ``eta_tilde = 2, 8, 16, 16, ...`` (a first step that
    aligns with the degree-1 direction without saturating, larger later steps so that the
    weaker higher-order signals reach order one within a few steps)."""
    return tuple((2.0, 8.0, 16.0)[t] if t < 3 else 16.0 for t in range(int(steps)))


def _real(name: str, value, lo: float, *, open_lo: bool = False) -> float:
    return checks.real(name, value, lo, lo_open=open_lo)


def _integer(name: str, value, lo: int) -> int:
    return checks.integer(name, value, lo)


@dataclass(frozen=True)
class MultiStepConfig:
    """Every parameter of one multi-step experiment (module docstring conventions).

    ``eta`` holds ``eta_tilde_t`` for ``t = 1..steps`` (a number is repeated; None: the
    schedule :func:`default_eta`); ``ridge_alpha = 0`` skips the ridge readout and test error;
    ``ridge_alphas`` (non-empty) replaces ``ridge_alpha`` by several sizes from one pool;
    ``groups`` records the readout-group statistics after every step."""

    d: int
    target: str = "z1 + z1*z2 + z1*z2*z3"
    sigma: str = "erf(z-1)"
    steps: int = 3
    alpha0: float = 16.0
    kappa: float = 1.0
    beta: float = 1.0
    eta: float | tuple[float, ...] | None = None
    readout: str = "hypercube"
    delta: float = 0.0
    ridge_alpha: float = 0.0
    lam: float = default("lam")  # the table's (THEORY.md §1); the campaigns: CAMPAIGN_LAM
    n_test: int = 10_000
    ridge_alphas: tuple[float, ...] = ()
    groups: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", _integer("d", self.d, 8))
        object.__setattr__(self, "steps", _integer("steps", self.steps, 1))
        for name in ("alpha0", "beta"):
            object.__setattr__(self, name, _real(name, getattr(self, name), 0.0, open_lo=True))
        object.__setattr__(self, "kappa", _real("kappa", self.kappa, 1.0))
        for name in ("delta", "ridge_alpha", "lam"):
            object.__setattr__(self, name, _real(name, getattr(self, name), 0.0))
        object.__setattr__(self, "n_test", _integer("n_test", self.n_test, 1))
        eta = default_eta(self.steps) if self.eta is None else self.eta
        if isinstance(eta, (int, float, np.floating, np.integer)) and not isinstance(eta, bool):
            eta = (eta,) * self.steps
        eta = tuple(_real("eta", e, 0.0) for e in eta)
        if len(eta) != self.steps:
            raise ValueError(f"eta needs one value per step (steps={self.steps}), got {len(eta)}")
        object.__setattr__(self, "eta", eta)
        ra = tuple(_real("ridge_alphas", r, 0.0, open_lo=True) for r in self.ridge_alphas)
        if ra and self.ridge_alpha > 0:
            raise ValueError("give ridge_alpha or ridge_alphas, not both")
        if any(round(r * self.d) < 1 for r in ra):
            raise ValueError(f"every round(ridge_alphas d) must be >= 1, got {ra} at d={self.d}")
        object.__setattr__(self, "ridge_alphas", ra)
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {', '.join(READOUTS)}, got {self.readout!r}")
        get_function(self.sigma)
        target_callable(self.target)
        if self.p < 2:
            raise ValueError(f"p = round(beta d) must be >= 2, got {self.p}")
        if self.n < 1:
            raise ValueError(f"n = round(alpha0 d^kappa) must be >= 1, got {self.n}")
        if self.ridge_alpha > 0 and self.n_ridge < 1:
            raise ValueError(f"n_ridge = round(ridge_alpha d) must be >= 1, got {self.n_ridge}")

    @property
    def p(self) -> int:
        return int(round(self.beta * self.d))

    @property
    def n(self) -> int:
        """Batch size of every step, ``round(alpha0 d^kappa)``."""
        return int(round(self.alpha0 * self.d**self.kappa))

    @property
    def n_ridge(self) -> int:
        return int(round(self.ridge_alpha * self.d))

    @property
    def ridge_levels(self) -> tuple[float, ...]:
        """The ridge sizes evaluated: ``ridge_alphas``, else ``(ridge_alpha,)`` when > 0."""
        return self.ridge_alphas or ((self.ridge_alpha,) if self.ridge_alpha > 0 else ())

    @property
    def k(self) -> int:
        if isinstance(self.target, str):
            return _target_k(self.target)
        return target_callable(self.target)[1]  # (its error: a target must be text)

    @property
    def learning_rates(self) -> tuple[float, ...]:
        """``eta_t = eta_tilde_t p d^((kappa-1)/2)`` (Dandi et al. 2023 scaling)."""
        return tuple(e * self.p * self.d ** ((self.kappa - 1) / 2) for e in self.eta)

    def record(self) -> dict:
        """The parameters as a flat dict (``eta`` as text, one value per step; ``ridge_alphas``
        as text and ``groups`` only when set)."""
        out = asdict(self)
        out["eta"] = ",".join(f"{e:g}" for e in self.eta)
        ra, groups = out.pop("ridge_alphas"), out.pop("groups")
        if ra:
            out["ridge_alphas"] = ",".join(f"{r:g}" for r in ra)
        if groups:
            out["groups"] = True
        out.update(p=self.p, n=self.n, k=self.k)
        return out


@dataclass(frozen=True, eq=False)
class MultiStepRun:
    """One repetition. Arrays are indexed by step ``t = 0..T`` (0 = initialisation)."""

    config: MultiStepConfig
    repetition: int
    overlaps: np.ndarray = field(repr=False)  # (T+1, p, k): |<w_k, theta_j>| / |w_k|
    subspace_fraction: np.ndarray = field(repr=False)  # (T+1,): |W Theta^T|_F / |W|_F
    weight_norm: np.ndarray = field(repr=False)  # (T+1,): mean_k |w_k|
    train_loss: np.ndarray = field(repr=False)  # (T,): L_t on batch t before step t
    test_error: np.ndarray | None = field(repr=False)  # (T+1,) or None (first ridge size)
    target_power: float = math.nan  # E g^2 on the test inputs (the error of f = 0)
    seconds: float = 0.0
    test_errors: np.ndarray | None = field(default=None, repr=False)  # (T+1, ridge sizes)
    groups: list | None = field(default=None, repr=False)  # GroupStats per step, or None

    def table(self) -> pd.DataFrame:
        """Tidy rows (step, direction) with mean/max overlaps and every parameter; with several
        ridge sizes, ``test_error`` is the first size's and ``test_error_alpha<a>`` holds each
        size's (one row per size and step: :func:`validation.multistep.groups.risk_rows`)."""
        cfg = self.config.record()
        rows = []
        T, _, k = self.overlaps.shape
        levels = self.config.ridge_levels
        for t in range(T):
            each = ({f"test_error_alpha{a:g}": float(self.test_errors[t, i])
                     for i, a in enumerate(levels)}
                    if len(levels) > 1 and self.test_errors is not None else {})
            for j in range(k):
                o = self.overlaps[t, :, j]
                rows.append({
                    **cfg, "repetition": self.repetition, "step": t, "direction": j + 1,
                    "mean_overlap": float(o.mean()), "max_overlap": float(o.max()),
                    "median_overlap": float(np.median(o)),
                    "subspace_fraction": float(self.subspace_fraction[t]),
                    "weight_norm": float(self.weight_norm[t]),
                    "train_loss": float(self.train_loss[t]) if t < len(self.train_loss)
                    else math.nan,
                    "test_error": float(self.test_error[t]) if self.test_error is not None
                    else math.nan,
                    "target_power": self.target_power, "seconds": self.seconds, **each,
                })
        return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------
# building blocks


def readout_vector(p: int, kind: str) -> np.ndarray:
    """``a0``: ``1/sqrt p`` everywhere, or ``+1/sqrt p`` on the first ``ceil(p/2)`` rows and
    ``-1/sqrt p`` on the rest (hypercube halves)."""
    if kind == "constant":
        return np.full(p, 1.0 / math.sqrt(p))
    if kind in ("pm1", "hypercube"):
        s = np.where(np.arange(p) < (p + 1) // 2, 1.0, -1.0)
        return s / math.sqrt(p)
    raise ValueError(f"readout must be one of {', '.join(READOUTS)}, got {kind!r}")


def chunk_rows(width: int, n: int) -> int:
    """Samples per chunk so that a ``rows x width`` float64 block fits in :data:`CHUNK_BYTES`."""
    return mc.chunk_rows(width, n, CHUNK_BYTES, 16)


def giant_step(W: np.ndarray, a: np.ndarray, theta: np.ndarray, g: Callable, sigma: Function, *,
               n: int, eta: float, delta: float, rng: np.random.Generator,
               noise: np.random.Generator | None = None) -> tuple[np.ndarray, float]:
    """``W - eta grad_W L`` on a fresh batch of ``n`` samples drawn in chunks; returns the new
    weights and ``L`` before the step (:func:`validation.protocol.montecarlo.giant_step`)."""
    p, d = W.shape
    chunks = mc.labelled(mc.batches(rng, n, d, chunk_rows(max(p, d), n)), theta, g, delta, noise)
    return mc.giant_step(W, chunks, sigma, rate=eta / (n * p), a=a)



def overlap_matrix(W: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``O[k, j] = |<w_k, theta_j>| / |w_k|`` (``p x k``)."""
    return np.abs(W @ theta.T) / np.linalg.norm(W, axis=1, keepdims=True)


def subspace_fraction(W: np.ndarray, theta: np.ndarray) -> float:
    """``|W Theta^T|_F / |W|_F``: share of the weights' norm inside ``span(theta_j)``."""
    return float(np.linalg.norm(W @ theta.T) / np.linalg.norm(W))


def ridge_test_error(W: np.ndarray, theta: np.ndarray, g: Callable, sigma: Function, *,
                     n_ridge: int, lam: float, n_test: int, delta: float,
                     ridge_seed: np.random.SeedSequence, noise_seed: np.random.SeedSequence,
                     test_seed: np.random.SeedSequence) -> tuple[float, float]:
    """Ridge readout on ``sigma(W x)/sqrt p`` (sum convention) and its test error; returns
    ``(E (g - f)^2, E g^2)`` on the same fresh test inputs: the protocol's one ridge and test
    error (:func:`validation.protocol.montecarlo.ridge_test_errors`) at one sample size."""
    err, power = mc.ridge_test_errors(W, theta, g, sigma, n_ridges=[n_ridge], lam=lam,
                                      n_test=n_test, delta=delta, ridge_seed=ridge_seed,
                                      noise_seed=noise_seed, test_seed=test_seed,
                                      chunk_bytes=CHUNK_BYTES)
    return float(err[0]), power


# ------------------------------------------------------------------------------------------------
# runs


def run_once(config: MultiStepConfig, seed: np.random.SeedSequence,
             repetition: int = 0) -> MultiStepRun:
    """One repetition of ``config`` from its own ``SeedSequence`` (module docstring streams)."""
    t0 = time.perf_counter()
    sigma = get_function(config.sigma)
    g, k = target_callable(config.target)
    T = config.steps
    s = mc.streams(seed, (*STREAMS, *(f"batch{t}" for t in range(T)),
                          *(f"noise{t}" for t in range(T))))
    batch_seeds = [s[f"batch{t}"] for t in range(T)]
    noise_seeds = [s[f"noise{t}"] for t in range(T)]
    W = sphere_rows(np.random.default_rng(s["weights"]), config.p, config.d)
    theta = teacher_directions(np.random.default_rng(s["teacher"]), k, config.d)
    a = readout_vector(config.p, config.readout)
    T = config.steps
    overlaps = np.empty((T + 1, config.p, k))
    frac, norm, loss = np.empty(T + 1), np.empty(T + 1), np.empty(T)
    levels = config.ridge_levels
    test = np.empty((T + 1, len(levels))) if levels else None
    groups = [] if config.groups else None
    power = math.nan

    def measure(t: int) -> None:
        nonlocal power
        overlaps[t] = overlap_matrix(W, theta)
        frac[t] = subspace_fraction(W, theta)
        norm[t] = float(np.linalg.norm(W, axis=1).mean())
        if groups is not None:
            groups.append(mg.group_statistics(W, theta, a))
        if config.ridge_alphas:
            test[t], power = mc.ridge_test_errors(
                W, theta, g, sigma, n_ridges=[round(r * config.d) for r in levels],
                lam=config.lam, n_test=config.n_test, delta=config.delta, ridge_seed=s["ridge"],
                noise_seed=s["ridge_noise"], test_seed=s["test"], chunk_bytes=CHUNK_BYTES)
        elif test is not None:
            test[t, 0], power = ridge_test_error(
                W, theta, g, sigma, n_ridge=config.n_ridge, lam=config.lam,
                n_test=config.n_test, delta=config.delta, ridge_seed=s["ridge"],
                noise_seed=s["ridge_noise"], test_seed=s["test"])

    measure(0)
    for t, eta in enumerate(config.learning_rates):
        W, loss[t] = giant_step(W, a, theta, g, sigma, n=config.n, eta=eta, delta=config.delta,
                                rng=np.random.default_rng(batch_seeds[t]),
                                noise=np.random.default_rng(noise_seeds[t]))
        if not np.all(np.isfinite(W)):
            raise FloatingPointError(f"weights became non-finite at step {t + 1}; lower eta "
                                     f"(eta_tilde = {config.eta[t]:g})")
        measure(t + 1)
    return MultiStepRun(config, repetition, overlaps, frac, norm, loss,
                        None if test is None else test[:, 0], power, time.perf_counter() - t0,
                        test, groups)


def _run_indexed(config: MultiStepConfig, job: tuple) -> MultiStepRun:
    return run_once(config, *job)


def run_repetitions(config: MultiStepConfig, children: Sequence[np.random.SeedSequence],
                    repetitions: Iterable[int], n_jobs: int = 1,
                    progress: bool | None = False) -> list[MultiStepRun]:
    """:func:`run_once` for the given repetitions (repetition ``i`` from ``children[i]``), on
    ``n_jobs`` workers of :func:`validation.protocol.pool.run_tasks`; in the order of
    ``repetitions``.
    ``progress``: a report per repetition on stderr (:mod:`asymptotics.core.progress`)."""
    from functools import partial

    from asymptotics.core.progress import Progress

    from ..protocol.pool import run_tasks

    jobs = [(children[i], i) for i in repetitions]
    runs: list = [None] * len(jobs)
    with Progress(len(jobs), f"multistep d={config.d}", unit="runs", enabled=progress) as bar:
        for k, run in run_tasks(partial(_run_indexed, config), jobs, n_jobs):
            runs[k] = run
            bar.update()
    return runs


def run_multistep(config: MultiStepConfig, *, seeds: int = 5, seed: int = 0, n_jobs: int = 1,
                  keep_runs: bool = False,
                  progress: bool | None = None) -> pd.DataFrame | tuple[pd.DataFrame, list]:
    """``seeds`` repetitions (repetition ``i`` from child ``i`` of ``SeedSequence(seed)``, the
    same whatever ``n_jobs``); a tidy DataFrame, one row per (repetition, step, direction).
    ``progress``: a report per repetition on stderr (False: none)."""
    seeds = _integer("seeds", seeds, 1)
    seed = _integer("seed", seed, 0)
    n_jobs = _integer("n_jobs", n_jobs, 1)
    children = np.random.SeedSequence(seed).spawn(seeds)
    runs = run_repetitions(config, children, range(seeds), n_jobs, progress=progress)
    df = pd.concat([r.table() for r in runs], ignore_index=True)
    df["seed"] = seed
    return (df, runs) if keep_runs else df


def summarize(df: pd.DataFrame, by: Sequence[str] = ("d", "step", "direction")) -> pd.DataFrame:
    """Mean and standard error over repetitions of the per-run measures, grouped by ``by``."""
    cols = ["mean_overlap", "max_overlap", "subspace_fraction", "test_error", "target_power"]
    g = df.groupby(list(by), sort=True)[cols]
    mean = g.mean()
    count = g.count()
    se = g.std(ddof=1) / np.sqrt(count.where(count > 0))
    out = mean.add_suffix("_mean").join(se.add_suffix("_se"))
    out["repetitions"] = df.groupby(list(by))["repetition"].nunique()
    return out.reset_index()
