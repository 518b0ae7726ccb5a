"""Finite-d Monte Carlo of the K-group, r-spike spiked random-features model.

The model (the protocol of docs/THEORY.md §1 with the first layer replaced):

- ``p = round(beta d)`` neurons in ``K`` groups; group ``g`` holds ``round(pi_g p)`` consecutive
  rows (the last group the remainder), ``pi = fractions``;
- rows ``w_i = sqrt(c_g) G_i + V u_g``: ``G_i`` i.i.d. uniform on the unit sphere of R^d (the
  project's ``W0`` rows), ``V`` a ``d x r`` orthonormal basis (Haar, fresh per repetition),
  ``u_g`` row ``g`` of ``loadings`` (``K x r``), ``c_g = bulk[g]``;
- target ``y = g(theta_1.x, ..., theta_k.x) + sqrt(delta) xi``, ``theta_j = V Gamma[:, j] +
  rho_j t_j`` with ``Gamma = overlaps`` (``r x k``), ``rho_j = sqrt(1 - |Gamma[:, j]|^2)`` and
  ``t_1..t_k`` orthonormal and orthogonal to ``V`` (so ``|theta_j| = 1``);
- ``f(x) = a . sigma(W x) / sqrt(p)``, ``a`` the ridge readout with the SUM loss
  ``sum_i (y_i - f(x_i))^2 + lam |a|^2`` on ``n = round(alpha d)`` fresh samples (nested along
  alpha: one pass, :func:`validation.protocol.simulator.fit_readouts`), risk ``E (g - f)^2`` on
  ``n_test`` fresh noiseless inputs (the unbiased ``mc`` estimator of
  :mod:`validation.protocol.estimators`).

Seeds: repetition ``i`` is child ``i`` of ``SeedSequence(seed)``; inside it the named streams of
:data:`validation.protocol.simulator.STREAMS` (the same names and order): ``weights`` the bulk ``G``
(random stream 2, :class:`validation.protocol.montecarlo.BlockRows`), ``teacher`` the basis ``V``,
``step`` the directions ``T``, ``ridge``/``ridge_noise`` the readout batch, ``test`` the test
inputs. With ``K = r = k = 1`` and ``Gamma = 1`` the repetition is the sRF repetition of
:func:`validation.protocol.simulator.simulate` with ``spike = (|u|, c, sign(u))`` number for number
(``tests/test_spiked_simulator.py``); for other ``Gamma`` the two draw the plane of
``(v, theta)`` differently and agree in law.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.targets import target_callable
from asymptotics.core import checks

from ..protocol import montecarlo as mc
from ..protocol.simulator import STREAMS, estimate_test_error, fit_readouts

Matrix = tuple[tuple[float, ...], ...]


def _matrix(name: str, value: object) -> Matrix:
    """A finite 2-d float matrix as a tuple of rows (ValueError naming ``name`` otherwise)."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-d array of real numbers, got {value!r}") from None
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-d array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return tuple(tuple(float(v) for v in row) for row in a)


def _vector(name: str, value: object) -> tuple[float, ...]:
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-d array of real numbers, got {value!r}") from None
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1 or a.size < 1 or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a non-empty 1-d array of finite numbers, got "
                         f"{value!r}")
    return tuple(float(v) for v in a)


@dataclass(frozen=True)
class SpikedSetting:
    """Every parameter of the K-group, r-spike sRF model (module docstring). ``loadings`` is
    ``K x r``, ``bulk`` (``c_g > 0``) and ``fractions`` (``pi_g > 0``, summing to 1) have
    ``K`` entries, ``overlaps`` (``Gamma``) is ``r x k`` with ``k`` the target's number of
    variables ``z1..zk`` and columns of norm at most 1."""

    sigma: str
    target: str
    loadings: Matrix
    bulk: tuple[float, ...]
    fractions: tuple[float, ...]
    overlaps: Matrix
    alpha: float
    lam: float
    beta: float = 1.0
    d: int = 1000
    delta: float = 0.0
    n_test: int = 0  # 0: max(10000, 2 d)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.sigma, str):
            raise ValueError(f"sigma must be the name of an activation, got {self.sigma!r}")
        try:
            get_function(self.sigma)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"sigma {self.sigma!r} is not a known activation: {exc}") from None
        try:
            _, k = target_callable(self.target)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"target {self.target!r}: {exc}") from None
        set_(self, "loadings", _matrix("loadings", self.loadings))
        set_(self, "overlaps", _matrix("overlaps", self.overlaps))
        set_(self, "bulk", _vector("bulk", self.bulk))
        set_(self, "fractions", _vector("fractions", self.fractions))
        K, r = self.K, self.r
        if len(self.bulk) != K:
            raise ValueError(f"bulk needs one variance per group (K = {K} rows of loadings), "
                             f"got {len(self.bulk)}")
        if min(self.bulk) <= 0:
            raise ValueError(f"bulk variances c_g must be > 0, got {self.bulk}")
        if len(self.fractions) != K:
            raise ValueError(f"fractions needs one entry per group (K = {K}), got "
                             f"{len(self.fractions)}")
        if min(self.fractions) <= 0 or abs(sum(self.fractions) - 1.0) > 1e-9:
            raise ValueError(f"fractions must be > 0 and sum to 1, got {self.fractions}")
        gamma = np.asarray(self.overlaps)
        if gamma.shape != (r, k):
            raise ValueError(f"overlaps must be r x k = {r} x {k} (r = columns of loadings, k = "
                             f"variables of target {self.target!r}), got {gamma.shape[0]} x "
                             f"{gamma.shape[1]}")
        norms = np.linalg.norm(gamma, axis=0)
        if np.any(norms > 1.0 + 1e-12):
            raise ValueError(f"each column of overlaps must have norm <= 1 (|theta_j| = 1), got "
                             f"norms {np.round(norms, 6).tolist()}")
        set_(self, "alpha", checks.positive("alpha", self.alpha))
        set_(self, "lam", checks.positive("lam", self.lam, allow_zero=True))
        set_(self, "beta", checks.positive("beta", self.beta))
        set_(self, "delta", checks.positive("delta", self.delta, allow_zero=True))
        if isinstance(self.d, bool) or int(self.d) != self.d or self.d < 2:
            raise ValueError(f"d must be an integer >= 2, got {self.d!r}")
        set_(self, "d", int(self.d))
        if r + k > self.d:
            raise ValueError(f"r + k = {r + k} directions do not fit in d = {self.d}")
        if isinstance(self.n_test, bool) or int(self.n_test) != self.n_test or self.n_test < 0:
            raise ValueError(f"n_test must be an integer >= 0 (0 = default), got {self.n_test!r}")
        sizes = self.group_sizes
        if min(sizes) < 1:
            raise ValueError(f"group sizes round(pi_g p) = {list(sizes)} at p = {self.p}: every "
                             "group needs at least one neuron; increase d or the fractions")
        if self.n < 1:
            raise ValueError(f"n = round(alpha d) must be >= 1, got alpha = {self.alpha:g}, "
                             f"d = {self.d}")

    # --- shapes and sizes -----------------------------------------------------------------
    @property
    def K(self) -> int:
        return len(self.loadings)

    @property
    def r(self) -> int:
        return len(self.loadings[0])

    @property
    def k(self) -> int:
        return len(self.overlaps[0])

    @property
    def p(self) -> int:
        return int(round(self.beta * self.d))

    @property
    def n(self) -> int:
        return int(round(self.alpha * self.d))

    @property
    def n_test_used(self) -> int:
        return int(self.n_test) if self.n_test else max(10_000, 2 * self.d)

    @property
    def group_sizes(self) -> tuple[int, ...]:
        """Rows per group: ``round(pi_g p)``, the last group the remainder."""
        head = [int(round(f * self.p)) for f in self.fractions[:-1]]
        return (*head, self.p - sum(head))

    @property
    def rho(self) -> np.ndarray:
        """``rho_j = sqrt(1 - |Gamma[:, j]|^2)``."""
        g = np.asarray(self.overlaps)
        return np.sqrt(np.maximum(1.0 - np.sum(g * g, axis=0), 0.0))

    def with_(self, **changes: object) -> SpikedSetting:
        """A copy with ``changes`` (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)

    def as_dict(self) -> dict:
        """Every parameter, matrices as JSON text (the columns of the campaign store)."""
        return dict(sigma=self.sigma, target=self.target, K=self.K, r=self.r, k=self.k,
                    loadings=json.dumps(self.loadings), bulk=json.dumps(self.bulk),
                    fractions=json.dumps(self.fractions), overlaps=json.dumps(self.overlaps),
                    lam=self.lam, beta=self.beta, d=self.d, p=self.p, delta=self.delta,
                    n_test=self.n_test_used)


# ------------------------------------------------------------------------------------------------
# one repetition


def directions(setting: SpikedSetting, teacher: np.random.Generator,
               step: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V, T, Theta)``: the ``d x r`` orthonormal spike basis (Haar, from ``teacher``), ``d x k``
    orthonormal directions ``T`` orthogonal to ``V`` (from ``step``) and the target directions
    ``Theta = V Gamma + T diag(rho)``."""
    d, r, k = setting.d, setting.r, setting.k
    V = mc.teacher_directions(teacher, r, d).T
    T = step.standard_normal((d, k))
    T -= V @ (V.T @ T)
    T -= V @ (V.T @ T)  # twice: orthogonal to V to rounding
    q, rr = np.linalg.qr(T)
    T = q * np.sign(np.diag(rr))
    theta = V @ np.asarray(setting.overlaps) + T * setting.rho[None, :]
    return V, T, theta


def spiked_weights(G: np.ndarray, V: np.ndarray, setting: SpikedSetting) -> np.ndarray:
    """``W``: row ``i`` of group ``g`` is ``sqrt(c_g) G_i + V u_g`` (``G`` is scaled in place)."""
    start = 0
    U = np.asarray(setting.loadings)
    for g, size in enumerate(setting.group_sizes):
        block = G[start:start + size]
        block *= math.sqrt(setting.bulk[g])
        block += (V @ U[g])[None, :]
        start += size
    return G


def first_layer(setting: SpikedSetting, seed: np.random.SeedSequence
                ) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(W, Theta, rngs)`` of one repetition: weights, target directions (``d x k``) and the
    sample sources of the readout and the test (module docstring)."""
    children = mc.streams(seed, STREAMS)
    rngs: dict = {name: np.random.default_rng(child) for name, child in children.items()}
    for name in ("weights", "ridge", "test"):
        rngs[name] = mc.BlockRows(children[name], setting.d)
    G = mc.sphere_rows(rngs["weights"], setting.p, setting.d)
    V, _, theta = directions(setting, rngs["teacher"], rngs["step"])
    return spiked_weights(G, V, setting), theta, rngs


def simulate_once(setting: SpikedSetting, alphas: Sequence[float],
                  seed: np.random.SeedSequence) -> np.ndarray:
    """Risks of one repetition along ``alphas`` (one first layer and test set, nested ridge
    batches; ``setting.alpha`` is ignored)."""
    sigma = get_function(setting.sigma)
    g, _ = target_callable(setting.target)
    W, theta, rngs = first_layer(setting, seed)
    ns = [max(1, int(round(a * setting.d))) for a in alphas]
    A = fit_readouts(W, theta, sigma, g, ns=ns, lams=[setting.lam], delta=setting.delta,
                     rng=rngs["ridge"], noise_rng=rngs["ridge_noise"])
    errors = estimate_test_error(W, A.reshape(setting.p, -1), theta, sigma, g,
                                 n_test=setting.n_test_used, rng=rngs["test"], estimator="mc")
    return np.asarray(errors, dtype=np.float64).reshape(len(ns))


# ------------------------------------------------------------------------------------------------
# many repetitions


@dataclass(frozen=True)
class SpikedResult:
    """Per-repetition risks (``seeds x alphas``) of :func:`simulate_spiked`, with mean and s.e."""

    setting: SpikedSetting
    alphas: tuple[float, ...]
    seed: int
    reps: tuple[int, ...]
    risks: np.ndarray = field(repr=False)
    seconds: tuple[float, ...] = field(repr=False)

    @cached_property
    def mean(self) -> np.ndarray:
        return self.risks.mean(axis=0)

    @cached_property
    def se(self) -> np.ndarray:
        n = self.risks.shape[0]
        if n < 2:
            return np.full(self.risks.shape[1], math.nan)
        return self.risks.std(axis=0, ddof=1) / math.sqrt(n)

    def rows(self) -> list[dict]:
        """Long format: one row per repetition and alpha, with every parameter."""
        base = self.setting.as_dict()
        out = []
        for i, rep in enumerate(self.reps):
            for j, a in enumerate(self.alphas):
                out.append(dict(base, alpha=a, n=max(1, int(round(a * self.setting.d))),
                                seed=self.seed, rep=rep, risk=float(self.risks[i, j]),
                                seconds=self.seconds[i]))
        return out

    def frame(self):
        """:meth:`rows` as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def summary(self):
        """One row per alpha: ``alpha, seeds, mean, se``."""
        import pandas as pd

        return pd.DataFrame(dict(alpha=self.alphas, seeds=len(self.reps), mean=self.mean,
                                 se=self.se))


def simulate_spiked(setting: SpikedSetting, alphas: Sequence[float] | None = None,
                    seeds: int = 12, seed: int = 0) -> SpikedResult:
    """``seeds`` independent repetitions of ``setting`` along ``alphas`` (default
    ``[setting.alpha]``); repetition ``i`` is child ``i`` of ``SeedSequence(seed)``."""
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    alphas = (setting.alpha,) if alphas is None else tuple(
        checks.positive("alpha", a) for a in alphas)
    if not alphas:
        raise ValueError("alphas must be non-empty")
    children = np.random.SeedSequence(int(seed)).spawn(int(seeds))
    risks, seconds = [], []
    for child in children:
        t0 = time.perf_counter()
        risks.append(simulate_once(setting, alphas, child))
        seconds.append(time.perf_counter() - t0)
    return SpikedResult(setting=setting, alphas=alphas, seed=int(seed),
                        reps=tuple(range(int(seeds))), risks=np.vstack(risks),
                        seconds=tuple(seconds))
