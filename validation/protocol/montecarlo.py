"""The Monte Carlo core: sampling, seed streams, the one chunked giant step, ridge readouts.

Everything the simulations of docs/THEORY.md §1 and §8 share lives here, once; the drivers
(:mod:`validation.protocol.simulator`: one step + readout + test error;
:mod:`validation.multistep.simulator`:
several steps; :mod:`validation.spectrum`: one or two large steps and their spectra) only combine
these pieces with their own parameters.

Seed streams (one convention). A repetition owns a ``numpy.random.SeedSequence``; its named
streams are its children in a fixed order, ``streams(seed, names)[name]`` (child ``i`` of
``SeedSequence(s)`` is ``SeedSequence(s, spawn_key=(i,))``). Each driver documents its list of
names (``simulator.STREAMS``, ``multistep.STREAMS`` + one batch and one noise stream per step,
``spectrum.STREAMS``); the order is part of the reproducibility contract of the committed data.
Samples are drawn from a stream either sequentially from ``default_rng`` (the simulator's
"stream 1", that of the committed validation store) or by :class:`BlockRows` (its "stream 2":
blocks of 512 rows, each from its own SFC64 generator, drawn in threads, independent of chunking
and thread count).

Threads: the elementwise passes run by row blocks in a thread pool of ``OMP_NUM_THREADS`` (else
the core count) threads; numpy ufuncs and the numba kernels of :mod:`validation.protocol.kernels`
release
the GIL.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import linalg

from asymptotics.coefficients.functions import Function

from .kernels import KERNELS

CHUNK_BYTES = 256 * 2**20  # one chunk of pre-activations (rows x p float64): big chunks, fast GEMMs


def streams(seed: np.random.SeedSequence,
            names: Sequence[str]) -> dict[str, np.random.SeedSequence]:
    """The named streams of one repetition: child ``i`` of ``seed`` for ``names[i]``."""
    return dict(zip(names, seed.spawn(len(names)), strict=True))


# ------------------------------------------------------------------------------------------------
# sampling


def sphere_rows(rng: np.random.Generator | BlockRows, p: int, d: int) -> np.ndarray:
    """``p x d`` matrix with rows i.i.d. uniform on the unit sphere of R^d."""
    w = rng.take(p) if isinstance(rng, BlockRows) else rng.standard_normal((p, d))
    w /= np.sqrt(np.einsum("ij,ij->i", w, w))[:, None]  # row norms without a p x d temporary
    return w


def unit_vector(rng: np.random.Generator, d: int) -> np.ndarray:
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


def teacher_directions(rng: np.random.Generator, k: int, d: int) -> np.ndarray:
    """``k x d`` orthonormal rows, Haar distributed (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    return (q * np.sign(np.diag(r))).T.copy()


def chunk_rows(width: int, n: int, budget: int = CHUNK_BYTES, min_rows: int = 64) -> int:
    """Rows per chunk so that a chunk of ``rows x width`` float64 fits in ``budget`` bytes."""
    return int(max(min_rows, min(n, budget // (8 * max(width, 1)))))


def labels(x_theta: np.ndarray, target: Callable, delta: float,
           noise_rng: np.random.Generator | None) -> np.ndarray:
    """``y = g(<theta*, x>) + sqrt(delta) xi`` (noiseless when ``noise_rng`` is None or delta = 0).
    ``x_theta`` is ``X theta*`` (``n``) or, for a multi-index target, ``X Theta^T`` (``n x k``).

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


def batches(source: np.random.Generator | BlockRows, n: int, d: int, rows: int,
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


# ------------------------------------------------------------------------------------------------
# threads and features


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


def by_rows(work: Callable[[int, int], None], m: int) -> None:
    """``work(i0, i1)`` over row blocks of ``m`` rows, in threads; it must write in place."""
    k = min(_threads(), max(1, m // 256))
    if k == 1:
        work(0, m)
        return
    cuts = np.linspace(0, m, k + 1).astype(int)
    list(_pool().map(lambda i: work(cuts[i], cuts[i + 1]), range(k)))


def features(Z: np.ndarray, sigma: Function, scale: float) -> None:
    """``Z <- scale * sigma(Z)`` in place, by row blocks in threads (a fused kernel of
    :mod:`validation.protocol.kernels` where the activation has one)."""
    if sigma.f in KERNELS:
        kernel = KERNELS[sigma.f][0]
        by_rows(lambda i0, i1: kernel(Z[i0:i1], scale), Z.shape[0])
        return

    def work(i0: int, i1: int) -> None:
        block = sigma(Z[i0:i1])
        if scale != 1.0:
            block *= scale
        Z[i0:i1] = block

    by_rows(work, Z.shape[0])


# ------------------------------------------------------------------------------------------------
# the giant step


def descent_direction(W: np.ndarray, a: np.ndarray, X: np.ndarray, y: np.ndarray,
                      sigma: Function) -> tuple[np.ndarray, float]:
    """``(-grad_W L, L)`` on one batch, ``L = (1/(2n)) sum_i (y_i - f(x_i))^2``,
    ``f = a . sigma(W x)/sqrt p``: ``-dL/dw_k = (1/n) sum_i (y_i - f_i) (a_k / sqrt p)
    sigma'(<w_k, x_i>) x_i`` (unchunked; the reference the tests hold :func:`giant_step` to)."""
    p = W.shape[0]
    Z = X @ W.T
    e = y - sigma(Z) @ a / math.sqrt(p)
    S = sigma.derivative(Z)
    S *= e[:, None]
    G = (S.T @ X) * (a[:, None] / math.sqrt(p))
    n = X.shape[0]
    return G / n, float(0.5 * np.dot(e, e) / n)


def giant_step(W: np.ndarray, chunks: Iterable[tuple[np.ndarray, np.ndarray]], sigma: Function,
               *, rate: float, a: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """THE gradient step of docs/THEORY.md §1 and §8, over a batch given in chunks ``(X, y)``:

    ``W + rate * sum_i (y_i - f(x_i)) c_k sigma'(<w_k, x_i>) x_i``, ``c_k = sqrt(p) a_k``,
    ``f = a . sigma(W x)/sqrt p``; returns ``(W_new, L)`` with ``L`` the loss before the step.
    With ``a = None`` the readout is ``a0 = 1/sqrt p`` (``c = 1``, ``f = mean_k sigma``), the
    residual pass runs in threads with the fused kernel where the activation has one, and ``L``
    is not computed (NaN). The caller's ``rate`` folds in ``eta``, ``1/n`` and ``1/p``: e.g.
    ``eta_tilde / n0`` for §1 (``eta = eta_tilde p``), ``eta / (n p)`` for a general ``eta``.
    """
    p = W.shape[0]
    kernel = KERNELS[sigma.f][1] if (a is None and sigma.f in KERNELS) else None
    G = None
    loss, n = 0.0, 0
    for X, y in chunks:
        Z = X @ W.T
        n += X.shape[0]
        if a is None:
            def work(i0: int, i1: int, Z=Z, y=y) -> None:  # Z <- (y - f) sigma'(Z), row block
                if kernel is not None:
                    kernel(Z[i0:i1], y[i0:i1])
                    return
                value, slope = sigma.value_and_derivative(Z[i0:i1])
                slope *= (y[i0:i1] - value.mean(axis=1))[:, None]
                Z[i0:i1] = slope

            by_rows(work, Z.shape[0])
            S = Z
        else:
            e = y - sigma(Z) @ a / math.sqrt(p)
            S = sigma.derivative(Z)
            S *= e[:, None]
            loss += float(np.dot(e, e))
        G = S.T @ X if G is None else np.add(G, S.T @ X, out=G)
    if G is None:
        raise ValueError("giant_step needs at least one sample")
    if a is not None:
        G *= (math.sqrt(p) * a)[:, None]
    G *= rate
    G += W
    return G, (0.5 * loss / n if a is not None else math.nan)


def labelled(chunks: Iterator[np.ndarray], theta: np.ndarray, target: Callable, delta: float,
             noise_rng: np.random.Generator | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(X, y)`` for every chunk ``X``: labels of :func:`labels` with ``theta`` (``d`` or
    ``k x d``), the noise from its own stream so that chunking does not change the batch."""
    for X in chunks:
        yield X, labels(X @ (theta.T if theta.ndim == 2 else theta), target, delta, noise_rng)


# ------------------------------------------------------------------------------------------------
# readouts


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


def ridge_test_errors(W: np.ndarray, theta: np.ndarray, g: Callable, sigma: Function, *,
                      n_ridges: Sequence[int], lam: float, n_test: int, delta: float,
                      ridge_seed: np.random.SeedSequence, noise_seed: np.random.SeedSequence,
                      test_seed: np.random.SeedSequence,
                      chunk_bytes: int = 32 * 2**20) -> tuple[np.ndarray, float]:
    """**The** ridge readout and its test error (THEORY.md §1), written once for every driver.

    Readouts ``argmin_a sum_(i <= n_r) (y_i - <a, sigma(W x_i)>/sqrt p)^2 + lam |a|^2`` (a SUM
    over samples) on the first ``n_r`` samples of one pool drawn sequentially from
    ``ridge_seed`` (labels :func:`labelled`, noise from ``noise_seed``), for every ``n_r`` of
    ``n_ridges``; returns their test errors ``E (g - f)^2`` on ``n_test`` fresh noiseless inputs
    from ``test_seed`` (in the order of ``n_ridges``) and ``E g^2`` on the same inputs.
    ``theta``: ``d`` or ``k x d``; chunks of at most ``chunk_bytes`` (at least 16 rows)."""
    sizes = [int(m) for m in n_ridges]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"every ridge sample size must be >= 1, got {sizes}")
    p, d = W.shape
    scale = 1.0 / math.sqrt(p)
    pool = max(sizes)
    gram, rhs = np.zeros((p, p)), np.zeros(p)
    rng, noise = np.random.default_rng(ridge_seed), np.random.default_rng(noise_seed)
    readouts: dict[int, np.ndarray] = {}
    seen = 0
    chunks = batches(rng, pool, d, chunk_rows(max(p, d), pool, chunk_bytes, 16), stops=sizes)
    for X, y in labelled(chunks, theta, g, delta, noise):
        F = sigma(X @ W.T) * scale
        gram += F.T @ F
        rhs += F.T @ y
        seen += X.shape[0]
        if seen in sizes:
            readouts[seen] = ridge_readout(None, None, lam, gram=gram.copy(), rhs=rhs.copy())
    A = np.stack([readouts[m] for m in sizes], axis=1)  # p x len(sizes)
    err = np.zeros(len(sizes))
    power = 0.0
    test_rng = np.random.default_rng(test_seed)
    for X in batches(test_rng, n_test, d, chunk_rows(max(p, d), n_test, chunk_bytes, 16)):
        y = g(X @ theta.T)
        pred = sigma(X @ W.T) @ A * scale
        err += np.sum((y[:, None] - pred) ** 2, axis=0)
        power += float(np.sum(y * y))
    return err / n_test, power / n_test
