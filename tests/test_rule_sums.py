"""Several rules' node sums in one pass (multiindex/compiled/rule_sums.py) against
``step_kernels._node_sums`` called once per rule (the path before), bit for bit; and a step's
state through them against the rule-at-a-time path (docs/THEORY.md §12.4)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import step_kernels as sk
from asymptotics.multiindex import steps
from asymptotics.multiindex.compiled import rule_sums as rs


def _arrays(n: int, r: int, K: int, m: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    e01 = rng.normal(size=(n, 1 + m))  # e0, e1 as the steps pass them: strided views
    return (rng.normal(size=(n, r)), rng.random((n, K)), rng.normal(size=(n, K)),
            rng.random((n, K)), e01[:, 0], e01[:, 1:], rng.random(n))


@pytest.mark.parametrize(("n", "r", "K", "m"), [(40_000, 3, 3, 2), (1000, 2, 2, 1), (129, 1, 1, 3),
                                                (128, 3, 4, 0), (1, 2, 3, 1)])
def test_rules_sums_are_node_sums_per_rule(n: int, r: int, K: int, m: int) -> None:
    U, m1, m2, v, e0, e1, e2 = _arrays(n, r, K, m, n + K)
    rng = np.random.default_rng(n)
    rules = [(rng.random(n) / n, None)]
    for frac in (0.5, 0.13, 0.0):
        idx = np.flatnonzero(rng.random(n) < frac)
        rules.append((rng.random(len(idx)), idx))
    rules.append((rng.random(n), None))
    got = rs.rules_sums(U, rules, m1, m2, v, e0, e1, e2)
    if got is None:  # the kernel's compilation queued (cold start): nothing to compare yet
        pytest.skip("rule_sums not compiled")
    for (w, idx), sums in zip(rules, got, strict=True):
        flat = sk._node_sums(U, w, m1, m2, v, e0, e1, e2,
                             np.zeros(0, np.int64) if idx is None else idx)
        np.testing.assert_array_equal(np.concatenate([x.ravel() for x in sums]), flat)


def test_rules_sums_refuse_rows_out_of_order() -> None:
    U, m1, m2, v, e0, e1, e2 = _arrays(300, 2, 2, 1, 3)
    assert rs.rules_sums(U, [(np.ones(2), np.array([5, 3]))], m1, m2, v, e0, e1, e2) is None
    assert rs.rules_sums(U, [(np.ones(7), None)], m1, m2, v, e0, e1, e2) is None


@pytest.mark.parametrize("setting", [
    dict(sigma="softplus", target="relu", readout={1.0: 0.26, -1.0: 0.47, 1.18: 0.27},
         alpha0=16.0, eta=(9.6, 15.49, 3.37)),
    dict(sigma="softplus", target="z1 + 0.5*z1**2", readout={1.0: 0.39, -1.0: 0.4, 2.01: 0.21},
         alpha0=16.0, eta=(10.57, 6.29, 13.23)),
])
def test_mapping_through_one_pass_is_the_rule_at_a_time(setting: dict, monkeypatch) -> None:
    """Three steps whose last lattice (>= 20000 nodes; its checks a coarsened axis, or a weak
    axis' pair of sub-rules) is summed in one pass: the states of the rule-at-a-time path."""
    kw = dict(setting, steps=3)
    steps.clear_cache()
    one = steps.steps_mapping(kw.pop("sigma"), kw.pop("target"), **kw)
    steps.clear_cache()
    monkeypatch.setattr(rs, "rules_sums", lambda *a: None)  # the path before
    kw = dict(setting, steps=3)
    two = steps.steps_mapping(kw.pop("sigma"), kw.pop("target"), **kw)
    steps.clear_cache()
    for x, y in zip(one.states, two.states, strict=True):
        for a, b in ((x.a, y.a), (x.L @ x.L.T, y.L @ y.L.T), (x.c, y.c)):
            np.testing.assert_array_equal(a, b)
