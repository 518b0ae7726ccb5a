"""The sampled device of the network theory's population measure (docs/DERIVATIONS.md §7):
its batch algebra against an independent direct evaluation, its limits, and its bulk against the
closed-form trace of the step's population covariance and independent samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import get_function
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


@pytest.mark.parametrize("sigma,target,alpha0,eta", [("relu", "relu", 0.5, 3.0),
                                                     ("relu", "tanh", 2.0, 1.0),
                                                     ("tanh", "sin", 20.0, 1.0)])
def test_device_bulk_against_the_closed_form_trace(sigma, target, alpha0, eta):
    """c = tr(Sigma)/d of the default device against the d -> infinity trace of the step's
    covariance, 1 + 2 a E e + a^2 ((E e)^2 + E e^2/alpha0) + bq E e^2 (a = eta c1,
    bq = eta^2 E zeta^2/alpha0, e = g(z) - mu0), and the mean of 1/(1 + lam) against direct
    sampling of four d = 800 (500 at alpha0 = 20) first batches (independent seeds)."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    m = N.population_measure(s, g, alpha0=alpha0, eta=eta, beta=1.0, method="device")
    zq, wq = np.polynomial.hermite_e.hermegauss(120)
    wq = wq / wq.sum()
    e = g(zq) - k.mu0
    e1, e2 = float(wq @ e), float(wq @ (e * e))
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1**2, 0.0) / alpha0
    trace = 1.0 + 2 * a * e1 + a * a * (e1 * e1 + e2 / alpha0) + bq * e2
    assert m.c == pytest.approx(trace, rel=0.02)
    rng = np.random.default_rng(11)
    d = 800 if alpha0 <= 2 else 500
    n0 = int(alpha0 * d)
    direct = []
    for _ in range(4):  # independent first batches (heavy-tailed weights: average a few)
        X = rng.standard_normal((n0, d))
        lam = N._batch_atoms(N._batch_sample(X, g(X[:, 0]) - k.mu0, reduce=n0 < d - 1),
                             a, bq)[0]
        direct.append(np.mean(1.0 / (1.0 + lam)))
    assert np.mean(1.0 / (1.0 + m.rho)) == pytest.approx(np.mean(direct), rel=0.01)
    assert math.isfinite(m.F[0]) and m.F[0] >= 0.0


@pytest.mark.parametrize("sigma,target,alpha0,eta", [("relu", "relu", 2.0, 3.0),
                                                     ("erf", "sin", 0.5, 3.0)])
def test_resolvent_against_sampled_covariances(sigma, target, alpha0, eta):
    """The deterministic resolvent of the step's population covariance C (linear-pencil fixed
    point, docs/DERIVATIONS.md §7) against C sampled at d = 600 (four first batches):
    tr((C - zeta)^-1)/d on and off the real axis, and the forms on theta* and u at zeta = -1.
    theta*.x_i are stratified (one uniform draw per quantile cell of N(0, 1); the rest of x_i
    Gaussian): with i.i.d. theta*.x_i the empirical law of the weights e_i fluctuates at
    O(n0^-1/2) and so does the bulk (0.7% s.d. at d = 800 for relu/relu). The forms of a sampled
    C fluctuate at O(d^-1/2) (about 1.5% here for the mean of four)."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1**2, 0.0) / alpha0
    zs = np.array([-1.0, -0.2, 0.5 + 0.5j, 2.0 + 0.3j])
    res = N.population_resolvent(s, g, alpha0=alpha0, eta=eta, zeta=zs)
    assert res.converged and res.trace.shape == zs.shape
    rng = np.random.default_rng(5)
    d = 600
    n0 = int(alpha0 * d)
    tr, forms = [], []
    for _ in range(4):
        X = rng.standard_normal((n0, d))
        X[:, 0] = ndtri((np.arange(n0) + rng.random(n0)) / n0)
        e = g(X[:, 0]) - k.mu0
        L = np.eye(d) + a * N._weighted_gram(X, e) / n0
        lam, E = np.linalg.eigh(L @ L + bq * N._weighted_gram(X, e * e) / n0)
        th, u = E[0], E.T @ (X.T @ e / n0)
        tr.append(np.mean(1.0 / (lam[None, :] - zs[:, None]), axis=1))
        r = 1.0 / (lam + 1.0)
        forms.append([r @ (th * th), r @ (th * u), r @ (u * u), u @ u, th @ (E.T @ (X.T @ e / n0))])
    np.testing.assert_allclose(res.trace, np.mean(tr, axis=0), rtol=0.01)  # O(1/d) near the axis
    emp = np.mean(forms, axis=0)
    np.testing.assert_allclose([res.theta_theta[0].real, res.theta_u[0].real, res.u_u[0].real],
                               emp[:3], rtol=0.03)
    assert res.u_norm2 == pytest.approx(emp[3], rel=0.02)
    assert res.mu1 == pytest.approx(emp[4], rel=0.05)
    # no step: C = I, R = 1/(1 - zeta) on every vector
    free = N.population_resolvent(s, g, alpha0=alpha0, eta=0.0, zeta=-1.0)
    assert free.trace == pytest.approx(0.5, abs=1e-12)
    assert free.theta_theta == pytest.approx(0.5, abs=1e-12)
    assert free.u_u == pytest.approx(0.5 * free.u_norm2, abs=1e-12)
