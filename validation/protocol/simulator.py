"""Finite-d Monte Carlo of the protocol of THEORY.md §1: the ground truth of the project.

Three models, all float64, all with the same data pipeline (teacher, ridge readout, test error):

- ``network``: the two-layer network. Rows of ``W0`` uniform on the unit sphere, ``a0 = 1/sqrt(p)``,
  one full-batch gradient step on ``L0 = (1/(2 n0)) sum_i (y_i - f(x_i))^2`` with
  ``n0 = alpha0 d`` fresh samples and ``eta = eta_tilde p``, i.e. row by row
  ``w_k <- w_k + (eta_tilde / n0) sum_i (y_i - f_i) sigma'(<w_k, x_i>) x_i``;
- ``srf``: the spiked random-features model of THEORY.md §3, ``W1 = sqrt(c) W0 + r 1_p v^T`` with
  ``v = gamma theta* + rho t`` (``t`` a random unit vector orthogonal to ``theta*``) and
  ``(r, c, gamma)`` from :func:`asymptotics.srf_mapping` — the exact object of the equations;
- ``rf``: random features at initialisation (``W1 = W0``), the ``eta_tilde = 0`` baseline.

Then ``a_hat = argmin_a sum_i (y_i - <a, sigma(W1 x_i)>/sqrt p)^2 + lam |a|^2`` on ``n = alpha d``
fresh samples (a SUM over samples), and ``R = E (g(<theta*, x>) - f(x))^2`` on ``n_test`` fresh
noiseless inputs. Labels ``y = g(<theta*, x>) + sqrt(delta) xi`` in both training batches.

Randomness: one ``SeedSequence(seed)`` per call, one spawned child per repetition, and inside a
repetition one grandchild per stream (weights, teacher, step batch, ridge batch, test batch), so a
repetition's value does not depend on how many workers run or in which order.
Memory: every pass over samples is chunked, so ``n0 = 50 d`` at ``d = 8000`` needs only the
``p x d`` weights, one chunk and the ridge system (the smaller of ``p x p`` and ``n x n``).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from scipy.linalg import blas

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.core import checks, group_checks
from asymptotics.core.parameters import default
from asymptotics.step.srf import srf_mapping

from . import estimators
from . import montecarlo as mc
from .montecarlo import (  # noqa: F401  (re-exported: the simulator's building blocks)
    BlockRows,
    batches,
    descent_direction,
    features,
    labels,
    ridge_readout,
    sphere_rows,
    unit_vector,
)

MODELS = ("network", "srf", "rf")
STREAMS = ("weights", "teacher", "step", "step_noise", "ridge", "ridge_noise", "test")
CHUNK_BYTES = mc.CHUNK_BYTES


def chunk_rows(p: int, n: int) -> int:
    """Rows per chunk of ``rows x p`` pre-activations (:data:`CHUNK_BYTES`)."""
    return mc.chunk_rows(p, n, CHUNK_BYTES, 64)


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    return checks.positive(name, value, allow_zero=allow_zero)


@dataclass(frozen=True)
class Setting:
    """Every parameter of one simulated experiment (THEORY.md §1 conventions)."""

    model: str
    sigma: str
    target: str
    alpha: float
    alpha0: float
    eta: float
    lam: float
    beta: float = default("beta")
    delta: float = default("delta")
    d: int = default("d")
    n_test: int = 0  # 0: max(10000, 2 d)
    spike: tuple[float, float, float] | None = None  # srf only: (r, c, gamma) instead of the map
    stream: int = 2  # random stream of the samples: 2 = BlockRows (parallel), 1 = sequential
    # test error: mc, split or cv (validation.protocol.estimators)
    estimator: str = default("estimator")

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        for name in ("alpha", "alpha0", "beta"):
            _positive(name, getattr(self, name))
        for name in ("eta", "lam", "delta"):
            _positive(name, getattr(self, name), allow_zero=True)
        if self.model == "rf" and self.eta != 0:
            raise ValueError(f"model 'rf' is random features (eta = 0), got eta={self.eta:g}")
        if isinstance(self.d, bool) or not isinstance(self.d, (int, float, np.integer)):
            raise TypeError(f"d must be an integer >= 2, got {self.d!r}")
        if not (math.isfinite(self.d) and self.beta * self.d < 1e9 and self.d < 1e9):
            raise ValueError(f"d = {self.d:g} with beta = {self.beta:g} is beyond what a "
                             "simulation can hold (p = beta d and d below 1e9)")
        if int(self.d) != self.d or self.d < 2:
            raise ValueError(f"d must be an integer >= 2, got {self.d}")
        if self.estimator not in estimators.ESTIMATORS:
            raise ValueError(f"estimator must be one of {', '.join(estimators.ESTIMATORS)}, "
                             f"got {self.estimator!r}")
        if self.stream not in (1, 2):
            raise ValueError(f"stream must be 1 or 2, got {self.stream!r}")
        if int(self.n_test) != self.n_test or self.n_test < 0:
            raise ValueError(f"n_test must be an integer >= 0 (0 = default), got {self.n_test}")
        if self.spike is not None:
            if self.model != "srf" or len(self.spike) != 3:
                raise ValueError("spike = (r, c, gamma) is for model 'srf' only, got "
                                 f"{self.spike} with model {self.model!r}")
            r, c, gamma = map(float, self.spike)
            if not (r >= 0 and c > 0 and -1 <= gamma <= 1):
                raise ValueError(f"spike needs r >= 0, c > 0, -1 <= gamma <= 1, got {self.spike}")
        for name in ("n", "n0", "p"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} = round(ratio * d) must be >= 1 for this setting "
                                 f"(d={self.d}); increase d")

    @property
    def p(self) -> int:
        return int(round(self.beta * self.d))

    @property
    def n(self) -> int:
        return int(round(self.alpha * self.d))

    @property
    def n0(self) -> int:
        return int(round(self.alpha0 * self.d))

    @property
    def n_test_used(self) -> int:
        return int(self.n_test) if self.n_test else max(10_000, 2 * int(self.d))


@dataclass(frozen=True)
class SimulationResult:
    """Mean, standard error and per-seed risks of ``seeds`` repetitions of a :class:`Setting`."""

    setting: Setting
    seed: int
    values: tuple[float, ...]
    mean: float
    se: float
    seconds: float
    extras: dict = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict:
        row = asdict(self.setting)
        spike = self.setting.spike
        row.update(spike="" if spike is None else ",".join(f"{v:.10g}" for v in spike),
                   p=self.setting.p, n=self.setting.n, n0=self.setting.n0,
                   n_test=self.setting.n_test_used, seed=self.seed, seeds=len(self.values),
                   sim_mean=self.mean, sim_se=self.se, seconds=self.seconds,
                   values=";".join(f"{v:.10g}" for v in self.values))
        return row


# ------------------------------------------------------------------------------------------------
# building blocks (public: the tests check each against an independent computation)


def network_step(
    W0: np.ndarray, theta: np.ndarray, sigma: Function, target: Function, *,
    n0: int, eta_tilde: float, delta: float, rng: np.random.Generator | BlockRows,
    noise_rng: np.random.Generator | None = None,
) -> np.ndarray:
    """``W1 = W0 + (eta_tilde / n0) sum_i (y_i - f(x_i; a0, W0)) sigma'(W0 x_i) x_i^T``, chunked.

    With ``a0 = 1/sqrt(p)``, ``f = mean_k sigma(<w_k, x>)`` and ``eta = eta_tilde p`` this is
    ``W0 - eta grad_W L0`` of THEORY.md §1 (the factor ``1/sqrt(p)`` twice times ``p``); the step
    itself is :func:`validation.protocol.montecarlo.giant_step`.
    """
    p, d = W0.shape
    chunks = mc.labelled(batches(rng, n0, d, chunk_rows(p, n0)), theta, target, delta, noise_rng)
    return mc.giant_step(W0, chunks, sigma, rate=eta_tilde / n0)[0]


def srf_weights(
    W0: np.ndarray, theta: np.ndarray, *, r: float, c: float, gamma: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """``W1 = sqrt(c) W0 + r 1_p v^T`` with ``v = gamma theta + rho t``, ``t`` ⟂ theta."""
    t = rng.standard_normal(theta.shape[0])
    t -= (t @ theta) * theta
    t /= np.linalg.norm(t)
    v = gamma * theta + math.sqrt(max(1.0 - gamma * gamma, 0.0)) * t
    W1 = math.sqrt(c) * W0
    W1 += r * v[None, :]
    return W1, v


def fit_readouts(
    W1: np.ndarray, theta: np.ndarray, sigma: Function, target: Function, *,
    ns: Sequence[int], lams: Sequence[float], delta: float, rng: np.random.Generator | BlockRows,
    noise_rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Ridge readouts on the first ``n`` of one stream of fresh samples, for every ``n`` in ``ns``
    and ``lam`` in ``lams``: an array ``p x len(ns) x len(lams)``.

    The samples are nested (the batch for a smaller ``n`` is a prefix of the larger one), so a
    whole curve costs one pass. The primal system ``F^T F`` is accumulated in chunks; while
    ``n < p`` the features are kept and the dual ``n x n`` system is solved instead.
    """
    p, d = W1.shape
    ns = [int(n) for n in ns]
    if any(n < 1 for n in ns):
        raise ValueError(f"sample sizes must be >= 1, got {ns}")
    order = sorted(set(ns))
    n_max = order[-1]
    keep = max((n for n in order if n < p), default=0)
    need_gram = order[-1] >= p
    scale = 1.0 / math.sqrt(p)
    gram, rhs = np.zeros((p, p)), np.zeros(p)
    kept_F: list[np.ndarray] = []
    kept_y: list[np.ndarray] = []
    solved: dict[int, np.ndarray] = {}
    start = 0
    for X in batches(rng, n_max, d, chunk_rows(p, n_max), stops=order):
        y = labels(X @ theta, target, delta, noise_rng)
        F = X @ W1.T
        features(F, sigma, scale)
        if start < keep:
            kept_F.append(F)
            kept_y.append(y)
        start += X.shape[0]
        if need_gram:  # upper triangle only (BLAS syrk: half the flops of F^T F)
            gram = blas.dsyrk(1.0, F, beta=1.0, c=gram, trans=1, lower=0, overwrite_c=1)
            rhs += F.T @ y
        if start in order:
            A = np.empty((p, len(lams)))
            if start < p:  # dual: one n x n kernel for every lam
                F_n, y_n = np.vstack(kept_F), np.concatenate(kept_y)
                K = F_n @ F_n.T
                for j, lam in enumerate(lams):
                    A[:, j] = ridge_readout(F_n, y_n, lam, method="dual", kernel=K)
            else:  # primal: Cholesky reads the accumulated upper triangle; lstsq needs it all
                full = None
                for j, lam in enumerate(lams):
                    if lam == 0 and full is None:
                        full = np.triu(gram) + np.triu(gram, 1).T
                    A[:, j] = ridge_readout(None, None, lam, gram=gram if lam else full, rhs=rhs)
            solved[start] = A
    return np.stack([solved[n] for n in ns], axis=1)


def estimate_test_error(
    W1: np.ndarray, a: np.ndarray, theta: np.ndarray, sigma: Function, target: Function, *,
    n_test: int, rng: np.random.Generator | BlockRows, estimator: str = "mc",
) -> np.ndarray | float:
    """``E (g(<theta*, x>) - a . sigma(W1 x)/sqrt p)^2`` on ``n_test`` fresh noiseless inputs,
    by ``estimator`` (:mod:`validation.protocol.estimators`: ``mc``, ``split`` or ``cv``).

    ``a`` may be ``p x k`` (k readouts on the same test inputs): then an array of k errors.
    """
    p, d = W1.shape
    A = a.reshape(p, -1)
    out = estimators.estimate_test_error(W1, A, theta, sigma, target,
                                         batches(rng, n_test, d, chunk_rows(p, n_test)), n_test,
                                         estimator)
    return float(out[0]) if a.ndim == 1 else out


# ------------------------------------------------------------------------------------------------
# one repetition and many


def first_layer(setting: Setting, seed: np.random.SeedSequence, sigma: Function,
                target: Function) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(W1, theta*, sources)`` of one repetition (``seed``: or an int): the weights the
    readout is fitted on, the random sources of the rest (streams: BlockRows in stream 2)."""
    group_checks.instance("setting", setting, Setting, "Setting(model='network', ...)")
    seed = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(
        checks.integer("seed", seed, 0))
    sigma, target = get_function(sigma), get_function(target)
    children = mc.streams(seed, STREAMS)
    rngs = {name: np.random.default_rng(child) for name, child in children.items()}
    if setting.stream == 2:
        for name in ("weights", "ridge", "test"):
            rngs[name] = BlockRows(children[name], setting.d)
    W0 = sphere_rows(rngs["weights"], setting.p, setting.d)
    theta = unit_vector(rngs["teacher"], setting.d)
    if setting.model == "network" and setting.eta > 0:
        step = BlockRows(children["step"], setting.d) if setting.stream == 2 else rngs["step"]
        W1 = network_step(W0, theta, sigma, target, n0=setting.n0, eta_tilde=setting.eta,
                          delta=setting.delta, rng=step, noise_rng=rngs["step_noise"])
    elif setting.model == "srf" and setting.spike is not None:
        r, c, gamma = setting.spike
        W1, _ = srf_weights(W0, theta, r=r, c=c, gamma=gamma, rng=rngs["step"])
    elif setting.model == "srf" and setting.eta > 0:
        m = srf_mapping(sigma, target, alpha0=setting.alpha0, eta=setting.eta,
                        delta=setting.delta)
        W1, _ = srf_weights(W0, theta, r=m.r, c=m.c, gamma=m.gamma, rng=rngs["step"])
    else:  # rf, or eta_tilde = 0: no step
        W1 = W0
    return W1, theta, rngs


def simulate_grid_once(
    setting: Setting, alphas: Sequence[float], lams: Sequence[float],
    seed: np.random.SeedSequence,
) -> np.ndarray:
    """Test errors ``len(alphas) x len(lams)`` of one repetition: one first layer, nested ridge
    batches along alpha, one test set (``setting.alpha`` and ``setting.lam`` are ignored)."""
    sigma, target = get_function(setting.sigma), get_function(setting.target)
    ns = [max(1, int(round(a * setting.d))) for a in alphas]
    W1, theta, rngs = first_layer(setting, seed, sigma, target)
    A = fit_readouts(W1, theta, sigma, target, ns=ns, lams=lams, delta=setting.delta,
                     rng=rngs["ridge"], noise_rng=rngs["ridge_noise"])
    errors = estimate_test_error(W1, A.reshape(setting.p, -1), theta, sigma, target,
                                 n_test=setting.n_test_used, rng=rngs["test"],
                                 estimator=setting.estimator)
    return np.asarray(errors).reshape(len(ns), len(lams))


def simulate_once(setting: Setting, seed: np.random.SeedSequence) -> float:
    """Test error of one repetition of ``setting`` (THEORY.md §1), from its own seed."""
    return float(simulate_grid_once(setting, [setting.alpha], [setting.lam], seed)[0, 0])


def memory_needed(setting: Setting, ns: Sequence[int], n_jobs: int = 1) -> int:
    """Bytes one repetition holds at its peak (times ``n_jobs``): the samples are streamed in
    chunks, so ``n0``, ``n`` and ``n_test`` enter only through the chunk and, while ``n < p``,
    the kept features and the ``n x n`` dual kernel; the weights (``W0``, ``W1``, the gradient)
    and the ``p x p`` Gram with its Cholesky copy must fit whole."""
    p, d = setting.p, setting.d
    rows = max(chunk_rows(p, n) for n in [*ns, setting.n0, setting.n_test_used])
    keep = max((n for n in ns if n < p), default=0)
    floats = 3 * p * d + 2 * rows * (d + p) + 2 * p * p + keep * p + 2 * keep * keep
    return 8 * floats * int(n_jobs)


def _available_memory() -> int | None:
    """Bytes the OS reports available (Linux ``MemAvailable``; else physical memory)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(setting: Setting, ns: Sequence[int], n_jobs: int = 1) -> None:
    """Raise before allocating anything when a repetition cannot fit in the available memory."""
    need, have = memory_needed(setting, ns, n_jobs), _available_memory()
    if have is not None and need > 0.9 * have:
        raise MemoryError(
            f"this simulation needs about {need / 2**30:.1f} GiB (p = {setting.p}, d = "
            f"{setting.d}: weights p x d, Gram p x p, chunks, dual kernel for n < p; x{n_jobs} "
            f"workers) but only {have / 2**30:.1f} GiB are available; lower d, beta or n_jobs")


def _summary(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se


def _check_runs(seeds: int, seed: int, n_jobs: int) -> None:
    if int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed}")
    if int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs}")


def simulate_curve(
    setting: Setting, alphas: Sequence[float], lams: Sequence[float] | None = None, *,
    seeds: int = default("seeds"), seed: int = 0, n_jobs: int = 1,
    progress: bool | Callable[[int], None] | None = None,
) -> list[SimulationResult]:
    """``seeds`` repetitions of ``setting`` along ``alphas`` (and ``lams``, default
    ``[setting.lam]``): one :class:`SimulationResult` per (alpha, lam), alpha-major.

    Repetition ``i`` uses child ``i`` of ``SeedSequence(seed)``, so the values do not depend on
    ``n_jobs`` (worker processes of :func:`validation.protocol.pool.run_tasks`; 1 runs here).
    Within a
    repetition all points share the first layer and the test inputs and use nested ridge
    batches: each point's seeds are independent, points of one curve are correlated.
    ``progress``: a report per repetition on stderr (None or True,
    :class:`asymptotics.core.progress.Progress`), none (False), or a callable ``progress(k)``
    called as repetitions finish (e.g. the ``update`` of a caller's report).
    """
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a validation.protocol.simulator.Setting, got {setting!r}")
    _check_runs(seeds, seed, n_jobs)
    alphas = [_positive("alpha", a) for a in checks.sequence("alphas", alphas)]
    lams = [setting.lam] if lams is None else [_positive("lam", v, allow_zero=True) for v in lams]
    if not alphas or not lams:
        raise ValueError("alphas and lams must be non-empty")
    check_memory(setting, [max(1, int(round(a * setting.d))) for a in alphas], n_jobs)
    children = np.random.SeedSequence(int(seed)).spawn(int(seeds))
    t0 = time.perf_counter()
    from functools import partial

    from asymptotics.core.progress import Progress

    from .pool import run_tasks

    values: list = [None] * len(children)
    own = Progress(len(children), f"{setting.model} simulations d={setting.d}", unit="runs",
                   enabled=progress if not callable(progress) else False)
    with own:
        for i, v in run_tasks(partial(simulate_grid_once, setting, alphas, lams), children,
                              int(n_jobs)):
            values[i] = v
            (progress if callable(progress) else own.update)(1)
    seconds = time.perf_counter() - t0
    table = np.stack(values)  # seeds x alphas x lams
    out = []
    for i, a in enumerate(alphas):
        for j, lam in enumerate(lams):
            mean, se = _summary(table[:, i, j])
            out.append(SimulationResult(
                setting=replace(setting, alpha=a, lam=lam), seed=int(seed),
                values=tuple(map(float, table[:, i, j])), mean=mean, se=se, seconds=seconds))
    return out


def simulate(
    setting: Setting, *, seeds: int = default("seeds"), seed: int = 0, n_jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """``seeds`` independent repetitions of ``setting``: mean, standard error, per-seed values
    (repetition ``i`` from child ``i`` of ``SeedSequence(seed)``, whatever ``n_jobs``);
    ``progress`` as in :func:`simulate_curve`."""
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a validation.protocol.simulator.Setting, got {setting!r}")
    return simulate_curve(setting, [setting.alpha], seeds=seeds, seed=seed, n_jobs=n_jobs,
                          progress=progress)[0]


def to_frame(results: SimulationResult | Sequence[SimulationResult]):
    """One DataFrame row per :class:`SimulationResult` (e.g. the list of :func:`simulate_curve`),
    with every parameter, ``sim_mean``, ``sim_se`` and the per-seed ``values``."""
    import pandas as pd

    if isinstance(results, SimulationResult):
        results = [results]
    return pd.DataFrame([r.as_dict() for r in results])
