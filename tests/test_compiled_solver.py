"""The compiled solver (asymptotics.equations.solver_kernels, asymptotics.api.grid) against the
Python path.

The Python orchestration of asymptotics.equations.solver + asymptotics.api.risk is an independent
implementation of the same algorithm (kept as ``engine="python"``); both must give the same
points: the same convergence verdict and |dR| <= 1e-10. The optimal-lam search is checked
against a dense brute-force scan of the Python path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import asymptotics as A
from asymptotics.api.grid import optimal_eta, optimal_lam, risk_grid

SIGMAS = ("tanh", "erf", "relu")
TARGETS = ("tanh", "sin", "relu", "he2")
ALPHAS = [0.2, 1.0, 2.5, 5.0]


def _both(alphas, **kw):
    fast = A.risk_curve(alphas, progress=False, engine="compiled", **kw)
    slow = A.risk_curve(alphas, progress=False, engine="python", **kw)
    return fast, slow


def _same(fast, slow, tol=1e-10):
    assert list(fast.columns) == list(slow.columns)
    assert (fast.converged.to_numpy() == slow.converged.to_numpy()).all()
    conv = slow.converged.to_numpy()
    dr = np.abs(fast.risk.to_numpy()[conv] - slow.risk.to_numpy()[conv])
    assert dr.size == 0 or dr.max() <= tol
    assert np.isnan(fast.risk.to_numpy()[~conv]).all()


@pytest.mark.parametrize("sigma,target", list(itertools.product(SIGMAS, TARGETS)))
def test_matrix_settings_identical(sigma, target):
    """Every (beta, alpha0, eta, lam) of the validation matrix, its four alphas."""
    for beta, alpha0, eta, lam in itertools.product((0.5, 1.0, 2.0), (0.5, 2.0, 20.0),
                                                    (0.0, 1.0, 3.0), (0.01, 0.1)):
        fast, slow = _both(ALPHAS, sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                           beta=beta)
        assert slow.converged.all()
        _same(fast, slow)


@pytest.mark.parametrize("n_points", [
    8, pytest.param(120, marks=pytest.mark.slow)])  # the full fuzz: ~200 CPU-s, slow suite
def test_fuzzed_points_identical(n_points):
    rng = np.random.default_rng(17)
    names = ("tanh", "erf", "relu", "sign", "sin", "he2", "softplus", "sigmoid")
    n_conv = 0
    for _ in range(n_points):
        kw = dict(sigma=str(rng.choice(names)), target=str(rng.choice(names)),
                  alpha0=float(10 ** rng.uniform(-0.7, 1.7)), eta=float(rng.uniform(0, 5)),
                  lam=float(10 ** rng.uniform(-4, 1)), beta=float(10 ** rng.uniform(-0.7, 0.7)),
                  delta=float(rng.uniform(0, 1)))
        alphas = np.sort(10 ** rng.uniform(-1.3, 1.3, size=3))
        fast, slow = _both(alphas, **kw)
        _same(fast, slow)
        n_conv += int(slow.converged.sum())
        a = float(alphas[1])
        pf = A.risk(a, engine="compiled", **kw)
        ps = A.risk(a, engine="python", **kw)
        assert pf.converged == ps.converged
        if ps.converged:
            assert abs(pf.risk - ps.risk) <= 1e-10
    assert n_conv >= 0.9 * 3 * n_points  # mostly solvable: the check has teeth


def test_unconverged_is_nan_in_both():
    kw = dict(sigma="tanh", target="tanh", alpha0=2, eta=1, lam=0.01,
              solver=A.SolverConfig(max_iter=2))
    fast, slow = _both([1.0, 2.0], **kw)
    assert not fast.converged.any() and not slow.converged.any()
    assert np.isnan(fast.risk).all()
    assert set(fast.status) == {"max_iter"}


def test_grid_equals_curves_and_threads():
    alphas = np.linspace(0.3, 4, 7)
    g1 = risk_grid(alpha=alphas, eta=[0.0, 0.5, 2.0], beta=[0.5, 2.0], alpha0=2, lam=0.05,
                   n_jobs=1)
    g2 = risk_grid(alpha=alphas, eta=[0.0, 0.5, 2.0], beta=[0.5, 2.0], alpha0=2, lam=0.05,
                   n_jobs=2)
    assert g1.equals(g2)
    assert len(g1) == 7 * 3 * 2
    for (eta, beta), sub in g1.groupby(["eta", "beta"], sort=False):
        ref = A.risk_curve(alphas, sigma="tanh", target="tanh", alpha0=2, eta=eta, lam=0.05,
                           beta=beta, progress=False, engine="python")
        np.testing.assert_allclose(sub.risk.to_numpy(), ref.risk.to_numpy(), rtol=0, atol=1e-10)
        np.testing.assert_array_equal(sub.alpha.to_numpy(), alphas)


def test_grid_bad_input():
    with pytest.raises(ValueError, match="alpha0 must be > 0"):
        risk_grid(alpha=[1.0], alpha0=[1.0, -1.0])
    with pytest.raises(ValueError, match="at least one value"):
        risk_grid(alpha=[])


def test_optimal_lam_matches_brute_force():
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=1.0)
    alphas = [0.5, 2.0, 5.0]
    opt = optimal_lam(alphas, **kw)
    assert opt.interior.all() and opt.converged.all()
    lams = np.logspace(-3, 1, 400)
    for i, a in enumerate(alphas):
        scan = np.array([A.risk(a, lam=float(lm), engine="python", **kw).risk for lm in lams])
        j = int(np.argmin(scan))
        # the search finds a risk no worse than the dense scan, at a lam next to its argmin
        assert opt.risk[i] <= scan[j] + 1e-12
        assert abs(np.log10(opt.lam[i]) - np.log10(lams[j])) <= 2 * (4 / 399)
        # and the reported risk is the risk at the reported lam
        ref = A.risk(a, lam=float(opt.lam[i]), engine="python", **kw)
        assert abs(ref.risk - opt.risk[i]) <= 1e-10


def test_optimal_lam_at_bound_is_flagged():
    # with lam restricted to [1, 10] the risk increases with lam: the minimum is the lower bound
    opt = optimal_lam([2.0], sigma="tanh", target="tanh", alpha0=2.0, eta=1.0,
                      lam_bounds=(1.0, 10.0))
    assert not opt.interior[0]
    assert opt.lam[0] == pytest.approx(1.0)
    assert "bound" in opt.message[0]


def test_risk_curve_optimal_options():
    df = A.risk_curve([1.0, 3.0], sigma="tanh", target="tanh", alpha0=2.0, eta=1.0,
                      lam="optimal", model="srf")
    assert {"lam", "interior"} <= set(df.columns) and df.converged.all()
    de = A.risk_curve([1.0, 3.0], sigma="tanh", target="tanh", alpha0=2.0, eta="optimal",
                      lam=0.01, model="srf")
    assert de.converged.all() and (de.eta > 0).all()
    for a, e, r in zip(de.alpha, de.eta, de.risk, strict=True):
        # no eta on a coarse scan beats the optimum
        scan = [A.risk(a, sigma="tanh", target="tanh", alpha0=2.0, eta=float(x), lam=0.01,
                       model="srf").risk
                for x in np.linspace(0, 5, 41)]
        assert r <= min(scan) + 1e-9
        assert abs(A.risk(a, sigma="tanh", target="tanh", alpha0=2.0, eta=e, lam=0.01,
                          model="srf").risk
                   - r) <= 1e-10
    with pytest.raises(ValueError, match="'optimal'"):
        A.risk_curve([1.0], sigma="tanh", target="tanh", alpha0=2, eta=1, lam="best", model="srf")
    with pytest.raises(ValueError, match="both"):
        A.risk_curve([1.0], sigma="tanh", target="tanh", alpha0=2, eta="optimal",
                     lam="optimal", model="srf")
    with pytest.raises(ValueError, match="engine"):
        A.risk_curve([1.0], sigma="tanh", target="tanh", alpha0=2, eta=1, lam=0.1,
                     engine="fortran", model="srf")


def test_optimal_eta_bounds_checked():
    with pytest.raises(ValueError, match="eta bounds"):
        optimal_eta([1.0], eta_bounds=(2.0, 1.0))


def test_risk_point_optimal():
    r = A.risk(2.0, sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam="optimal", model="srf")
    ref = optimal_lam([2.0], sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, model="srf")
    assert r.converged and r.lam == pytest.approx(float(ref.lam[0]), abs=0)
    assert r.risk == pytest.approx(float(ref.risk[0]), abs=1e-12)


def test_cli_lam_optimal(tmp_path, capsys):
    import io

    import pandas as pd

    from asymptotics.cli.curve import main

    assert main(["curve", "--csv", "--lam", "optimal", "--alpha", "1,2", "--quiet"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    ref = optimal_lam([1.0, 2.0], sigma="tanh", target="tanh", alpha0=2.0, eta=1.0)
    np.testing.assert_allclose(df.lam, ref.lam, rtol=1e-10)
    assert df.interior.all()
    with pytest.raises(SystemExit) as err:
        main(["curve", "--lam", "best"])
    assert err.value.code == 2
    assert "optimal" in capsys.readouterr().err


@pytest.mark.parametrize("model,p", [("srf", 300.0), ("srf", 5000.0), ("network", None),
                                     ("network", 1000.0)])
def test_general_equations_identical(model, p):
    """The compiled solver covers the general equations: the network theory's F_vt channel and
    the finite-width mean channel give the same points on both engines."""
    n = 0
    for sigma, target in [("tanh", "tanh"), ("relu", "sin"), ("erf", "he2")]:
        for beta, alpha0, eta in [(0.5, 20.0, 1.0), (1.0, 2.0, 3.0), (2.0, 0.5, 0.3)]:
            fast, slow = _both(ALPHAS, sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                               lam=0.05, beta=beta, model=model, p=p)
            _same(fast, slow)
            n += int(slow.converged.sum())
    assert n >= 30
