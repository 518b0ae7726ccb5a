"""The cheaper K-group pieces of the slowest settings against what they stand in for, bit for bit:
the one-pass (V1, V2) sums of three and four groups (``equations.node_sums.v_sums``, used by
``spiked.kernels.v_map``) against ``channel_v`` and ``vhats``, and the relu moments' kernel
(``spiked.coefficients._relu_moments``, which skips the weights of terms that are exactly zero)
against the same split Gauss-Legendre rule summed term by term in plain Python."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import roots_legendre

from asymptotics.coefficients.quadrature import HALF_WIDTH, N_PIECE
from asymptotics.equations import node_sums, small_dense
from asymptotics.spiked import coefficients as C
from asymptotics.spiked import kernels


def _tables(K: int, n: int, seed: int):
    rng = np.random.default_rng([seed, K, n])
    w = rng.random(n)
    w /= w.sum()
    mb1 = rng.standard_normal((n, K))
    ms2 = rng.random((n, K)) + 0.2
    ms2[rng.random((n, K)) < 0.1] = 0.0  # (flushed entries: exact zeros)
    V1 = 0.3 * rng.standard_normal((K, K))
    x = np.concatenate([(0.5 * (V1 + V1.T) + np.eye(K)).ravel(), rng.random(K) + 0.3])
    pi = rng.dirichlet([2.0] * K)
    return w, mb1, ms2, x, pi


@pytest.mark.parametrize("K", [3, 4])
@pytest.mark.parametrize("n", [1, 224, 577])
@pytest.mark.parametrize("seed", [0, 1])
def test_v_sums_of_three_and_four_groups_are_the_kernels_numbers(K: int, n: int, seed: int):
    w, mb1, ms2, x, pi = _tables(K, n, seed)
    iv = 1.0 / (1.0 + kernels.channel_v(x[:K * K].reshape((K, K)), x[K * K:], mb1, ms2))
    M, v2 = kernels.vhats(iv, w, mb1, ms2, 1.0)
    Ms, v2s = node_sums.v_sums(x, w, mb1, ms2)
    assert np.array_equal(M, Ms) and np.array_equal(v2, v2s)
    # the closed map: v_map (one pass) equals the resolvent of the kernels' conjugates
    A, lam, beta = 1.7, 0.05, 0.8
    M, v2 = kernels.vhats(iv, w, mb1, ms2, A)
    _, V1, V2 = small_dense.resolvent(M, lam + v2, beta, pi)
    out = kernels.v_map(x, w, mb1, ms2, A, lam, beta, pi)
    assert np.array_equal(out, np.concatenate([V1.ravel(), V2]))


def _relu_rule_in_python(pts, s, t, wt, L):
    """The split rule of ``_relu_moments`` with every term summed (its loop before the skip)."""
    c = math.sqrt(2 * math.pi)
    out = np.zeros((len(pts), 3))
    for i, p in enumerate(pts):
        b = (0.0 - p) / s
        b = min(max(b if math.isfinite(b) else L, -L), L)
        s0 = s1 = s2 = 0.0
        for lo, hi in ((-L, b), (b, L)):
            mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
            for tj, wj in zip(t, wt, strict=True):
                z = mid + half * tj
                w = half * wj * math.exp(-0.5 * z * z) / c
                v = max(p + s * z, 0.0)
                wf = w * v
                s0 += wf
                s1 += wf * z
                s2 += wf * v
        out[i] = s0, s1, s2
    return out


@pytest.mark.parametrize("s", [0.05, 0.77, 1.3])
def test_relu_kernel_skipping_zero_terms_is_the_full_sum(s):
    rng = np.random.default_rng(3)
    pts = np.concatenate([np.sort(rng.uniform(-12.0, 12.0, 150)), [0.0, -0.0, 1e-300, -1e-300,
                                                                   9.0 * s, -9.0 * s]])
    t, wt = roots_legendre(N_PIECE)
    new = C._relu_moments(pts, s, t, wt, HALF_WIDTH)
    ref = _relu_rule_in_python(pts, s, t, wt, HALF_WIDTH)
    assert np.array_equal(new, ref)


@pytest.mark.parametrize("s", [0.05, 0.352, 0.77])
def test_relu_kernel_clamped_shifts_are_the_full_sum(s):
    """Shifts p >= s L (the split clamped at -L) take the whole interval's weights computed once:
    the numbers of the full sum, at the clamp itself, just below and far beyond it."""
    L = HALF_WIDTH
    edge = s * L
    pts = np.array([edge, np.nextafter(edge, 0.0), np.nextafter(edge, 99.0), edge + 1e-9,
                    edge - 1e-9, 2 * edge, edge + 0.3, 40.0, 1e3, -edge, 0.5 * edge])
    t, wt = roots_legendre(N_PIECE)
    assert np.array_equal(C._relu_moments(pts, s, t, wt, L), _relu_rule_in_python(pts, s, t, wt, L))
