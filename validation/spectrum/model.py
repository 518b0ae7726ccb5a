"""Configuration, seed streams and simulation of one or two large steps (conventions: the
docstring of :mod:`validation.spectrum`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.core import checks
from asymptotics.multiindex.spikes import target_function

from ..protocol import montecarlo as mc
from ..protocol.montecarlo import sphere_rows, teacher_directions

STREAMS = {"W0": 0, "readout": 1, "teacher": 2, "batch1": 3, "batch2": 4, "test": 5}
READOUTS = ("gaussian", "uniform", "constant")
BATCHES = ("fresh", "reused")
EDGE_METHODS = ("fit", "mp")
MAX_FEATURE_ORDER = 20


def rng_for(seed: int, stream: str) -> np.random.Generator:
    """The generator of one named stream: child ``STREAMS[stream]`` of ``SeedSequence(seed)``
    (:func:`validation.protocol.montecarlo.streams`)."""
    return np.random.default_rng(mc.streams(np.random.SeedSequence(seed), list(STREAMS))[stream])


def check_real(value, name: str, lo: float, hi: float = math.inf, *, lo_open=False, hi_open=False):
    return checks.real(name, value, lo, hi, lo_open=lo_open, hi_open=hi_open)


#: the largest matrix (weights p x d, batch n x d) a run may allocate (float64, 0.4 GB)
MAX_ENTRIES = 50_000_000



def _target(text: str) -> None:
    target_function(text, None)


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
        object.__setattr__(self, "a1", check_real(self.a1, "a1", 0.0, 0.5))
        if self.a2 is not None:
            object.__setattr__(self, "a2", check_real(self.a2, "a2", 0.0, 0.5))
        object.__setattr__(self, "beta", check_real(self.beta, "beta", 0.0, 64.0, lo_open=True))
        object.__setattr__(self, "alpha0",
                           check_real(self.alpha0, "alpha0", 0.0, 64.0, lo_open=True))
        object.__setattr__(self, "eta1", check_real(self.eta1, "eta1", 0.0))
        object.__setattr__(self, "eta2", check_real(self.eta2, "eta2", 0.0))
        object.__setattr__(self, "delta", check_real(self.delta, "delta", 0.0))
        if self.batch not in BATCHES:
            raise ValueError(f"batch must be one of {BATCHES}, got {self.batch!r}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {self.readout!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) \
                or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
        for name, check in (("sigma", get_function), ("target", _target)):
            try:  # raises on unknown names or bad expressions: say which parameter
                check(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"{name} = {getattr(self, name)!r}: {exc}") from None
        if self.p < 2 or self.n < 2:
            raise ValueError(f"beta*d and alpha0*d must be >= 2 (got p={self.p}, n={self.n})")
        for rows, what in ((self.p, "beta"), (self.n, "alpha0")):  # before any allocation
            if rows * self.d > MAX_ENTRIES:
                raise ValueError(f"d={self.d} with {what}={getattr(self, what):g} needs a "
                                 f"{rows} x {self.d} matrix; at most {MAX_ENTRIES:.0e} entries "
                                 f"({MAX_ENTRIES * 8 / 2**30:.1f} GiB) are allowed: lower d")

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
    (:func:`validation.protocol.montecarlo.giant_step` on a single chunk)."""
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


