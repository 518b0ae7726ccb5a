"""Quadrature and cGET coefficients against closed forms (THEORY.md §2, §4)."""

import math

import numpy as np
import pytest
from scipy.special import erf
from scipy.stats import norm

from asymptotics.coefficients.cget import conditional_coefficients, ge_coefficients
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.quadrature import gaussian_moments

B = np.array([-2.5, -0.7, 0.0, 0.3, 1.9, 6.0])
C = np.array([0.2, 1.2, 1.0, 1.2, 2.5, 0.9])


def closed_forms(name):
    b, c = B, C
    if name == "relu":
        a = b / c
        return (b * norm.cdf(a) + c * norm.pdf(a), c * norm.cdf(a),
                (b * b + c * c) * norm.cdf(a) + b * c * norm.pdf(a))
    if name == "sign":
        return erf(b / (c * math.sqrt(2))), 2 * norm.pdf(b / c), np.ones_like(b)
    if name == "erf":
        s = np.sqrt(1 + 2 * c * c)
        e1 = c * 2 / math.sqrt(math.pi) * np.exp(-b * b / (1 + 2 * c * c)) / s
        return erf(b / s), e1, None
    if name == "linear":
        return b, c, b * b + c * c
    raise KeyError(name)


@pytest.mark.parametrize("name,tol", [("erf", 1e-10), ("linear", 1e-10), ("relu", 1e-6),
                                      ("sign", 1e-6)])
def test_gaussian_moments_closed_forms(name, tol):
    m = gaussian_moments(get_function(name), B, C)
    for k, ref in enumerate(closed_forms(name)):
        if ref is not None:
            np.testing.assert_allclose(m[:, k], ref, atol=tol, rtol=0)


def test_kinked_quadrature_reaches_machine_precision():
    m = gaussian_moments(get_function("relu"), B, C)
    np.testing.assert_allclose(m[:, 1], closed_forms("relu")[1], atol=1e-12, rtol=0)


def test_ge_coefficients_relu_closed_form():
    k = ge_coefficients("relu", "relu")
    assert k.mu0 == pytest.approx(1 / math.sqrt(2 * math.pi), abs=1e-13)
    assert k.mu1 == pytest.approx(0.5, abs=1e-13)
    assert k.mu_star**2 == pytest.approx(0.5 - 1 / (2 * math.pi) - 0.25, abs=1e-12)
    assert k.dmu1 == pytest.approx(0.5, abs=1e-12)  # E sigma' = P(z > 0)
    assert k.c1 == pytest.approx(1 / math.sqrt(2 * math.pi), abs=1e-12)  # E z 1{z>0}
    assert k.s2 == pytest.approx(0.25, abs=1e-12)


def test_ge_coefficients_hermite_targets():
    k = ge_coefficients("he3", "he2")
    assert k.mu0 == pytest.approx(0, abs=1e-12) and k.mu1 == pytest.approx(0, abs=1e-12)
    assert k.mu_star**2 == pytest.approx(6.0, rel=1e-12)  # E He3^2 = 3!
    assert k.mu2_star == pytest.approx(2.0, rel=1e-12)  # E He2^2 = 2!
    assert k.mu0_star == pytest.approx(0, abs=1e-12)


def test_conditional_coefficients_closed_forms():
    r, c, gamma = 0.8, 1.3, 0.6
    k = conditional_coefficients("erf", "sign", r=r, c=c, gamma=gamma)
    kap = k.kappa
    s = math.sqrt(1 + 2 * c)
    np.testing.assert_allclose(k.mu0, erf(r * kap / s), atol=1e-12)
    # mu1(k) = E[erf(r k + sqrt(c) z) z]/sqrt(c) = E erf'(.) (Stein)
    np.testing.assert_allclose(k.mu1, 2 / math.sqrt(math.pi) * np.exp(-(r * kap) ** 2 / s**2) / s,
                               atol=1e-12)
    rho = math.sqrt(1 - gamma**2)
    np.testing.assert_allclose(k.h, erf(gamma * kap / (rho * math.sqrt(2))), atol=1e-9)
    np.testing.assert_allclose(k.h2, 1.0, atol=1e-12)
    np.testing.assert_allclose(k.h1, 2 * norm.pdf(gamma * kap / rho), atol=1e-9)
    assert abs(k.weights.sum() - 1) < 1e-13


def test_expression_parser_and_kinks():
    f = get_function("relu(z - 1) + 0.5*tanh(2*z)")
    assert f.kinks == (1.0,)
    z = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(f(z), np.maximum(z - 1, 0) + 0.5 * np.tanh(2 * z))
    np.testing.assert_allclose(f.derivative(z), (z > 1) + 1 / np.cosh(2 * z) ** 2)


@pytest.mark.parametrize("bad", ["__import__('os')", "z.real", "open(z)", "lambda: 1", "y + 1",
                                 "tanh(z, 2)", ""])
def test_expression_parser_rejects(bad):
    with pytest.raises(ValueError):
        get_function(bad)


def test_unknown_name_lists_registry():
    with pytest.raises(ValueError, match="registered names are"):
        get_function("swish")


def test_user_callable_returning_nan_is_rejected():
    with pytest.raises(ValueError, match="non-finite"):
        get_function(lambda z: np.where(z > 3, np.nan, z))


def test_user_callable_derivative_by_finite_differences():
    f = get_function(lambda z: np.tanh(z) + 0.1 * z**3)
    z = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(f.derivative(z), 1 / np.cosh(z) ** 2 + 0.3 * z**2, atol=1e-9)
