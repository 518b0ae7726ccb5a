"""The K-group engine's faster pieces give the numbers of the plain algorithms they replace
(docs/THEORY.md §10.2-§10.5): the activations' evaluations (erf bit for bit, softplus to a few
ulps), relu's one-pass Gaussian moments against the split-rule quadrature and the closed form, the
resolvent's derivative in work arrays against its allocating form, and the channel V(k) against
a direct sum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.line_moments import clear_cache, direct_moments, line_moments
from asymptotics.spiked import coefficients as C
from asymptotics.spiked import kernels as Kr

RNG = np.random.default_rng(20261126)


def test_erf_saturates_exactly_where_it_is_skipped():
    """scipy's erf is exactly +-1 for |z| >= ERF_SATURATION (the fast path returns the sign)."""
    z = np.linspace(C.ERF_SATURATION, 40.0, 2_000_001)
    assert np.all(special.erf(z) == 1.0) and np.all(special.erf(-z) == -1.0)


def test_fast_erf_is_scipys_erf_bit_for_bit():
    erf = get_function("erf")
    fast = C.fast(erf)
    assert fast is not erf and fast == erf and hash(fast) == hash(erf)
    z = np.concatenate([RNG.standard_normal(200_000) * s for s in (0.5, 3.0, 10.0)]
                       + [np.array([0.0, -0.0, 6.0, -6.0, np.inf, -np.inf, np.nan])])
    assert np.array_equal(fast(z), special.erf(z), equal_nan=True)
    grid = z[:600_000].reshape(-1, 96)
    assert np.array_equal(fast(grid), special.erf(grid), equal_nan=True)
    assert fast(0.3) == special.erf(0.3)


def test_fast_softplus_is_logaddexp_to_a_few_ulps():
    """numpy's vectorised exp and log1p against the C library's (logaddexp): at most 3 ulps
    apart on 6e5 points (measured; 4 allowed)."""
    sp = get_function("softplus")
    fast = C.fast(sp)
    z = np.concatenate([RNG.standard_normal(200_000) * s for s in (1.0, 5.0, 40.0)])
    ref = np.logaddexp(0.0, z)
    assert np.all(np.abs(fast(z) - ref) <= 4 * np.spacing(ref))
    assert float(fast(0.0)) == math.log(2.0)


def test_other_functions_are_left_alone():
    for name in ("tanh", "relu", "sin"):
        fn = get_function(name)
        assert C.fast(fn) is fn
    user = get_function(lambda z: special.erf(z))
    assert C.fast(user) is user


@pytest.mark.parametrize("s", [0.3, 0.77, 1.0, 1.3])
def test_relu_one_pass_is_the_split_rule(s):
    """_relu_moments: the rows of gaussian_moments(relu, t, s) (same split Gauss-Legendre rule,
    same sums; the exp of another library: agreement to 1e-14 of each column's scale) and,
    as an independent check, the closed forms t Phi + s phi, s Phi, (t^2 + s^2) Phi + t s phi
    to the rule's own accuracy (80 nodes per piece)."""
    relu = get_function("relu")
    t = np.sort(RNG.uniform(-9.0, 9.0, 700))
    ref = direct_moments(relu, t, s)
    new = C.moments(relu, t, s, False)
    scale = np.max(np.abs(ref), axis=0)
    assert np.all(np.abs(new - ref) <= 1e-14 * scale)
    a = t / s
    Phi, phi = special.ndtr(a), np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
    exact = np.stack([t * Phi + s * phi, s * Phi, (t * t + s * s) * Phi + t * s * phi], axis=1)
    assert np.all(np.abs(new - exact) <= 1e-12 * scale)
    clear_cache()
    ref = line_moments(relu, t, s, **C.INNER_NODES)
    clear_cache()
    new = C.moments(relu, t, s, True, **C.INNER_NODES)
    assert np.all(np.abs(new - ref) <= 1e-14 * np.max(np.abs(ref), axis=0))


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_resolvent_derivative_in_work_arrays_is_the_allocating_one(K):
    """along_into (the completion's Q-columns) equals dresolvent_along bit for bit, and tau
    solves its fixed point tau_g = 1/(lam_g + [M (I + D M)^-1]_gg)."""
    X = RNG.standard_normal((K, K))
    M = X @ X.T + 0.5 * np.eye(K)
    pi = RNG.dirichlet([2.0] * K)
    lamg = RNG.uniform(0.01, 0.3, K)
    beta = 0.7
    tau, V1, V2 = Kr.resolvent(M, lamg, beta, pi)
    D = np.diag(beta * pi * tau)
    Km = M @ np.linalg.inv(np.eye(K) + D @ M)
    assert np.allclose(tau, 1.0 / (lamg + np.diag(Km)), rtol=1e-12, atol=0.0)
    assert np.allclose(V1, D @ np.linalg.inv(np.eye(K) + M @ D) / beta, rtol=1e-12, atol=1e-15)
    parts = Kr.dresolvent_parts(M, tau, beta, pi)
    work = Kr.along_work(parts, beta, pi)
    e1, e2 = np.empty((K, K)), np.empty(K)
    for _ in range(3):
        X1 = RNG.standard_normal((K, K))
        X1 = X1 + X1.T
        X2 = RNG.standard_normal(K)
        d1, d2 = Kr.dresolvent_along(parts, M, tau, beta, pi, X1, X2)
        Kr.along_into(parts, work, M, tau, beta, pi, X1, X2, e1, e2)
        assert np.array_equal(e1, d1) and np.array_equal(e2, d2)


def test_channel_v_is_the_quadratic_form():
    n, K = 500, 3
    mb1, ms2 = RNG.standard_normal((n, K)), RNG.random((n, K))
    V1 = RNG.standard_normal((K, K))
    V1 = V1 + V1.T
    V2 = RNG.random(K)
    ref = np.einsum("jg,gh,jh->j", mb1, V1, mb1) + ms2 @ V2
    assert np.allclose(Kr.channel_v(V1, V2, mb1, ms2), ref, rtol=1e-13, atol=1e-13)
