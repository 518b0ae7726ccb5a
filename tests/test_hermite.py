"""Hermite analysis (asymptotics.coefficients.hermite) against hand-computed expansions and Dandi
et al.'s (2023)
examples. Expected values are worked out by hand in the comments, not read from the code."""

import math

import numpy as np
import pytest
from scipy import integrate

from asymptotics.cli.curve import main as asymptotics_main
from asymptotics.coefficients.hermite import hermite_expansion, monomial_to_hermite
from asymptotics.coefficients.targets import parse_target, target_callable
from asymptotics.multiindex.staircase import staircase


def terms(text):
    return {t.alpha: t.coefficient for t in hermite_expansion(text).terms}


def test_product_is_he1_he1_at_degree_2():
    # z1 z2 = He1(z1) He1(z2): one term; C_2 = E[grad^2 g] = [[0, 1], [1, 0]], C_0 = C_1 = 0.
    ex = hermite_expansion("z1*z2")
    assert ex.exact and terms("z1*z2") == {(1, 1): 1.0}
    np.testing.assert_array_equal(ex.coefficient_tensor(2), [[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(ex.coefficient_tensor(1), [0.0, 0.0])
    assert ex.leap_index == 2


def test_cube_is_he3_plus_3_he1():
    # z^3 = He3 + 3 He1, so C_1 = E[3 z^2] = 3, C_3 = E[6] = 6; leap 1 (Dandi et al. 2023).
    ex = hermite_expansion("z1**3")
    assert terms("z1**3") == {(3,): 1.0, (1,): 3.0}
    assert ex.coefficient_tensor(1).tolist() == [3.0]
    assert ex.coefficient_tensor(3).item() == 6.0
    assert ex.leap_index == 1
    assert hermite_expansion("He3(z1)").leap_index == 3


def test_more_hand_expansions():
    # z^4 = He4 + 6 He2 + 3;  z1^2 z2 = (He2(z1) + 1) He1(z2).
    assert monomial_to_hermite(4) == ((4, 1), (2, 6), (0, 3))
    assert terms("z1**4") == {(4,): 1.0, (2,): 6.0, (0,): 3.0}
    assert terms("z1**2*z2") == {(2, 1): 1.0, (0, 1): 1.0}
    # C_3 of z1^2 z2: E[d^3 g / dz1 dz1 dz2] = 2 on the 3 orderings of (0, 0, 1), 0 elsewhere.
    C3 = hermite_expansion("z1**2*z2").coefficient_tensor(3)
    assert C3[0, 0, 1] == C3[0, 1, 0] == C3[1, 0, 0] == 2.0
    assert np.count_nonzero(C3) == 3
    # floats are read as exact decimals: 0.5 z1^2 = 0.5 He2 + 0.5
    assert terms("0.5*z1**2") == {(2,): 0.5, (0,): 0.5}


def test_leap_indices_of_the_issue():
    assert hermite_expansion("z1 + z1*z2 + z1*z2*z3").leap_index == 1
    assert hermite_expansion("z1*z2*z3*z4").leap_index == 4
    assert hermite_expansion("z1**2 - 1").leap_index == 2
    assert hermite_expansion("He2(z1)").leap_index == 2
    assert hermite_expansion("3").leap_index is None


def test_he_calls_match_their_polynomials():
    a, _ = parse_target("He4(z2) + He1(z1)")
    b, _ = parse_target("z2**4 - 6*z2**2 + 3 + z1")
    assert (a - b).expand() == 0


def test_hosvd_subspaces():
    # z1 z3 with k = 3: C_2 has rows e1, e3 -> subspace {theta1, theta3}; z1 + z2: span(e1+e2).
    ex = hermite_expansion("z1*z3")
    np.testing.assert_array_equal(ex.subspace(2), [[1, 0, 0], [0, 0, 1]])
    v = hermite_expansion("z1 + z2").subspace(1)
    assert v.shape == (1, 2)
    np.testing.assert_allclose(np.abs(v[0]), [1 / math.sqrt(2)] * 2, atol=1e-12)


def test_staircase_of_the_issue():
    sc = staircase(hermite_expansion("z1 + z1*z2 + z1*z2*z3"))
    assert len(sc.steps) == 3
    for t, basis in enumerate(sc.steps):
        np.testing.assert_allclose(basis, [np.eye(3)[t]], atol=1e-9)
    assert sc.never.shape[0] == 0


def test_staircase_stops_where_not_linearly_connected():
    # z1 z2 z3 z4: E[g z] = 0, nothing is ever learned with n ~ d.
    sc = staircase(hermite_expansion("z1*z2*z3*z4"))
    assert sc.steps == () and sc.never.shape[0] == 4
    # z1 + z2 z3: theta1 at step 1; given z1, E[g z2 | z1] = E[g z3 | z1] = 0: stuck.
    sc = staircase(hermite_expansion("z1 + z2*z3"))
    assert len(sc.steps) == 1
    np.testing.assert_allclose(sc.steps[0], [[1, 0, 0]], atol=1e-9)
    np.testing.assert_allclose(sc.never, [[0, 1, 0], [0, 0, 1]], atol=1e-9)
    # z2 + z2 z1: the order follows the connections, not the labels.
    sc = staircase(hermite_expansion("z2 + z2*z1"))
    np.testing.assert_allclose(np.vstack(sc.steps), [[0, 1], [1, 0]], atol=1e-9)
    # He2(z1): leap 2 -> nothing with n ~ d, theta1 with one step at n ~ d^2.
    sc = staircase(hermite_expansion("He2(z1)"))
    assert sc.steps == ()
    assert dict(sc.one_step)[1].shape[0] == 0 and dict(sc.one_step)[2].shape[0] == 1


def test_non_polynomial_by_quadrature():
    # tanh: C_1 = E[tanh'(z)], computed independently with scipy.integrate.quad.
    ref, _ = integrate.quad(lambda z: (1 - math.tanh(z) ** 2) * math.exp(-z * z / 2)
                            / math.sqrt(2 * math.pi), -40, 40)
    ex = hermite_expansion("tanh(z1)")
    assert not ex.exact and ex.leap_index == 1
    assert abs(ex.coefficient_tensor(1).item() - ref) < 1e-10
    assert all(t.alpha[0] % 2 == 1 for t in ex.terms)  # odd function: odd degrees only
    # |z|: C_1 = 0, C_2 = E|z|^3 - E|z| = 2 sqrt(2/pi) - sqrt(2/pi) = sqrt(2/pi); leap 2.
    ex = hermite_expansion("abs(z1)")
    assert ex.leap_index == 2
    assert abs(ex.coefficient_tensor(2).item() - math.sqrt(2 / math.pi)) < 3e-3


def test_target_callable():
    g, k = target_callable("z1 + z1*z2 + He2(z3)")
    Z = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    assert k == 3
    np.testing.assert_allclose(g(Z), [1 + 2 + 8, 0.5 - 0.5 - 1])


@pytest.mark.parametrize("text, leap", [("z1 + z1*z2 + z1*z2*z3", 1), ("z1*z2*z3*z4", 4),
                                        ("z1**2 - 1", 2)])
def test_cli_prints_leap_index_line(text, leap, capsys):
    assert asymptotics_main(["hermite", text]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"leap_index={leap}" in lines
    assert any(ln.startswith("expansion: g = ") for ln in lines)
    if leap == 1:
        assert "  step 1: learns theta1" in lines
        assert "  step 2: learns theta2" in lines
        assert "  step 3: learns theta3" in lines
    if leap == 4:
        assert "never_learned_with_n~d: theta1, theta2, theta3, theta4" in lines


@pytest.mark.parametrize("text, word", [("z1 +", "parse"), ("foo(z1)", "foo"),
                                        ("z1/0", "finite"), ("z1 + y", "y"),
                                        ("z1 + z", "either")])
def test_cli_bad_expressions_exit_2(text, word, capsys):
    assert asymptotics_main(["hermite", text]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error:") and word in err[0]
