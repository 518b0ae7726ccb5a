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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from asymptotics.functions import Function, get_function
from asymptotics.srf import srf_mapping

from . import test_error
from .kernels import KERNELS

MODELS = ("network", "srf", "rf")
STREAMS = ("weights", "teacher", "step", "step_noise", "ridge", "ridge_noise", "test")
CHUNK_BYTES = 256 * 2**20  # one chunk of pre-activations (rows x p float64): big chunks, fast GEMMs


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not (math.isfinite(value) and ok):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'} and finite, "
                         f"got {value:g}")
    return value


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
    beta: float = 1.0
    delta: float = 0.0
    d: int = 1000
    n_test: int = 0  # 0: max(10000, 2 d)
    spike: tuple[float, float, float] | None = None  # srf only: (r, c, gamma) instead of the map
    stream: int = 2  # random stream of the samples: 2 = BlockRows (parallel), 1 = sequential
    estimator: str = "mc"  # test error: "mc", "split" or "cv" (validation.test_error)

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        for name in ("alpha", "alpha0", "beta"):
            _positive(name, getattr(self, name))
        for name in ("eta", "lam", "delta"):
            _positive(name, getattr(self, name), allow_zero=True)
        if int(self.d) != self.d or self.d < 2:
            raise ValueError(f"d must be an integer >= 2, got {self.d}")
        if self.estimator not in test_error.ESTIMATORS:
            raise ValueError(f"estimator must be one of {', '.join(test_error.ESTIMATORS)}, "
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


def sphere_rows(rng: np.random.Generator | BlockRows, p: int, d: int) -> np.ndarray:
    """``p x d`` matrix with rows i.i.d. uniform on the unit sphere of R^d."""
    w = rng.take(p) if isinstance(rng, BlockRows) else rng.standard_normal((p, d))
    w /= np.sqrt(np.einsum("ij,ij->i", w, w))[:, None]  # row norms without a p x d temporary
    return w


def unit_vector(rng: np.random.Generator, d: int) -> np.ndarray:
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


def chunk_rows(p: int, n: int) -> int:
    """Rows per chunk so that a chunk of ``rows x p`` float64 fits in :data:`CHUNK_BYTES`."""
    return int(max(64, min(n, CHUNK_BYTES // (8 * max(p, 1)))))


def labels(x_theta: np.ndarray, target: Function, delta: float,
           noise_rng: np.random.Generator | None) -> np.ndarray:
    """``y = g(<theta*, x>) + sqrt(delta) xi`` (noiseless when ``noise_rng`` is None or delta = 0).

    The noise has its own stream, so a batch drawn in chunks equals the batch drawn at once.
    """
    y = target(x_theta)
    if delta > 0 and noise_rng is not None:
        y = y + math.sqrt(delta) * noise_rng.standard_normal(y.shape)
    return y


class BlockRows:
    """Rows of i.i.d. standard Gaussians drawn in parallel, reproducibly (random stream 2).

    Row block ``b`` (``BLOCK`` rows) comes from its own generator (numpy's SFC64, the fastest of
    its bit generators here), seeded by the ``b``-th child of ``seed``: the rows do not depend
    on how they are cut into chunks nor on the thread count, and several blocks are drawn at
    once. ``take(m)`` returns the next ``m`` rows.
    """

    BLOCK = 512

    def __init__(self, seed: np.random.SeedSequence, d: int) -> None:
        self.seed, self.d = seed, int(d)
        self.next_block = 0
        self.left = np.empty((0, self.d))  # drawn rows not yet handed out

    def _generator(self, b: int) -> np.random.Generator:
        child = np.random.SeedSequence(self.seed.entropy, spawn_key=(*self.seed.spawn_key, b),
                                       pool_size=self.seed.pool_size)
        return np.random.Generator(np.random.SFC64(child))

    def take(self, m: int) -> np.ndarray:
        out = np.empty((m, self.d))
        k = min(m, self.left.shape[0])
        out[:k], self.left = self.left[:k], self.left[k:]
        whole, rest = divmod(m - k, self.BLOCK)
        first = self.next_block
        self.next_block += whole + (rest > 0)
        tail = np.empty((self.BLOCK if rest else 0, self.d))

        def fill(b: int) -> None:  # numpy's generators release the GIL while filling
            target = tail if b == whole else out[k + b * self.BLOCK:k + (b + 1) * self.BLOCK]
            self._generator(first + b).standard_normal(out=target)

        blocks = whole + (rest > 0)
        if blocks > 1 and _threads() > 1:
            list(_pool().map(fill, range(blocks)))
        else:
            for b in range(blocks):
                fill(b)
        if rest:
            out[m - rest:], self.left = tail[:rest], tail[rest:]
        return out


def _batches(source: np.random.Generator | BlockRows, n: int, d: int, rows: int,
             stops: Sequence[int] = ()):
    """Standard Gaussian ``m x d`` chunks of a batch of ``n`` samples, cut at every ``stops``:
    drawn one after the other from a generator (random stream 1) or from :class:`BlockRows`."""
    cuts = sorted({int(c) for c in stops if 0 < c < n} | {n})
    start = 0
    for cut in cuts:
        while start < cut:
            m = min(rows, cut - start)
            if isinstance(source, BlockRows):
                yield source.take(m)
            else:
                yield source.standard_normal((m, d))
            start += m


def _threads() -> int:
    """Threads for the elementwise passes: OMP_NUM_THREADS when set (1 in matrix workers), else
    the core count. numpy ufuncs release the GIL, so row blocks run in parallel."""
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", "") or (os.cpu_count() or 1))
    except ValueError:
        n = 1
    return max(1, n)


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="giantstep")
    return _POOL


def _by_rows(work: Callable[[int, int], None], m: int) -> None:
    """``work(i0, i1)`` over row blocks of ``m`` rows, in threads; it must write in place."""
    k = min(_threads(), max(1, m // 256))
    if k == 1:
        work(0, m)
        return
    cuts = np.linspace(0, m, k + 1).astype(int)
    list(_pool().map(lambda i: work(cuts[i], cuts[i + 1]), range(k)))


def giant_step_gradient(
    X: np.ndarray, y: np.ndarray, W: np.ndarray, a: np.ndarray, sigma: Function
) -> np.ndarray:
    """``grad_W L`` for ``L = (1/(2n)) sum_i (y_i - f(x_i))^2``, ``f = a . sigma(W x)/sqrt p``."""
    p = W.shape[0]
    Z = X @ W.T
    e = y - sigma(Z) @ a / math.sqrt(p)
    S = sigma.derivative(Z) * e[:, None] * (a[None, :] / math.sqrt(p))
    return -(S.T @ X) / X.shape[0]


def network_step(
    W0: np.ndarray, theta: np.ndarray, sigma: Function, target: Function, *,
    n0: int, eta_tilde: float, delta: float, rng: np.random.Generator | BlockRows,
    noise_rng: np.random.Generator | None = None,
) -> np.ndarray:
    """``W1 = W0 + (eta_tilde / n0) sum_i (y_i - f(x_i; a0, W0)) sigma'(W0 x_i) x_i^T``, chunked.

    With ``a0 = 1/sqrt(p)``, ``f = mean_k sigma(<w_k, x>)`` and ``eta = eta_tilde p`` this is
    ``W0 - eta grad_W L0`` of THEORY.md §1 (the factor ``1/sqrt(p)`` twice times ``p``).
    """
    p, d = W0.shape
    kernel = KERNELS[sigma.f][1] if sigma.f in KERNELS else None
    G = None
    for X in _batches(rng, n0, d, chunk_rows(p, n0)):
        y = labels(X @ theta, target, delta, noise_rng)
        Z = X @ W0.T

        def work(i0: int, i1: int, Z=Z, y=y) -> None:  # Z <- (y - f) sigma'(Z), row block
            if kernel is not None:
                kernel(Z[i0:i1], y[i0:i1])
                return
            value, slope = sigma.value_and_derivative(Z[i0:i1])
            slope *= (y[i0:i1] - value.mean(axis=1))[:, None]
            Z[i0:i1] = slope

        _by_rows(work, Z.shape[0])
        G = Z.T @ X if G is None else np.add(G, Z.T @ X, out=G)
    G *= eta_tilde / n0
    G += W0
    return G


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


def ridge_readout(
    features: np.ndarray | None, y: np.ndarray | None, lam: float, *,
    gram: np.ndarray | None = None, rhs: np.ndarray | None = None, method: str = "auto",
    kernel: np.ndarray | None = None,
) -> np.ndarray:
    """``argmin_a |y - F a|^2 + lam |a|^2`` through the smaller system, by Cholesky.

    Primal: ``(F^T F + lam I) a = F^T y`` (``p x p``; pass ``gram = F^T F``, ``rhs = F^T y`` when
    they were accumulated in chunks; with ``lam > 0`` only the upper triangle of ``gram`` is read).
    Dual: ``a = F^T (F F^T + lam I)^{-1} y`` (``n x n``).
    ``lam = 0`` gives the minimum-norm least-squares solution (via ``lstsq``). ``kernel = F F^T``
    may be passed to reuse it over several ``lam``.
    """
    if method not in ("auto", "primal", "dual"):
        raise ValueError(f"method must be auto, primal or dual, got {method!r}")
    if gram is not None:
        if method == "dual":
            raise ValueError("the dual path needs the features, not their Gram matrix")
        method = "primal"
    elif method == "auto":
        method = "primal" if features.shape[1] <= features.shape[0] else "dual"
    if lam == 0:
        if features is None:
            return linalg.lstsq(gram, rhs, lapack_driver="gelsd")[0]
        return linalg.lstsq(features, y, lapack_driver="gelsd")[0]
    if method == "primal":
        if gram is None:
            gram, rhs = features.T @ features, features.T @ y
        A = gram.copy()
        A[np.diag_indices_from(A)] += lam
        return linalg.cho_solve(linalg.cho_factor(A, lower=False, overwrite_a=True,
                                                  check_finite=False), rhs, check_finite=False)
    K = features @ features.T if kernel is None else kernel.copy()
    K[np.diag_indices_from(K)] += lam
    b = linalg.cho_solve(linalg.cho_factor(K, lower=True, overwrite_a=True, check_finite=False),
                         y, check_finite=False)
    return features.T @ b


def _features(Z: np.ndarray, sigma: Function, scale: float) -> None:
    """``Z <- scale * sigma(Z)`` in place, by row blocks in threads (a fused kernel of
    :mod:`validation.kernels` where the activation has one)."""
    if sigma.f in KERNELS:
        kernel = KERNELS[sigma.f][0]
        _by_rows(lambda i0, i1: kernel(Z[i0:i1], scale), Z.shape[0])
        return

    def work(i0: int, i1: int) -> None:
        block = sigma(Z[i0:i1])
        if scale != 1.0:
            block *= scale
        Z[i0:i1] = block

    _by_rows(work, Z.shape[0])


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
    for X in _batches(rng, n_max, d, chunk_rows(p, n_max), stops=order):
        y = labels(X @ theta, target, delta, noise_rng)
        F = X @ W1.T
        _features(F, sigma, scale)
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
    by ``estimator`` (:mod:`validation.test_error`: ``mc``, ``split`` or ``cv``).

    ``a`` may be ``p x k`` (k readouts on the same test inputs): then an array of k errors.
    """
    p, d = W1.shape
    A = a.reshape(p, -1)
    out = test_error.estimate_test_error(W1, A, theta, sigma, target,
                                         _batches(rng, n_test, d, chunk_rows(p, n_test)), n_test,
                                         estimator)
    return float(out[0]) if a.ndim == 1 else out


# ------------------------------------------------------------------------------------------------
# one repetition and many


def first_layer(setting: Setting, seed: np.random.SeedSequence, sigma: Function,
                target: Function) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(W1, theta*, sources)`` of one repetition: the weights the readout is fitted on, and the
    random sources of the rest (the sample streams as :class:`BlockRows` under stream 2)."""
    children = dict(zip(STREAMS, seed.spawn(len(STREAMS)), strict=True))
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
    seeds: int = 10, seed: int = 0, n_jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[SimulationResult]:
    """``seeds`` repetitions of ``setting`` along ``alphas`` (and ``lams``, default
    ``[setting.lam]``): one :class:`SimulationResult` per (alpha, lam), alpha-major.

    Repetition ``i`` uses child ``i`` of ``SeedSequence(seed)``, so the values do not depend on
    ``n_jobs`` (joblib processes; 1 runs here). Within a repetition all points share the first
    layer and the test inputs and use nested ridge batches: each point's seeds are independent,
    points of one curve are correlated. ``progress(k)`` is called as repetitions finish.
    """
    _check_runs(seeds, seed, n_jobs)
    alphas = [_positive("alpha", a) for a in alphas]
    lams = [setting.lam] if lams is None else [_positive("lam", v, allow_zero=True) for v in lams]
    if not alphas or not lams:
        raise ValueError("alphas and lams must be non-empty")
    check_memory(setting, [max(1, int(round(a * setting.d))) for a in alphas], n_jobs)
    children = np.random.SeedSequence(int(seed)).spawn(int(seeds))
    t0 = time.perf_counter()
    if n_jobs == 1:
        runs = (simulate_grid_once(setting, alphas, lams, c) for c in children)
    else:
        from joblib import Parallel, delayed

        runs = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(simulate_grid_once)(setting, alphas, lams, c) for c in children)
    values = []
    for v in runs:
        values.append(v)
        if progress is not None:
            progress(1)
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
    setting: Setting, *, seeds: int = 10, seed: int = 0, n_jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """``seeds`` independent repetitions of ``setting``: mean, standard error, per-seed values
    (repetition ``i`` from child ``i`` of ``SeedSequence(seed)``, whatever ``n_jobs``)."""
    return simulate_curve(setting, [setting.alpha], seeds=seeds, seed=seed, n_jobs=n_jobs,
                          progress=progress)[0]


def to_frame(results: SimulationResult | Sequence[SimulationResult]):
    """One DataFrame row per :class:`SimulationResult` (e.g. the list of :func:`simulate_curve`),
    with every parameter, ``sim_mean``, ``sim_se`` and the per-seed ``values``."""
    import pandas as pd

    if isinstance(results, SimulationResult):
        results = [results]
    return pd.DataFrame([r.as_dict() for r in results])
