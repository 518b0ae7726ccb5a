"""The sampled device of the network theory's population measure (docs/DERIVATIONS.md §7):
its batch algebra against an independent direct evaluation, its limits, and its bulk against the
closed-form trace of the step's population covariance, the deterministic resolvent and
independent samples (eight draws, Student quantiles, finite-d bias allowances from the measured
1/d slopes of validation/reports/BIAS_SLOPES.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from asymptotics.measures import population as N


def direct_channels(X, e, a, bq, fns):
    """Independent evaluation, straight from the definitions: C = (I + a M)^2 + bq Q,
    Sigma = Pi C Pi, b = pinv(Sigma) Pi C v, t = unit part of theta* orthogonal to v; returns
    sum_j phi(lam_j) over the nonzero spectrum and b^T phi(Sigma) b, b^T phi(Sigma) t,
    t^T phi(Sigma) t, v.C.v - b^T Sigma b for each phi in fns."""
    n0, d = X.shape
    M = X.T @ np.diag(e) @ X / n0
    Q = X.T @ np.diag(e * e) @ X / n0
    L = np.eye(d) + a * M
    C = L @ L + bq * Q
    u = X.T @ e / n0
    v = u / np.linalg.norm(u)
    Pi = np.eye(d) - np.outer(v, v)
    Sig = Pi @ C @ Pi
    lam, E = np.linalg.eigh(Sig)
    nz = lam > 1e-9 * lam.max()
    b = np.linalg.pinv(Sig, rcond=1e-9, hermitian=True) @ Pi @ C @ v
    t = np.eye(d)[0] - v[0] * v
    t /= np.linalg.norm(t)
    out = []
    for phi in fns:
        P = (E[:, nz] * phi(lam[nz])) @ E[:, nz].T
        out += [np.sum(phi(lam[nz])), b @ P @ b, b @ P @ t, t @ P @ t]
    out.append(v @ C @ v - b @ Sig @ b)
    return np.array(out)


def device_channels(lam, av, tv, ep, fns):
    out = []
    for phi in fns:
        w = phi(lam)
        out += [np.sum(w), np.sum(av * av * w), np.sum(av * tv * w), np.sum(tv * tv * w)]
    out.append(ep)
    return np.array(out)


FNS = [lambda x: np.ones_like(x), lambda x: x, lambda x: x * x, lambda x: 1.0 / (1.0 + 0.7 * x)]


@pytest.mark.parametrize("n0,d", [(30, 60), (90, 60)])
@pytest.mark.parametrize("a,bq", [(1.2, 0.4), (-0.5, 0.0), (0.0, 2.0)])
def test_batch_atoms_against_direct_evaluation(n0, d, a, bq):
    """Both batch paths (the n0-dimensional row-space reduction for n0 < d and the full one)
    give the weighted spectral sums of the direct evaluation on the same draw."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n0, d))
    e = np.maximum(X[:, 0], 0.0) - 0.4 + 0.3 * rng.standard_normal(n0)
    ref = direct_channels(X, e, a, bq, FNS)
    paths = [False] + ([True] if n0 < d - 1 else [])
    for reduce in paths:
        got = device_channels(*N._batch_atoms(N._batch_sample(X, e, reduce=reduce), a, bq), FNS)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11)


def test_identity_population():
    """a = bq = 0 (c1 = 0 and no zeta part): C = I, so Sigma = Pi has the eigenvalue 1 on v's
    complement, b = 0, Var eps = 1, and t is a unit vector."""
    rng = np.random.default_rng(3)
    for n0, d in [(20, 50), (100, 50)]:
        X = rng.standard_normal((n0, d))
        e = np.tanh(X[:, 0]) + 0.1
        for reduce in [False] + ([True] if n0 < d - 1 else []):
            lam, av, tv, ep = N._batch_atoms(N._batch_sample(X, e, reduce=reduce), 0.0, 0.0)
            assert lam.shape == (d - 1,)
            np.testing.assert_allclose(lam, 1.0, atol=1e-12)
            np.testing.assert_allclose(av, 0.0, atol=1e-12)
            assert ep == pytest.approx(1.0, abs=1e-12)
            assert np.sum(tv * tv) == pytest.approx(1.0, abs=1e-12)


def test_weighted_gram():
    rng = np.random.default_rng(1)
    X, w = rng.standard_normal((40, 9)), rng.standard_normal(40)
    np.testing.assert_allclose(N._weighted_gram(X, w), X.T @ np.diag(w) @ X, atol=1e-12)
    np.testing.assert_allclose(N._weighted_gram(X, np.abs(w)), X.T @ np.diag(np.abs(w)) @ X,
                               atol=1e-12)


def _band(x: np.ndarray, scale: float) -> float:
    """The two-sided 1e-3 Student quantile of len(x) - 1 degrees of freedom times the sample
    s.d. of ``x`` times ``scale``."""
    return float(student_t.ppf(1 - 5e-4, x.size - 1) * x.std(ddof=1) * scale)


@pytest.mark.parametrize("name", ["relu-relu-0.5-3", "relu-tanh-2-1", "tanh-sin-20-1"])
def test_device_bulk_against_its_draws_and_the_limit(name):
    """The default device (size 400, B = 8, 4, 1 first batches at alpha0 = 0.5, 2, 20): its
    c = tr(Sigma)/size and mean of 1/(1 + lam) against (a) eight independent first batches of
    the same size drawn here (same law, no bias: |device - mean| within the Student quantile of
    7 degrees of freedom at a two-sided 1e-3 per comparison times s sqrt(1/B + 1/8)), and (b)
    their d -> infinity limits, the closed-form trace 1 + 2 a E e + a^2 ((E e)^2 + E e^2/alpha0)
    + bq E e^2 (a = eta c1, bq = eta^2 E zeta^2/alpha0, e = g(z) - mu0) and the bulk of the
    deterministic measure, within the same quantile times s/sqrt(B) plus the finite-d bias at
    d = 400 measured as c/d (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/400)."""
    from validation.experiments import bias_slopes as BS

    st = BS.BY_NAME[name]
    m = N.population_measure(st.sigma, st.target, alpha0=st.alpha0, eta=st.eta, beta=1.0,
                             method="device")
    size = 400
    B = m.rho.size // (size - 1)
    assert m.rho.size == B * (size - 1) and B == {0.5: 8, 2.0: 4, 20.0: 1}[st.alpha0]
    a, bq, _ = BS.step_coefficients(st)
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(8):  # independent first batches of the device's size and law
        X, e = BS.first_batch(st, size, rng)
        lam = N._batch_atoms(N._batch_sample(X, e, reduce=X.shape[0] < size - 1), a, bq)[0]
        draws.append((lam.mean(), np.mean(1.0 / (1.0 + lam))))
    draws = np.array(draws)
    device = np.array([m.c, np.mean(1.0 / (1.0 + m.rho))])
    lim = BS.limits(st)
    for j, q in enumerate(("c", "bulk")):
        x = draws[:, j]
        assert abs(device[j] - x.mean()) <= _band(x, math.sqrt(1 / B + 1 / x.size)), (q, device[j],
                                                                                       x.mean())
        allow = BS.slope(name, q).allowance(size)
        assert abs(device[j] - lim[q]) <= _band(x, math.sqrt(1 / B)) + allow, (
            q, device[j], lim[q], allow)
    assert math.isfinite(m.F[0]) and m.F[0] >= 0.0


@pytest.mark.parametrize("name", ["relu-relu-2-3", "erf-sin-0.5-3"])
def test_resolvent_against_sampled_covariances(name):
    """The deterministic resolvent of the step's population covariance C (linear-pencil fixed
    point, docs/DERIVATIONS.md §7) against C sampled at d = 600 (eight first batches, an
    independent numpy eigendecomposition; theta*.x_i stratified, one uniform draw per quantile
    cell of N(0, 1), the rest of x_i Gaussian): tr((C - zeta)^-1)/d on and off the real axis
    (real and imaginary parts), the forms on theta* and u at zeta = -1, |u|^2 and theta*.u.
    Each mean within the Student quantile of 7 degrees of freedom at a two-sided 1e-3 per
    comparison times its s.e., plus the finite-d bias at d = 600 measured as c/d
    (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/600)."""
    from validation.experiments import bias_slopes as BS

    st = BS.BY_NAME[name]
    res = N.population_resolvent(st.sigma, st.target, alpha0=st.alpha0, eta=st.eta,
                                 zeta=np.array(BS.ZETAS))
    assert res.converged and res.trace.shape == (len(BS.ZETAS),)
    lim = BS.limits(st)
    assert lim["trace_re@0.5+0.5i"] == res.trace[2].real and lim["mu1"] == res.mu1
    rng = np.random.default_rng(5)
    d = 600
    runs = [BS.covariance_forms(st, *BS.first_batch(st, d, rng)) for _ in range(8)]
    checked = 0
    for q in runs[0]:
        x = np.array([r[q] for r in runs])
        if q.startswith("trace_im") and lim[q] == 0.0:
            assert np.all(x == 0.0)  # real zeta: a real trace
            continue
        allow = BS.slope(name, q).allowance(d)
        assert abs(x.mean() - lim[q]) <= _band(x, 1 / math.sqrt(x.size)) + allow, (
            q, x.mean(), lim[q], allow)
        checked += 1
    assert checked == 11
    # no step: C = I, R = 1/(1 - zeta) on every vector
    free = N.population_resolvent(st.sigma, st.target, alpha0=st.alpha0, eta=0.0, zeta=-1.0)
    assert free.trace == pytest.approx(0.5, abs=1e-12)
    assert free.theta_theta == pytest.approx(0.5, abs=1e-12)
    assert free.u_u == pytest.approx(0.5 * free.u_norm2, abs=1e-12)
