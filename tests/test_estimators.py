"""Test-error estimators (validation.protocol.estimators) against closed-form Gaussian integrals.

For sigma = erf every term of ``R = E g^2 - 2 E[g f] + E f^2`` is known in closed form:
``E erf(u) erf(v) = (2/pi) arcsin(2 S_uv / sqrt((1 + 2 S_uu)(1 + 2 S_vv)))`` and, by Stein's
lemma, ``E[He_j(z) F(h)] = m^j E F^(j)(h)`` with ``m = Cov(z, h)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import validation.protocol.simulator as S
from asymptotics import get_function
from validation.protocol.estimators import ESTIMATORS, cross_moments, estimate_test_error


def _problem(d: int = 30, p: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = S.unit_vector(rng, d)
    W = S.sphere_rows(rng, p, d) * rng.uniform(0.5, 2.0, (p, 1))
    W[:3] += 1.5 * theta  # a few neurons strongly aligned with the teacher (the spike)
    return rng, W, theta


def test_cross_moments_match_stein_closed_forms():
    _, W, theta = _problem()
    m, norm2 = W @ theta, np.einsum("ij,ij->i", W, W)
    erf, relu = get_function("erf"), get_function("relu")
    lin, he2 = get_function("linear"), get_function("he2")
    # E[z erf(h)] = m E erf'(h) = m (2 / sqrt pi) / sqrt(1 + 2 |w|^2)
    np.testing.assert_allclose(cross_moments(W, theta, erf, lin),
                               m * 2 / math.sqrt(math.pi) / np.sqrt(1 + 2 * norm2), atol=1e-12)
    # E[z relu(h)] = m P(h > 0) = m / 2;  E[He2(z) relu(h)] = m^2 phi(0) / |w|
    np.testing.assert_allclose(cross_moments(W, theta, relu, lin), m / 2, atol=1e-12)
    np.testing.assert_allclose(cross_moments(W, theta, relu, he2),
                               m**2 / np.sqrt(2 * math.pi * norm2), atol=1e-12)
    # E[relu(z) relu(h)]: the arc-cosine kernel of degree 1
    rho = m / np.sqrt(norm2)
    arc = np.sqrt(norm2) / (2 * math.pi) * (np.sqrt(1 - rho**2) + rho * (math.pi - np.arccos(rho)))
    np.testing.assert_allclose(cross_moments(W, theta, relu, relu), arc, atol=1e-10)


def _exact_erf_risk(W, a, theta, target_name):
    """Closed-form test error for sigma = erf and g = linear or he2 (module docstring)."""
    p = W.shape[0]
    G = W @ W.T
    diag = 1 + 2 * np.diag(G)
    K = 2 / math.pi * np.arcsin(2 * G / np.sqrt(np.outer(diag, diag)))
    ef2 = a @ K @ a / p
    if target_name == "linear":
        cross = (W @ theta) * 2 / math.sqrt(math.pi) / np.sqrt(diag)
        return 1.0 - 2 * a @ cross / math.sqrt(p) + ef2
    return 2.0 + ef2  # E[He2(z) erf(h)] = m^2 E erf''(h) = 0 (erf'' is odd)


@pytest.mark.parametrize("target_name", ["linear", "he2"])
def test_estimators_are_unbiased_and_cv_is_the_most_precise(target_name):
    """60 paired repetitions: each estimator's mean within the Student quantile of 59 degrees of
    freedom at a two-sided 1e-3 Bonferroni-split over the 6 comparisons (3 estimators x 2
    readouts: 4.02 s.e.) of the exact risk, no bias allowance (the estimators are unbiased at
    every n)."""
    from scipy import stats

    rng, W, theta = _problem(seed=1)
    p = W.shape[0]
    erf, target = get_function("erf"), get_function(target_name)
    # two readouts: one that learns part of g, one that is noise around it
    A = np.column_stack([rng.standard_normal(p) * 0.3 + 1.5, rng.standard_normal(p)])
    exact = np.array([_exact_erf_risk(W, A[:, j], theta, target_name) for j in range(2)])
    n, reps = 10_000, 60
    values = {est: [] for est in ESTIMATORS}
    for _ in range(reps):  # the three estimators on the same inputs: a paired comparison
        X = rng.standard_normal((n, W.shape[1]))
        for est in ESTIMATORS:
            values[est].append(estimate_test_error(W, A, theta, erf, target,
                                                   iter([X[: n // 2], X[n // 2:]]), n, est))
    spread = {}
    t = stats.t.ppf(1 - 1e-3 / 2 / (len(ESTIMATORS) * 2), reps - 1)
    for est, v in values.items():
        v = np.array(v)
        mean, se = v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(reps)
        assert np.all(np.abs(mean - exact) < t * se), (est, mean, exact, se)
        spread[est] = v.std(axis=0, ddof=1)
    assert np.all(spread["cv"] <= 1.05 * np.minimum(spread["mc"], spread["split"])), spread
    if target_name == "he2":  # g is not learned: most of the plain Monte Carlo noise is g^2
        assert np.all(spread["cv"] < spread["mc"] / 3), spread


def test_estimator_is_checked():
    _, W, theta = _problem()
    with pytest.raises(ValueError, match="estimator must be one of"):
        estimate_test_error(W, np.ones((W.shape[0], 1)), theta, get_function("erf"),
                            get_function("linear"), iter(()), 1, "exact")
    with pytest.raises(ValueError, match="estimator must be one of"):
        S.Setting("srf", "erf", "tanh", alpha=1, alpha0=1, eta=1, lam=0.1, estimator="nope")
