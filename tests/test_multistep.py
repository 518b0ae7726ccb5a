"""Multi-step simulator (validation.multistep.simulator): the gradient step against finite
differences,
conventions checked by hand, and small, fast versions of the three multi-step experiments.

The qualitative tests compare two dimensions d: an overlap that is learned stays of order one
(ratio of the overlaps at 4x the dimension close to 1), one that is not decays like d^(-1/2)
(ratio close to 1/2). Thresholds: 'learned' means ratio > 0.75 and a level above 3x the
initial sqrt(2/(pi d)); 'not learned' means ratio < 0.75. Each side is the mean over 16
repetitions (64 for the noisy d = 16 of the quadratic batch) and each classification must hold
with the Student quantile of the repetitions at a two-sided 1e-3 per comparison (4.07 for 16)
times the s.e. to spare (the ratio's s.e. by the delta method from the two means' s.e.); they
were 2-3 repetitions compared bare. Eight repetitions do not suffice: at 8 the staircase's
(step 2, theta_3) ratio 0.42 +- 0.08, the quadratic batch's 0.89 +- 0.06 and the leap-four
level at step 3 are not classified at that confidence."""

import math

import numpy as np
import pytest

from asymptotics.coefficients.functions import get_function
from validation.multistep.simulator import (
    MultiStepConfig,
    descent_direction,
    giant_step,
    overlap_matrix,
    readout_vector,
    run_multistep,
    subspace_fraction,
)


def loss(W, a, X, y, sigma):
    f = sigma(X @ W.T) @ a / math.sqrt(W.shape[0])
    return 0.5 * np.mean((y - f) ** 2)


@pytest.mark.parametrize("readout", ["constant", "hypercube"])
def test_descent_direction_is_minus_the_gradient(readout):
    rng = np.random.default_rng(0)
    p, d, n = 6, 9, 40
    W = rng.standard_normal((p, d)) / math.sqrt(d)
    a = readout_vector(p, readout)
    X = rng.standard_normal((n, d))
    y = X[:, 0] * X[:, 1] + X[:, 2]
    sigma = get_function("erf(z-1)")
    G, L = descent_direction(W, a, X, y, sigma)
    assert L == pytest.approx(loss(W, a, X, y, sigma), rel=1e-14)
    for _ in range(3):
        V = rng.standard_normal((p, d))
        h = 1e-5
        fd = (loss(W + h * V, a, X, y, sigma) - loss(W - h * V, a, X, y, sigma)) / (2 * h)
        assert -np.sum(G * V) == pytest.approx(fd, rel=1e-7, abs=1e-12)


def test_giant_step_is_chunk_invariant(monkeypatch):
    rng = np.random.default_rng(1)
    p, d, n = 5, 8, 300
    W = rng.standard_normal((p, d))
    theta = np.eye(d)[:2]
    sigma = get_function("tanh")
    a = readout_vector(p, "hypercube")

    def g(Z):
        return Z[:, 0] * Z[:, 1]

    W1, L1 = giant_step(W, a, theta, g, sigma, n=n, eta=3.0, delta=0.0,
                        rng=np.random.default_rng(7))
    import validation.multistep.simulator as ms

    monkeypatch.setattr(ms, "CHUNK_BYTES", 8 * 16 * max(p, d))  # 16 rows per chunk
    W2, L2 = giant_step(W, a, theta, g, sigma, n=n, eta=3.0, delta=0.0,
                        rng=np.random.default_rng(7))
    np.testing.assert_allclose(W2, W1, rtol=1e-12, atol=1e-14)
    assert L2 == pytest.approx(L1, rel=1e-12)
    # the step itself: W + eta (-grad L) on that same batch
    X = np.random.default_rng(7).standard_normal((n, d))
    G, _ = descent_direction(W, a, X, g(X @ theta.T), sigma)
    np.testing.assert_allclose(W1, W + 3.0 * G, rtol=1e-12, atol=1e-14)


def test_conventions_by_hand():
    c = MultiStepConfig(d=64, kappa=2.0, alpha0=0.5, eta=1.5, steps=2, beta=0.5)
    assert (c.p, c.n, c.k) == (32, 2048, 3)
    # eta_t = eta_tilde p d^((kappa-1)/2) = 1.5 * 32 * 8
    assert c.learning_rates == (384.0, 384.0)
    a = readout_vector(5, "hypercube")
    np.testing.assert_allclose(a * math.sqrt(5), [1, 1, 1, -1, -1])
    np.testing.assert_allclose(readout_vector(4, "constant"), [0.5] * 4)
    W = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    theta = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(overlap_matrix(W, theta),
                               [[1, 0], [1 / math.sqrt(2), 1 / math.sqrt(2)], [0, 0]])
    # |W Theta^T|_F / |W|_F = sqrt(9 + 1 + 1) / sqrt(9 + 2 + 4)
    assert subspace_fraction(W, theta) == pytest.approx(math.sqrt(11 / 15))


@pytest.mark.parametrize("kwargs, word", [
    (dict(d=4), "d must be an integer >= 8, got 4"), (dict(d=64, kappa=0.5), "kappa"),
    (dict(d=64, eta=(1.0, 2.0)), "one value per step"), (dict(d=64, readout="gauss"), "readout"),
    (dict(d=64, target="z1 + q"), "q"), (dict(d=64, sigma="nope"), "nope"),
    (dict(d=64, alpha0=-1.0), "alpha0"),
])
def test_bad_configs_say_what_is_allowed(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        MultiStepConfig(**kwargs)


def test_reproducible_seeds():
    c = MultiStepConfig(d=16, steps=2, eta=(1.0, 2.0), alpha0=4.0)
    a = run_multistep(c, seeds=2, seed=3)
    b = run_multistep(c, seeds=2, seed=3)
    other = run_multistep(c, seeds=2, seed=4)
    np.testing.assert_array_equal(a["mean_overlap"], b["mean_overlap"])
    assert not np.allclose(a["mean_overlap"], other["mean_overlap"])
    assert set(a["repetition"]) == {0, 1} and a["step"].max() == 2
    for col in ("d", "target", "sigma", "alpha0", "kappa", "eta", "readout", "n", "p", "seed"):
        assert col in a.columns


SEEDS = 16


def student(n: int) -> float:
    """The Student quantile of n draws at a two-sided 1e-3."""
    from scipy import stats

    return float(stats.t.ppf(1 - 5e-4, n - 1))


class Mean:
    """The mean over ``seeds`` repetitions of the mean-over-neurons overlap and its s.e.,
    arrays (steps + 1, k); ``t``: the Student quantile of the repetitions."""

    def __init__(self, config, seed, seeds=SEEDS):
        df = run_multistep(config, seeds=seeds, seed=seed)
        g = df.groupby(["step", "direction"])["mean_overlap"]
        self.m = g.mean().unstack().to_numpy()
        self.se = (g.std(ddof=1) / np.sqrt(g.count())).unstack().to_numpy()
        self.t = student(seeds)
        assert (g.count() == seeds).all()


def ratio(big, small, t, j):
    """The ratio of the means and its s.e. (delta method)."""
    r = big.m[t, j] / small.m[t, j]
    return r, r * math.hypot(big.se[t, j] / big.m[t, j], small.se[t, j] / small.m[t, j])


def learned(big, small, t, j, d_big):
    r, se = ratio(big, small, t, j)
    q = max(big.t, small.t)
    assert r - q * se > 0.75 and big.m[t, j] - q * big.se[t, j] > 3 * init_level(d_big), (
        t, j, r, se, big.m[t, j], big.se[t, j])


def not_learned(big, small, t, j):
    r, se = ratio(big, small, t, j)
    assert r + max(big.t, small.t) * se < 0.75, (t, j, r, se)


def init_level(d):
    return math.sqrt(2 / (math.pi * d))


STAIR = dict(target="z1 + z1*z2 + z1*z2*z3", sigma="erf(z-1)", steps=3, alpha0=16.0,
             eta=(2.0, 8.0, 16.0), readout="hypercube")


def test_staircase_one_new_direction_per_step():
    small = Mean(MultiStepConfig(d=64, **STAIR), 11)
    big = Mean(MultiStepConfig(d=256, **STAIR), 12)
    for t, j in [(1, 0), (2, 1), (3, 2)]:  # (step, direction index): theta_t appears at step t
        learned(big, small, t, j, 256)
    for t, j in [(1, 1), (1, 2), (2, 2)]:
        not_learned(big, small, t, j)


def test_leap_two_needs_quadratic_batch():
    base = dict(target="He2(z1)", sigma="erf(z-1)", steps=1, readout="hypercube")
    lin_s = Mean(MultiStepConfig(d=64, alpha0=16.0, eta=2.0, **base), 21)
    lin_b = Mean(MultiStepConfig(d=256, alpha0=16.0, eta=2.0, **base), 22)
    not_learned(lin_b, lin_s, 1, 0)
    # d = 16 is noisy (per-repetition sd ~ 0.08 of a mean overlap 0.39): 64 repetitions
    quad_s = Mean(MultiStepConfig(d=16, alpha0=1.0, kappa=2.0, eta=1.0, **base), 23, 64)
    quad_b = Mean(MultiStepConfig(d=64, alpha0=1.0, kappa=2.0, eta=1.0, **base), 24, 64)
    learned(quad_b, quad_s, 1, 0, 64)


def test_leap_four_is_never_learned_with_linear_batches():
    """Every direction after every step: not learned (the ratio of the directions' mean
    overlaps, their s.e. from the repetitions' direction-means)."""
    base = dict(target="z1*z2*z3*z4", sigma="erf(z-1)", steps=3, alpha0=16.0,
                eta=(2.0, 8.0, 16.0), readout="hypercube")
    small = run_multistep(MultiStepConfig(d=64, **base), seeds=SEEDS, seed=31)
    big = run_multistep(MultiStepConfig(d=256, **base), seeds=SEEDS, seed=32)
    for t in (1, 2, 3):
        per = [df[df.step == t].groupby("repetition")["mean_overlap"].mean().to_numpy()
               for df in (big, small)]
        assert all(x.size == SEEDS for x in per)
        (mb, sb), (ms, ss) = [(x.mean(), x.std(ddof=1) / math.sqrt(x.size)) for x in per]
        r, T = mb / ms, student(SEEDS)
        assert r + T * r * math.hypot(sb / mb, ss / ms) < 0.75, (t, r)
        top = big[big.step == t].groupby("direction")["mean_overlap"]
        assert (top.mean() + T * top.std(ddof=1) / math.sqrt(SEEDS)
                < 3 * init_level(256)).all(), (t, top.mean())
