"""No silent wrong numbers: caches keyed on what they compute, the interpolation peak decided
from the equations, quadrature of user callables checked, numba's cache outside the package.

Independent references: a fresh Python process (no shared cache) for user callables; the
registered function of the same formula; the lam -> 0+ growth of the regularised risk at the
peak; the location of a kink given by hand."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients.callables import QuadratureWarning, find_kinks, quadrature_error
from asymptotics.coefficients.functions import Function

ROOT = Path(__file__).resolve().parent.parent

# user callables that share one name ("<lambda>"), defined from source so that a fresh process
# can define exactly the same functions
SOURCES = ["lambda z: np.tanh(z)", "lambda z: np.maximum(z, 0)", "lambda z: np.sin(3 * z)"]
CASES = [  # (model, p)
    ("srf", None), ("network", None), ("rf", None), ("srf", 1000.0), ("network", 1000.0),
]
KW = dict(alpha0=20.0, lam=0.01, beta=2.0)


def _values(sigma, target) -> list[float]:
    out = []
    for model, p in CASES:
        eta = 0.0 if model == "rf" else 3.0
        out.append(A.risk(2.0, sigma=sigma, target=target, eta=eta, model=model, p=p,
                          **KW).risk)
    return out


def _both_roles(f) -> list[float]:
    return _values(f, "tanh") + _values("relu", f)


def _fresh(src: str) -> list[float]:
    code = textwrap.dedent(f"""
        import json, numpy as np, sys
        sys.path.insert(0, {str(ROOT)!r})
        sys.path.insert(0, {str(ROOT / "tests")!r})
        import test_silent_numbers as t
        print(json.dumps(t._both_roles({src})))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_callables_of_one_name_never_share_a_cache():
    """As sigma and as target, every model and width: each callable, computed after the others
    in this process (in both orders), equals a fresh process to 1e-12."""
    funcs = [eval(src, {"np": np}) for src in SOURCES]  # noqa: S307 - the test's own sources
    assert len({f.__name__ for f in funcs}) == 1
    here = [_both_roles(f) for f in funcs + funcs[::-1]]
    for k, src in enumerate(SOURCES):
        fresh = _fresh(src)
        for got in (here[k], here[len(SOURCES) * 2 - 1 - k]):
            assert np.all(np.isfinite(got)), got
            np.testing.assert_allclose(got, fresh, rtol=1e-12, atol=0)


def test_a_closure_whose_variable_changed_is_a_new_function():
    scale = [1.0]

    def g(z):
        return np.tanh(scale[0] * z)

    r1 = A.risk(2.0, sigma=g, model="srf").risk
    scale[0] = 2.0
    r2 = A.risk(2.0, sigma=g, model="srf").risk
    assert r2 == pytest.approx(A.risk(2.0, sigma="tanh(2*z)", model="srf").risk, rel=1e-9)
    assert abs(r1 - r2) > 1e-3


@pytest.mark.parametrize("model", ["srf", "network"])
def test_a_kinked_callable_equals_its_registered_function(model):
    for lam_f, name in ((lambda z: np.maximum(z, 0), "relu"), (lambda z: np.abs(z), "abs")):
        got = A.risk(2.0, sigma=lam_f, target="sin", model=model, alpha0=20, eta=3, beta=2).risk
        ref = A.risk(2.0, sigma=name, target="sin", model=model, alpha0=20, eta=3, beta=2).risk
        assert got == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("f,kinks", [
    (lambda z: np.maximum(z, 0), [0.0]),
    (lambda z: np.abs(z - 0.3), [0.3]),
    (lambda z: np.sign(z + 1.234567), [-1.234567]),
    (lambda z: np.where(z > 0.5, z**2, 0.25 * z), [0.5]),
    (lambda z: np.maximum(z, 0.1 * z) + np.maximum(z - 2.0, 0), [0.0, 2.0]),
    (lambda z: np.tanh(z), []),
    (lambda z: z**3 - 3 * z, []),
])
def test_kinks_of_callables_are_located(f, kinks):
    np.testing.assert_allclose(find_kinks(f), kinks, atol=1e-9)


def test_unresolvable_quadrature_warns_with_the_fix():
    with pytest.warns(QuadratureWarning, match="from_callable"):
        Function.from_callable(lambda z: np.sin(300 * z))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn = Function.from_callable(lambda z: np.maximum(z, 0))
        assert quadrature_error(fn) < 1e-8


@pytest.mark.parametrize("text", ["tanh(4*z)", "1/(1 + z**2)", "tanh(2*z) + 0.1*z**2"])
def test_steep_smooth_functions_are_refined_until_resolved(text):
    """Gauss-Hermite alone misses these by 1e-6 or more; the refined rule must agree with the
    reference one, for an expression and for the same formula as a callable."""
    import sympy as sp

    from asymptotics.coefficients.callables import REFINE_POINTS
    from asymptotics.coefficients.functions import to_sympy

    expr, symbols = to_sympy(text)
    f = sp.lambdify(symbols["z"], expr, "numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fn in (A.get_function(text), Function.from_callable(f)):
            assert set(REFINE_POINTS) <= set(fn.kinks)
            assert quadrature_error(fn) <= 1e-8


def test_scalar_only_callable_is_a_clear_error():
    with pytest.raises(ValueError, match="numpy arrays"):
        A.risk(2.0, sigma=math.tanh)


# ------------------------------------------------------------------------------------------------
# the interpolation peak of ridgeless regression

PEAK = [  # (sigma, beta, eta, model): many never used by another test
    (s, b, e, m)
    for s in ("tanh", "relu", "erf", "sigmoid", "softplus", "he3", "sin")
    for b, e, m in ((1.0, 0.0, "srf"), (0.3, 1.0, "srf"), (2.5, 2.0, "srf"),
                    (1.0, 1.0, "network"), (0.7, 0.5, "network"))
]


@pytest.mark.parametrize("sigma,beta,eta,model", PEAK)
def test_interpolation_peak_is_divergent_for_every_setting(sigma, beta, eta, model):
    kw = dict(sigma=sigma, target="tanh", alpha0=2.0, eta=eta, beta=beta, model=model)
    r = A.risk(beta, lam=0.0, **kw)
    assert not r.converged and math.isnan(r.risk) and r.status == "diverged", r
    with pytest.raises(A.ConvergenceError, match="diverg"):
        A.risk(beta, lam=0.0, strict=True, **kw)
    # independent of the verdict: the regularised risk grows like lam^(-1/2) there
    r4, r6 = (A.risk(beta, lam=lam, **kw).risk for lam in (1e-4, 1e-6))
    assert r6 > 3 * r4


def test_affine_sigma_peaks_where_the_features_lose_rank():
    # sigma linear: features of rank min(p, d), the peak at alpha = min(beta, 1)
    r = A.risk(1.0, sigma="linear", lam=0.0, beta=2.0, model="srf")
    assert r.status == "diverged"
    r = A.risk(0.5, sigma="linear", lam=0.0, beta=0.5, model="srf")
    assert r.status == "diverged"


@pytest.mark.parametrize("sigma,beta,alpha", [("relu", 1.0, 2.0), ("erf", 2.0, 3.0),
                                               ("sigmoid", 0.5, 0.25)])
def test_ridgeless_away_from_the_peak_is_the_lam_limit(sigma, beta, alpha):
    kw = dict(sigma=sigma, target="tanh", alpha0=2.0, eta=1.0, beta=beta, model="srf")
    r0 = A.risk(alpha, lam=0.0, **kw)
    assert r0.converged
    r7, r8 = A.risk(alpha, lam=1e-7, **kw).risk, A.risk(alpha, lam=1e-8, **kw).risk
    assert r0.risk == pytest.approx(r8 + (r8 - r7) / 9, rel=1e-5)


# ------------------------------------------------------------------------------------------------
# numba's cache


def test_kernels_are_cached_outside_the_package(tmp_path):
    code = ("import asymptotics.coefficients.quadrature as q\n"
            "import asymptotics.equations.fixed_point as f\n"
            "import validation.protocol.kernels as k\n"
            "for d in (q.weighted_moments, f.conjugates, k.tanh_features):\n"
            "    print(d._cache.cache_path)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    paths = [Path(line) for line in run.stdout.split()]
    assert len(paths) == 3
    for p in paths:
        assert p.is_relative_to(tmp_path / "giantstep" / "numba"), p
    # NUMBA_CACHE_DIR keeps its meaning
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "explicit")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert all(Path(line).is_relative_to(tmp_path / "explicit") for line in run.stdout.split())


@pytest.mark.slow
def test_install_uninstall_reinstall_round_trip(tmp_path):
    """A non-editable install, one compiled call, uninstall, editable install: nothing is left
    in site-packages and the editable install imports the source tree."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    def run(*args: str, cwd: Path = tmp_path) -> str:
        out = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd,
                             timeout=1800)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout

    run(py, "-m", "pip", "install", "-q", "--no-deps", str(ROOT))
    site = Path(run(py, "-c", "import asymptotics, os; print(os.path.dirname(asymptotics.__file__))"
                    ).strip())
    assert site != ROOT / "asymptotics"
    run(py, "-c", "import asymptotics; print(asymptotics.risk(2.0).risk)")
    leftovers = [p for p in site.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert leftovers == []
    assert any((tmp_path / "cache" / "giantstep" / "numba").rglob("*.nbi"))
    run(py, "-m", "pip", "uninstall", "-y", "-q", "giantstep")
    assert not site.exists()
    run(py, "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT))
    out = run(py, "-c", "import asymptotics; print(asymptotics.__file__, asymptotics.risk)")
    assert str(ROOT) in out


def test_a_failed_optimal_search_is_nan_not_a_point_at_some_lam():
    r = A.risk(2.0, lam="optimal", model="srf", solver=A.SolverConfig(max_iter=2))
    assert not r.converged and math.isnan(r.risk) and math.isnan(r.lam)
    assert "optimal lam did not converge" in r.message
    with pytest.raises(A.ConvergenceError, match="no converged optimum"):
        A.risk(2.0, lam="optimal", model="srf", solver=A.SolverConfig(max_iter=2), strict=True)


def test_an_unknown_measure_kind_is_an_error_not_atoms():
    import numpy as np

    from asymptotics.measures.spectral import SpectralMeasure, measure_moments

    with pytest.raises(ValueError, match="kind must be one of"):
        SpectralMeasure("atom", 1.0, 1.0, np.ones(3), np.ones(3), np.ones(3))
    e = np.zeros(1)
    out = measure_moments(9, 1.0, 1.0, np.ones(3), np.ones(3), np.ones(3), e, 1.0, 1.0)
    assert np.all(np.isnan(out))
