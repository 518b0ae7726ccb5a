"""The simulators checked against independent computations (no theory involved)."""

import math
import subprocess
import sys

import numpy as np
import pytest

import validation.protocol.simulator as S
from asymptotics import get_function, srf_mapping


def _ridge_by_lstsq(F, y, lam):
    """ridge as least squares on the augmented system [F; sqrt(lam) I] a = [y; 0]."""
    p = F.shape[1]
    A = np.vstack([F, math.sqrt(lam) * np.eye(p)])
    b = np.concatenate([y, np.zeros(p)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


@pytest.mark.parametrize("n,p", [(30, 12), (12, 30)])
def test_ridge_primal_dual_and_lstsq_agree(n, p):
    rng = np.random.default_rng(1)
    F, y = rng.standard_normal((n, p)), rng.standard_normal(n)
    ref = _ridge_by_lstsq(F, y, 0.3)
    for method in ("primal", "dual", "auto"):
        np.testing.assert_allclose(S.ridge_readout(F, y, 0.3, method=method), ref, rtol=1e-10,
                                   atol=1e-12)


def test_ridgeless_is_minimum_norm_interpolator():
    rng = np.random.default_rng(2)
    F, y = rng.standard_normal((10, 25)), rng.standard_normal(10)
    a = S.ridge_readout(F, y, 0.0)
    np.testing.assert_allclose(a, np.linalg.pinv(F) @ y, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(F @ a, y, atol=1e-10)


def test_nested_chunked_readouts_equal_one_shot_ridge(monkeypatch):
    """Every (n, lam) readout of one pass equals ridge (by lstsq) on the first n samples, for
    n below p (dual path) and above (chunked primal path), with label noise."""
    sigma, target = get_function("tanh"), get_function("sin")
    rng = np.random.default_rng(3)
    p, d = 20, 15
    W, theta = S.sphere_rows(rng, p, d), S.unit_vector(rng, d)
    monkeypatch.setattr(S, "CHUNK_BYTES", 8 * p * 7)  # chunks far smaller than n
    ns, lams = [13, 300, 41], [0.1, 2.0]
    A = S.fit_readouts(W, theta, sigma, target, ns=ns, lams=lams, delta=0.5,
                       rng=np.random.default_rng(4), noise_rng=np.random.default_rng(5))
    X = np.random.default_rng(4).standard_normal((300, d))
    y = target(X @ theta) + math.sqrt(0.5) * np.random.default_rng(5).standard_normal(300)
    F = sigma(X @ W.T) / math.sqrt(p)
    for i, n in enumerate(ns):
        for j, lam in enumerate(lams):
            np.testing.assert_allclose(A[:, i, j], _ridge_by_lstsq(F[:n], y[:n], lam), rtol=1e-8)


def test_gradient_matches_finite_differences():
    sigma = get_function("tanh")
    rng = np.random.default_rng(5)
    n, p, d = 40, 6, 5
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    W, a = rng.standard_normal((p, d)), rng.standard_normal(p)

    def loss(W):
        return 0.5 * np.mean((y - sigma(X @ W.T) @ a / math.sqrt(p)) ** 2)

    G = -S.descent_direction(W, a, X, y, sigma)[0]  # grad_W L
    h = 1e-6
    for k, j in [(0, 0), (3, 2), (5, 4)]:
        E = np.zeros_like(W)
        E[k, j] = h
        np.testing.assert_allclose(G[k, j], (loss(W + E) - loss(W - E)) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("sigma_name", ["tanh", "relu"])
def test_network_step_is_gradient_descent_with_eta_tilde_p(sigma_name):
    sigma, target = get_function(sigma_name), get_function("tanh")
    rng = np.random.default_rng(6)
    p, d, n0, eta = 7, 9, 50, 1.7
    W0, theta = S.sphere_rows(rng, p, d), S.unit_vector(rng, d)
    W1 = S.network_step(W0, theta, sigma, target, n0=n0, eta_tilde=eta, delta=0.0,
                        rng=np.random.default_rng(8))
    X = np.random.default_rng(8).standard_normal((n0, d))
    G = -S.descent_direction(W0, np.ones(p) / math.sqrt(p), X, target(X @ theta), sigma)[0]
    np.testing.assert_allclose(W1, W0 - eta * p * G, rtol=1e-10, atol=1e-12)


def test_sphere_rows_and_srf_spike_geometry():
    rng = np.random.default_rng(9)
    W0 = S.sphere_rows(rng, 50, 40)
    np.testing.assert_allclose(np.linalg.norm(W0, axis=1), 1.0, rtol=1e-12)
    theta = S.unit_vector(rng, 40)
    W1, v = S.srf_weights(W0, theta, r=0.7, c=1.3, gamma=0.6, rng=rng)
    assert abs(np.linalg.norm(v) - 1) < 1e-12 and abs(v @ theta - 0.6) < 1e-12
    np.testing.assert_allclose(W1 - math.sqrt(1.3) * W0, 0.7 * np.outer(np.ones(50), v),
                               atol=1e-12)


def test_test_error_of_zero_readout_is_second_moment_of_target():
    # a = 0 predicts 0, so the test error is E g(z)^2 = 1 for a linear target (closed form)
    rng = np.random.default_rng(10)
    W, theta = S.sphere_rows(rng, 5, 30), S.unit_vector(rng, 30)
    n = 200_000
    err = S.estimate_test_error(W, np.zeros(5), theta, get_function("tanh"),
                                get_function("linear"), n_test=n, rng=rng)
    assert abs(err - 1.0) < 5 * math.sqrt(2.0 / n)


@pytest.mark.parametrize("sigma_name", ["tanh", "relu"])
def test_network_step_has_the_predicted_spike(sigma_name):
    """The network after one step against the sRF mapping (THEORY §3, mu0 != 0 for relu):
    the mean row of W1 is r v (|v| = 1, <v, theta> = gamma) and the mean squared row norm is
    c + r^2, up to O(d^-1/2) fluctuations."""
    sigma, target = get_function(sigma_name), get_function("tanh")
    d = p = 1200
    alpha0, eta = 2.0, 1.0
    rng = np.random.default_rng(11)
    W0, theta = S.sphere_rows(rng, p, d), S.unit_vector(rng, d)
    W1 = S.network_step(W0, theta, sigma, target, n0=int(alpha0 * d), eta_tilde=eta, delta=0.0,
                        rng=rng)
    m = srf_mapping(sigma, target, alpha0=alpha0, eta=eta)
    mean_row = W1.mean(axis=0)
    tol = 4 / math.sqrt(d)
    assert abs(np.linalg.norm(mean_row) - m.r) < tol * max(1.0, m.r)
    assert abs(mean_row @ theta / np.linalg.norm(mean_row) - m.gamma) < tol
    assert abs(np.mean(np.sum(W1**2, axis=1)) - (m.c + m.r**2)) < tol * (m.c + m.r**2)


def test_seeds_reproducible_and_independent_of_workers():
    s = S.Setting(model="srf", sigma="tanh", target="tanh", alpha=1.0, alpha0=1.0, eta=1.0,
                  lam=0.1, d=60, n_test=2000)
    one = S.simulate(s, seeds=3, seed=4)
    again = S.simulate(s, seeds=3, seed=4)
    two = S.simulate(s, seeds=3, seed=4, n_jobs=2)
    assert one.values == again.values
    np.testing.assert_allclose(two.values, one.values, rtol=1e-10)
    assert len(set(one.values)) == 3
    assert S.simulate(s, seeds=3, seed=5).values != one.values
    assert one.mean == pytest.approx(np.mean(one.values))


@pytest.mark.parametrize("kwargs,message", [
    (dict(model="nn"), "model must be one of"),
    (dict(alpha=-1.0), "alpha must be > 0"),
    (dict(lam=-0.1), "lam must be >= 0"),
    (dict(d=1), "d must be an integer >= 2"),
])
def test_setting_rejects_bad_input(kwargs, message):
    base = dict(model="srf", sigma="tanh", target="tanh", alpha=1.0, alpha0=1.0, eta=1.0, lam=0.1)
    with pytest.raises(ValueError, match=message):
        S.Setting(**{**base, **kwargs})


def test_compare_cli_prints_csv_and_rejects_bad_input(tmp_path):
    cmd = [sys.executable, "-m", "validation", "compare", "--model", "rf", "--alpha", "1,2",
           "--d", "60", "--seeds", "2", "--n-test", "2000", "--quiet",
           "--plot", str(tmp_path / "c.png")]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("alpha,theory,sim_mean,sim_se,z")
    assert [line.split(",")[0] for line in out[1:]] == ["1", "2"]
    assert (tmp_path / "c.png").stat().st_size > 0
    bad = subprocess.run([sys.executable, "-m", "validation", "compare", "--lam", "-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "lam must be >= 0" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_block_rows_do_not_depend_on_chunking_or_threads(monkeypatch):
    from validation.protocol import simulator

    seed = np.random.SeedSequence(11)
    whole = simulator.BlockRows(seed, 7).take(1305)
    parts = simulator.BlockRows(seed, 7)
    cut = np.vstack([parts.take(300), parts.take(1000), parts.take(5)])
    np.testing.assert_array_equal(whole, cut)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    np.testing.assert_array_equal(whole, simulator.BlockRows(seed, 7).take(1305))
    # block b is the b-th SeedSequence child: independent of the other blocks
    child = np.random.SeedSequence(11).spawn(1)[0]
    first = np.random.Generator(np.random.SFC64(child)).standard_normal((512, 7))
    np.testing.assert_array_equal(whole[:512], first)
    assert abs(whole.mean()) < 4 / np.sqrt(whole.size) and abs(whole.std() - 1) < 0.05


def welch_quantile(r1, r2, level: float = 1e-3) -> float:
    """The two-sided ``level`` Student quantile of the Welch-Satterthwaite degrees of freedom of
    the difference of two means with standard errors ``r1.se``, ``r2.se``."""
    from scipy import stats

    n1, n2 = len(r1.values), len(r2.values)
    dof = (r1.se**2 + r2.se**2) ** 2 / (r1.se**4 / (n1 - 1) + r2.se**4 / (n2 - 1))
    return float(stats.t.ppf(1 - level / 2, dof))


def test_stream_1_and_2_agree_in_distribution_not_in_values():
    """Eight seeds of each stream: the means agree within the Welch-Student quantile at a
    two-sided 1e-3 (same law, no bias allowance)."""
    from validation.protocol.simulator import Setting, simulate

    base = dict(model="srf", sigma="tanh", target="tanh", alpha=1.5, alpha0=2.0, eta=1.0,
                lam=0.1, d=300)
    r1 = simulate(Setting(**base, stream=1), seeds=8, seed=5)
    r2 = simulate(Setting(**base, stream=2), seeds=8, seed=5)
    assert r1.values != r2.values
    assert abs(r1.mean - r2.mean) < welch_quantile(r1, r2) * np.hypot(r1.se, r2.se)
    with pytest.raises(ValueError, match="stream must be 1 or 2"):
        Setting(**base, stream=3)


def test_too_big_for_memory_is_refused_before_allocating(monkeypatch):
    from validation.protocol import simulator
    from validation.protocol.simulator import Setting, memory_needed, simulate

    s = Setting(model="network", sigma="tanh", target="tanh", alpha=1.0, alpha0=50.0, eta=1.0,
                lam=0.1, d=60)
    assert 0 < memory_needed(s, [60]) < 2**30
    monkeypatch.setattr(simulator, "_available_memory", lambda: 2**16)
    monkeypatch.setattr(simulator, "first_layer", lambda *a: pytest.fail("allocated"))
    with pytest.raises(MemoryError, match=r"needs about .* GiB .* available; lower d"):
        simulate(s, seeds=2)
