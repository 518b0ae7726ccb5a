"""The K-group generalised Marchenko-Pastur bulk outside E (docs/DERIVATIONS.md §9.7):
reductions to the isotropic block resolvent (§10.4) and to the one-group population bulk (§7),
an independent closed form for commuting covariances, the derivatives against finite
differences, and the device's scale against the groups' recursion."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.measures.channels import population_bulk
from asymptotics.network.bulk import GroupBulk
from asymptotics.network.device import device_covariances
from asymptotics.network.groups import network_groups
from asymptotics.network.solve import risk_network_groups
from asymptotics.spiked.kernels import dresolvent, resolvent

K3 = dict(lamg=np.array([0.05, 0.2, 0.1]), beta=1.3, pi=np.array([0.2, 0.5, 0.3]))


def _vhat(seed: int = 0, K: int = 3) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((K, K))
    return 0.7 * A @ A.T


def residual_jacobian(fmap, x0: np.ndarray, rel: float) -> np.ndarray:
    """The central-difference Jacobian of the fixed point's residual ``fmap(x) - x`` at ``x0``
    (steps ``rel * max(|x_j|, 1e-3)``)."""
    n = x0.size
    fd = np.empty((n, n))
    for j in range(n):
        h = rel * max(abs(x0[j]), 1e-3)
        xp, xm = x0.copy(), x0.copy()
        xp[j] += h
        xm[j] -= h
        fd[:, j] = ((fmap(xp) - xp) - (fmap(xm) - xm)) / (2 * h)
    return fd


def _noncommuting(B: int, K: int, n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sig = np.empty((B, K, n, n))
    for b in range(B):
        for g in range(K):
            X = rng.standard_normal((n, 2 * n))
            sig[b, g] = X @ X.T / (2 * n)
            sig[b, g] *= n / np.trace(sig[b, g])
    return sig


def test_isotropic_bulk_is_the_block_resolvent():
    vh = _vhat()
    gb = GroupBulk(np.broadcast_to(np.eye(15), (2, 3, 15, 15)).copy())
    t1, V1a, V2a = gb.resolvent(vh, K3["lamg"], K3["beta"], K3["pi"])
    t0, V1b, V2b = resolvent(vh, K3["lamg"], K3["beta"], K3["pi"])
    assert np.allclose(t1, t0, rtol=1e-12, atol=0)
    assert np.allclose(V1a, V1b, rtol=1e-12, atol=1e-14)
    assert np.allclose(V2a, V2b, rtol=1e-12, atol=0)
    rng = np.random.default_rng(2)
    X1 = rng.standard_normal((3, 3))
    X1 += X1.T
    X2 = rng.standard_normal(3)
    d1 = gb.dresolvent(vh, t1, K3["beta"], K3["pi"], X1, X2)
    d0 = dresolvent(vh, t0, K3["beta"], K3["pi"], X1, X2)
    assert np.allclose(d1[0], d0[0], atol=1e-12) and np.allclose(d1[1], d0[1], atol=1e-12)


@pytest.mark.parametrize("beta", [0.5, 1.7])
def test_one_group_is_the_population_bulk(beta):
    """K = 1 with a rotated (non-diagonal) covariance: m = <1/S> and <rho/S> of §7."""
    rng = np.random.default_rng(4)
    lam = rng.gamma(2.0, 0.5, size=60)
    U = np.linalg.qr(rng.standard_normal((60, 60)))[0]
    S = (U * lam) @ U.T
    S *= 60 / np.trace(S)
    s0, s1 = 0.07, 1.7
    tau, V1, _ = GroupBulk(S[None, None]).resolvent(np.array([[s1]]), np.array([s0]), beta,
                                                    np.array([1.0]))
    out = np.zeros(5)
    population_bulk(out, beta, np.linalg.eigvalsh(S), np.full(60, 1 / 60), s0, s1, True)
    assert abs(tau[0] - out[0]) <= 1e-12 * out[0]
    assert abs(V1[0, 0] - out[1]) <= 1e-12 * out[1]


def test_commuting_covariances_match_the_per_direction_closed_form():
    """Diagonal Sig_g (commuting): the dK system splits into d K x K systems,
    e_g = d^-1 sum_j lam_gj [Vhat1 (I + diag(D lam_j) Vhat1)^-1]_gg, V1 likewise."""
    rng = np.random.default_rng(5)
    n, K = 40, 3
    lam = rng.gamma(1.5, 1.0, size=(K, n))
    lam *= n / lam.sum(axis=1, keepdims=True)
    sig = np.zeros((1, K, n, n))
    for g in range(K):
        sig[0, g] = np.diag(lam[g])
    vh = _vhat(7)
    D = np.array([0.3, 0.9, 0.5])
    e, V1 = GroupBulk(sig).evaluate(vh, D, 1.3)
    e_ref, V1_ref = np.zeros(K), np.zeros((K, K))
    for j in range(n):
        Dj = np.diag(D * lam[:, j])
        Ki = np.linalg.inv(np.eye(K) + Dj @ vh)
        e_ref += np.diag(vh @ Ki) * lam[:, j] / n
        V1_ref += (Ki @ Dj) / (1.3 * n)
    assert np.allclose(e, e_ref, rtol=1e-12)
    assert np.allclose(V1, 0.5 * (V1_ref + V1_ref.T), rtol=1e-12)


def test_derivatives_are_the_finite_differences():
    sig = _noncommuting(2, 3, 12)
    gb = GroupBulk(sig)
    vh = _vhat(1)
    rng = np.random.default_rng(3)
    X1 = rng.standard_normal((3, 3))
    X1 += X1.T
    X2 = rng.standard_normal(3)
    lamg, beta, pi = K3["lamg"], K3["beta"], K3["pi"]
    tau, _, _ = gb.resolvent(vh, lamg, beta, pi)
    dV1, dV2 = gb.dresolvent(vh, tau, beta, pi, X1, X2)
    h = 1e-5
    _, V1p, V2p = gb.resolvent(vh + h * X1, lamg + h * X2, beta, pi)
    _, V1m, V2m = gb.resolvent(vh - h * X1, lamg - h * X2, beta, pi)
    assert np.allclose((V1p - V1m) / (2 * h), dV1, atol=1e-7 * np.abs(dV1).max())
    assert np.allclose((V2p - V2m) / (2 * h), dV2, atol=1e-7 * np.abs(dV2).max())


def test_isotropic_outside_bulk_leaves_the_risk():
    """``outside=`` an identity bulk gives the route's numbers (order parameters included)."""
    params = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.3], [-0.5, 0.8]],
                  bulk=[0.8, 1.1], fractions=[0.4, 0.6], overlaps=[[0.7, 0.1], [0.2, 0.5]],
                  lam=0.01, beta=1.2)
    ch = np.repeat(np.eye(4)[None], 2, axis=0)
    a = risk_network_groups(0.8, channels=ch, **params)
    b = risk_network_groups(0.8, channels=ch,
                            outside=GroupBulk(np.broadcast_to(np.eye(20), (2, 2, 20, 20)).copy()),
                            **params)
    assert a.converged and b.converged
    assert abs(a.risk - b.risk) <= 1e-9 * a.risk
    for name in ("Q1", "Q2", "zeta", "psi"):
        assert np.allclose(a.order[name], b.order[name], atol=1e-9)


def test_device_variance_is_the_recursion_c():
    """Each block's mean variance outside E after two relu steps is the groups' c_g (the
    recursion of THEORY.md §12.2, an independent quadrature) to the device's sampling."""
    kw = dict(steps=2, alpha0=16.0, eta=(2.0, 8.0))
    _, scale = device_covariances("relu", "z1 + z1*z2", **kw)
    assert np.all(np.abs(scale - 1.0) < 0.06), scale
    assert abs(float(scale.mean()) - 1.0) < 0.03
    ng = network_groups("relu", "z1 + z1*z2", **kw)
    assert ng.states[2].c[0] > 0


def test_coupling_zero_is_the_channels():
    """``CoupledChannels`` with no coupling (``a = 0``, the residual covariance the channels'
    own) is :class:`Channels` on the same bulk, order parameters included."""
    from asymptotics.network.coupling import CoupledChannels

    params = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.3], [-0.5, 0.8]],
                  bulk=[0.8, 1.1], fractions=[0.4, 0.6], overlaps=[[0.7, 0.1], [0.2, 0.5]],
                  lam=0.01, beta=1.2)
    rng = np.random.default_rng(0)
    ch = []
    for _ in range(2):
        A = rng.standard_normal((4, 4)) * 0.4
        ch.append(np.eye(4) + A @ A.T)
    ch = np.array(ch)
    gb = GroupBulk(_noncommuting(2, 2, 10))
    a = risk_network_groups(0.8, channels=ch, outside=gb, **params)
    cc = CoupledChannels(gb, np.zeros((2, 2, 4, 10)), ch, 2, 2)
    b = risk_network_groups(0.8, channels=ch, coupled=cc, **params)
    assert a.converged and b.converged
    assert abs(a.risk - b.risk) <= 1e-12 * a.risk
    for name in ("Q1", "Q2", "zeta", "psi"):
        assert np.allclose(a.order[name], b.order[name], atol=1e-12)


def _independent_bulk(sig, pi, beta, lamg, vhat1):
    """A second derivation of the K-group bulk (written apart from ``GroupBulk``): lift the
    groups to K d dimensions, ``A = blockdiag(beta pi_g tau_g Sig_g)``, ``M = Vhat1 (x) I``,
    ``H = M (I + A M)^-1``, ``1/tau_g = lamg_g + tr(Sig_g H_gg)/d`` solved by the monotone
    plain iteration, ``V1_gh = tr N_hg/(beta d)`` with ``N = A (I + M A)^-1``, ``V2 = pi tau``."""
    K, d = len(sig), sig[0].shape[0]
    M = np.kron(vhat1, np.eye(d))
    tau = 1.0 / (lamg + np.diag(vhat1))
    for _ in range(5000):
        A = np.zeros((K * d, K * d))
        for g in range(K):
            A[g * d:(g + 1) * d, g * d:(g + 1) * d] = beta * pi[g] * tau[g] * sig[g]
        H = M @ np.linalg.inv(np.eye(K * d) + A @ M)
        e = np.array([np.sum(sig[g] * H[g * d:(g + 1) * d, g * d:(g + 1) * d].T) / d
                      for g in range(K)])
        new = 1.0 / (lamg + e)
        if np.max(np.abs(new - tau)) < 1e-15 * np.max(tau):
            tau = new
            break
        tau = new
    A = np.zeros((K * d, K * d))
    for g in range(K):
        A[g * d:(g + 1) * d, g * d:(g + 1) * d] = beta * pi[g] * tau[g] * sig[g]
    N = A @ np.linalg.inv(np.eye(K * d) + M @ A)
    V1 = np.array([[np.trace(N[h * d:(h + 1) * d, g * d:(g + 1) * d]) for h in range(K)]
                   for g in range(K)]) / (beta * d)
    return 0.5 * (V1 + V1.T), pi * tau


def test_non_commuting_bulk_matches_an_independent_derivation():
    """K = 3 groups whose covariances are different polynomials of two weighted sample
    covariances of one batch (they do not commute): ``GroupBulk`` against the independent
    lift above, values and (by central differences of the independent code) derivatives."""
    rng = np.random.default_rng(11)
    d, K = 60, 3
    x = rng.standard_normal((4 * d, d))
    e = np.maximum(x[:, 0], 0.0) + 0.3 * np.tanh(2.0 * x[:, 0])
    M = (x * e[:, None]).T @ x / (4 * d)
    Q = (x * (e ** 2)[:, None]).T @ x / (4 * d)
    sig = []
    for a, b in [(0.6, 0.2), (-0.5, 0.7), (0.2, 0.0)]:
        S = (np.eye(d) + a * M) @ (np.eye(d) + a * M) + b * Q
        sig.append(S * d / np.trace(S))
    pi, beta = np.array([0.2, 0.5, 0.3]), 1.3
    C = rng.standard_normal((K, K))
    vhat1, lamg = C @ C.T, np.array([0.3, 0.15, 0.5])
    bulk = GroupBulk(np.array(sig)[None])
    tau, V1, V2 = bulk.resolvent(vhat1, lamg, beta, pi)
    W1, W2 = _independent_bulk(sig, pi, beta, lamg, vhat1)
    assert np.max(np.abs(V1 - W1)) <= 1e-12 * np.max(np.abs(W1))
    assert np.max(np.abs(V2 - W2)) <= 1e-12 * np.max(np.abs(W2))
    X1 = rng.standard_normal((K, K))
    X1, X2 = X1 + X1.T, rng.standard_normal(K)
    dV1, dV2 = bulk.dresolvent(vhat1, tau, beta, pi, X1, X2)
    h = 1e-5
    p1, p2 = _independent_bulk(sig, pi, beta, lamg + h * X2, vhat1 + h * X1)
    m1, m2 = _independent_bulk(sig, pi, beta, lamg - h * X2, vhat1 - h * X1)
    assert np.max(np.abs(dV1 - (p1 - m1) / (2 * h))) <= 1e-7 * np.max(np.abs(dV1))
    assert np.max(np.abs(dV2 - (p2 - m2) / (2 * h))) <= 1e-7 * np.max(np.abs(dV2))


@pytest.mark.parametrize("K, same", [(1, ()), (2, ()), (3, ()), (2, ((1, 0),)),
                                     (3, ((2, 1),)), (3, ((1, 0), (2, 0))),
                                     (4, ((3, 1), (2, 1)))])
def test_schur_route_is_the_dense_inverse(K, same):
    """The working basis (the eigenbasis of the base class: the largest set of groups with equal
    covariances, ``same`` makes group g's covariance group h's) and the Schur complement of the
    other groups against the dense inverse of ``Dc^-1 + Vhat1 (x) I`` in the given basis (no
    rotation): the traces ``tr W_ag`` and the quadratic forms ``a^T W a`` agree, and the
    working-basis W is the dense inverse rotated."""
    B, n = 2, 12
    sig = _noncommuting(B, K, n, seed=3 + K)
    for g, h in same:
        sig[:, g] = sig[:, h]
    gb = GroupBulk(sig)
    assert (gb._eig[3], list(gb._eig[2][:gb._eig[3]])) == (1 + len(same), sorted(
        {h for _, h in same} | {g for g, _ in same}) if same else [0])
    vh = _vhat(K, K) + 0.1 * np.eye(K)
    D = np.linspace(0.4, 1.7, K)
    a = np.random.default_rng(K).standard_normal((B, K, n))
    W = gb.wfull(vh, D)
    aw = gb.to_work(a[:, :, None, :])[:, :, 0, :]
    T = np.zeros((K, K))
    Q = np.zeros((K, K))
    for b in range(B):
        A = np.kron(vh, np.eye(n))
        for g in range(K):
            A[g * n:(g + 1) * n, g * n:(g + 1) * n] += np.linalg.inv(sig[b, g]) / D[g]
        Wd = np.linalg.inv(A).reshape(K, n, K, n)
        T += np.einsum("aigi->ag", Wd)
        Q += np.einsum("ai,aibj,bj->ab", a[b], Wd, a[b])
        assert np.allclose(W[b].reshape(K * n, K * n).trace(), Wd.reshape(K * n, K * n).trace(),
                           rtol=1e-12)
    assert np.allclose(np.einsum("baigi->ag", W), T, rtol=1e-12, atol=1e-14)
    assert np.allclose(np.einsum("zai,zaibj,zbj->ab", aw, W, aw), Q, rtol=1e-12, atol=1e-14)
    e, V1 = gb.evaluate(vh, D, 1.3)
    assert np.allclose(e, np.einsum("ga,ag->g", vh, T / D[None, :]) / (B * n), rtol=1e-12)
    assert np.allclose(V1, 0.5 * (D[:, None] * (T / D[None, :]).T + (D[:, None] * (
        T / D[None, :]).T).T) / (1.3 * B * n), rtol=1e-12)


def test_a_network_point_does_not_depend_on_the_points_before():
    """The coupled bulk keeps warm starts between a point's own rules only: a point of
    ``risk_by_step`` (solved after other alphas and steps) is the public point to the last bit
    (a pure function)."""
    import asymptotics as A

    kw = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, readout="pm1")
    table = A.risk_by_step([0.5, 4.0], steps=2, eta=(2.0, 8.0), progress=False, **kw)
    for row in table.itertuples():
        if row.step >= 1:
            eta = (2.0, 8.0)[:row.step]
            assert row.risk == A.risk(row.alpha, steps=row.step, eta=eta, **kw).risk


def test_a_kept_route_setup_is_a_fresh_one():
    """The route's setup (problem, rows' scale channels, coupled bulk) is built once per
    setting and kept with the device (``route.route_setup``): a point on the kept setup, after
    other points, is to the last bit the point on a setup built afresh."""
    import asymptotics as A
    from asymptotics.network import device, route

    kw = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, readout="pm1")
    first = A.risk(2.0, steps=2, eta=(2.0, 8.0), **kw).risk
    s1 = route.route_setup(steps=2, eta=(2.0, 8.0), **kw)
    assert route.route_setup(steps=2, eta=[2.0, 8.0, 16.0], **kw) is s1
    A.risk(0.5, steps=2, eta=(2.0, 8.0), **kw)
    kept = A.risk(2.0, steps=2, eta=(2.0, 8.0), **kw).risk
    for k in [k for k in device._CACHE if k[0] == "route"]:
        del device._CACHE[k]
    fresh = A.risk(2.0, steps=2, eta=(2.0, 8.0), **kw).risk
    assert route.route_setup(steps=2, eta=(2.0, 8.0), **kw) is not s1
    assert np.isfinite(first) and first == kept == fresh


def test_coupled_field_parts_are_the_complex_step():
    """The coupled channels' field parts of Q (the closed-form derivative of ``F = s^T R s``,
    ``dF = w^T dA w - y_T^T dM y_T``) against a complex step of F through the blocks of R
    (``CoupledChannels.blocks``), tau moving by the bulk's implicit derivative."""
    from asymptotics.network.coupling import CoupledChannels

    B, K, n, r, k = 2, 2, 10, 2, 1
    m = r + k
    rng = np.random.default_rng(8)
    gb = GroupBulk(_noncommuting(B, K, n, seed=7))
    E = rng.standard_normal((K, m, m))
    ch = CoupledChannels(gb, 0.3 * rng.standard_normal((B, K, m, n)),
                         0.1 * np.einsum("gij,gkj->gik", E, E), r, k)
    vh = _vhat(3, K) + 0.2 * np.eye(K)
    pi, beta = np.array([0.4, 0.6]), 1.2
    tau, _, _ = gb.resolvent(vh, np.array([0.1, 0.2]), beta, pi)
    zh, ph = rng.standard_normal((K, r)), rng.standard_normal((K, k))
    q1, q2 = ch.field_q(vh, tau, beta, pi, zh, ph)
    D = beta * pi * tau
    Ac, M = ch.acal(vh, D), np.kron(vh, np.eye(k))
    s = np.concatenate([zh.ravel(), ph.ravel()])
    h = 1e-20

    def dF(X1, X2):
        _, dv2 = gb.dresolvent(vh, tau, beta, pi, X1, X2)
        dA = ch.dacal(vh, D, X1, beta * dv2)
        Pvv, Pvt, Xtt = ch.blocks(Ac + 1j * h * dA, M + 1j * h * np.kron(X1, np.eye(k)))
        return float(np.imag(s @ np.block([[Pvv, Pvt], [Pvt.T, Xtt]]) @ s) / h)

    ref2 = np.array([-dF(np.zeros((K, K)), np.eye(K)[g]) for g in range(K)])
    ref1 = np.array([[-dF(np.outer(np.eye(K)[g], np.eye(K)[j]), np.zeros(K)) for j in range(K)]
                     for g in range(K)])
    assert np.allclose(q2, ref2, rtol=1e-10, atol=1e-13)
    assert np.allclose(q1, 0.5 * (ref1 + ref1.T), rtol=1e-10, atol=1e-13)
    assert np.max(np.abs(q1)) > 1e-3 and np.max(np.abs(q2)) > 1e-3  # (not a trivial zero)


@pytest.mark.parametrize("sigma, target", [("relu", "tanh"), ("erf(z-1)", "z + z**2")])
def test_coupled_route_at_one_step_is_the_one_step_network_theory(sigma, target):
    """One step with the constant readout (K = 1, T = 1): the coupled route (the sampled
    device's bulk outside E and its coupling, DERIVATIONS.md §9.7-9.8) against the one-step
    network theory of DERIVATIONS.md §7 (the population bulk of the step's batch and its
    channels, a separate derivation and code path). They differ only by the device's sampling
    and §7's bulk-variance channel (zero for relu at the first step); measured 0.1% (relu) and
    0.2-0.4% (erf(z-1)); the isotropic route is 0.3-1.5% off."""
    import asymptotics as A
    from asymptotics.network.route import risk_network

    kw = dict(sigma=sigma, alpha0=16.0, lam=0.01, beta=1.0, p=2000, eta=2.0)
    many = target.replace("z", "z1") if target != "tanh" else "tanh(z1)"
    for alpha in (0.5, 2.0):
        exact = A.risk(alpha, target=target, model="network", **kw).risk
        coupled = risk_network(alpha, steps=1, readout="constant", target=many, **kw).risk
        assert abs(coupled / exact - 1.0) < 0.01, (alpha, coupled, exact)


@pytest.mark.slow
def test_device_sampling_error_is_small():
    """The sampled device's error (DERIVATIONS.md §9.9): relu ``z1 + z1*z2`` after two steps
    (alpha0 = 16, eta = 2, 8; the setting where it is largest), the risk with three device seeds
    at the default size. With 4 blocks of 100 directions the seeds spread over 1.39-1.78 at
    alpha = 2 (s.d. 7%); the default (32 blocks) must keep the spread within 4%."""
    import asymptotics.network.device as dv
    from asymptotics.network.route import network_problem

    kw = dict(sigma="relu", target="z1 + z1*z2", steps=2, alpha0=16.0, eta=(2.0, 8.0),
              readout="constant")
    prob = network_problem(**kw)
    risks = []
    for seed in (0, 1, 2):
        cc = dv.network_coupled(**kw, seed=seed)
        risks.append(risk_network_groups(2.0, coupled=cc, sigma="relu", lam=0.01, beta=1.0,
                                         p=2000, **prob).risk)
    assert max(risks) / min(risks) - 1.0 < 0.04, risks


def test_chord_steps_solve_a_fixed_point_and_refuse_a_bad_jacobian():
    """``chord``: x = A x + b with the exact Jacobian of x -> F(x) - x is one step (the second
    map evaluation sees the fixed point); a Jacobian of the wrong sign does not contract
    and is refused (None: the caller's fallback)."""
    from asymptotics.equations.solver import SolverConfig, chord

    rng = np.random.default_rng(3)
    A = 0.3 * rng.standard_normal((4, 4))
    b = rng.standard_normal(4)
    x_star = np.linalg.solve(np.eye(4) - A, b)
    out = chord(lambda x: A @ x + b, np.zeros(4), A - np.eye(4), SolverConfig(rtol=1e-12))
    assert out is not None and out.converged and out.n_iter == 2
    assert np.allclose(out.x, x_star, rtol=1e-12, atol=1e-14)
    assert chord(lambda x: A @ x + b, np.zeros(4), np.eye(4) - A, SolverConfig()) is None


def test_chord_jacobian_is_the_fixed_point_maps_central_difference(monkeypatch):
    """The Jacobian a point's later kappa rules take chord steps with (``fp_jacobian``, from
    the bulk's Hessian parts at the last rule's solution) against a central difference of the
    (V1, tau) map of the new rule at its start: equal up to the change of rule (< 1%)."""
    import asymptotics as A
    from asymptotics.network import solve as So

    seen = []
    real = So.chord

    def spy(fmap, x0, jac, config, nonneg=(), max_iter=8):
        if not seen:
            seen.append((residual_jacobian(fmap, x0, 1e-6), jac.copy()))
        return real(fmap, x0, jac, config, nonneg, max_iter)

    monkeypatch.setattr(So, "chord", spy)
    monkeypatch.setattr(So, "BORROW", False)  # (the full coupled climb: every rule)
    res = A.risk(2.0, sigma="relu", target="z1 + z1*z2", alpha0=16.0, readout="pm1", steps=2,
                 eta=(2.0, 4.0))
    assert res.converged and seen
    fd, jac = seen[0]
    assert np.max(np.abs(fd - jac)) <= 1e-2 * np.max(np.abs(fd))


@pytest.mark.parametrize("K, same", [(1, ()), (2, ()), (3, ()), (2, ((1, 0),)),
                                     (3, ((2, 1),)), (3, ((1, 0), (2, 0))),
                                     (4, ((3, 1), (2, 1)))])
@pytest.mark.parametrize("neg", [False, True])
def test_compact_w_is_the_dense_inverse(K, same, neg):
    """W's compact forms (diagonal blocks when every group is in the base class, the low-rank
    form with one group outside it, else dense) against the dense inverse of ``Dc^-1 + Vhat1
    (x) I`` per block in the given basis: the traces ``tr W_xy``, the Gram ``<W_xy, W_ce>_F``
    (both blind to the working basis' common rotation) and the quadratic forms
    ``a_(x,e)^T W_xy a_(y,f)`` from ``W a``. ``neg``: the first group's ``D < 0`` (the
    spectra's real lam beyond the bulk's edge: W symmetric and indefinite, LU in place of
    Cholesky)."""
    from asymptotics.network.schur import LowRankW

    B, n, m = 2, 12, 2
    sig = _noncommuting(B, K, n, seed=11 + K)
    for g, h in same:
        sig[:, g] = sig[:, h]
    gb = GroupBulk(sig)
    vh = _vhat(K, K) + 0.1 * np.eye(K)
    D = np.linspace(0.4, 1.7, K)
    if neg:
        D[0] = -D[0]
    a = np.random.default_rng(K).standard_normal((B, K, m, n))
    W = gb.wform(vh, D)
    c = gb._eig[3]
    low = isinstance(W, LowRankW)
    assert low == (c == K - 1) and (not low and W.ndim == 4) == (c == K)
    T, H, Q = np.zeros((K, K)), np.zeros((K, K, K, K)), np.zeros((K, m, K, m))
    for b in range(B):
        A = np.kron(vh, np.eye(n))
        for g in range(K):
            A[g * n:(g + 1) * n, g * n:(g + 1) * n] += np.linalg.inv(sig[b, g]) / D[g]
        Wd = np.linalg.inv(A).reshape(K, n, K, n)
        T += np.einsum("aigi->ag", Wd)
        H += np.einsum("xiyj,ciej->xyce", Wd, Wd)
        Q += np.einsum("xei,xiyj,yfj->xeyf", a[b], Wd, a[b])
    aw = gb.to_work(a)
    Wa = gb.wa(W, np.swapaxes(aw, 2, 3))
    assert np.allclose(gb.wtrace(W), T, rtol=1e-12, atol=1e-13)
    assert np.allclose(gb._gram(W), H, rtol=1e-12, atol=1e-13)
    assert np.allclose(np.einsum("bxei,bxiyf->xeyf", aw, Wa), Q, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("K, same", [(1, ()), (2, ()), (2, ((1, 0),)), (3, ((2, 1),)), (3, ())])
def test_coupling_below_the_edge_is_the_dense_route(K, same):
    """With some ``D_g < 0`` (the spectra's real lam beyond the bulk's edge) the coupling's Gram
    ``Acal`` and its derivative from W's compact indefinite forms (``Kc`` not formed) are those
    of the dense route (``Kc = (I + Dc Vc)^-1`` by a full inverse per block)."""
    from asymptotics.network.coupling import CoupledChannels

    B, n, r, k = 2, 12, 1, 2
    sig = _noncommuting(B, K, n, seed=21 + K)
    for g, h in same:
        sig[:, g] = sig[:, h]
    rng = np.random.default_rng(K)
    a = rng.standard_normal((B, K, r + k, n))
    E = rng.standard_normal((K, r + k, r + k))
    ecov = np.einsum("gij,gkj->gik", E, E)
    vh = _vhat(K, K) + 0.1 * np.eye(K)
    D = np.linspace(0.4, 1.7, K)
    D[0] = -D[0]
    X1, dD = _vhat(K + 5, K), np.linspace(-0.3, 0.5, K)
    out = []
    for dense in (False, True):
        gb = GroupBulk(sig)
        if dense:
            gb.wform = lambda vhat1, D: None
        cc = CoupledChannels(gb, a, ecov, r, k)
        assert (gb.wkc(vh, D)[2] is None) != dense
        out.append((cc.acal(vh, D), cc.dacal(vh, D, X1, dD)))
    for x, y in zip(out[0], out[1], strict=True):
        assert np.allclose(x, y, rtol=1e-11, atol=1e-12 * np.max(np.abs(y)))
