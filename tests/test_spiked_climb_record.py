"""A K-group point's climb builds each rule's record from the first rule's fields
(``spiked.solve._climb_point``: ``solve_spiked(..., base=)``): the same record, field for field,
as a record built from scratch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.spiked import problem, risk_spiked, solve

KW = dict(sigma="tanh", target="z1*z2 + tanh(z1)", loadings=[[0.5, -0.3], [0.2, 0.6], [-0.4, 0.1]],
          bulk=[0.8, 1.1, 0.9], fractions=[0.3, 0.3, 0.4], overlaps=[[0.6, 0.1], [0.2, 0.7]],
          lam=0.01, beta=1.0)


def _same(a, b) -> bool:
    if a.__dict__.keys() != b.__dict__.keys():
        return False
    for k, x in a.__dict__.items():
        y = b.__dict__[k]
        if isinstance(x, float) and math.isnan(x):
            if not (isinstance(y, float) and math.isnan(y)):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


@pytest.mark.parametrize("p", [None, 3000.0])
def test_record_from_base_is_the_record(p) -> None:
    build = problem.spiked_builder(**KW, p=p)
    first = solve.solve_spiked(build(16, None), 1.5)
    for nk in (24, 36):
        prob = build(nk, None)
        fresh = solve.solve_spiked(prob, 1.5, x0=solve._v(prob, first))
        based = solve.solve_spiked(prob, 1.5, x0=solve._v(prob, first),
                                   base=dict(first.__dict__))
        assert _same(fresh, based)


def test_climbed_point_is_the_plain_record() -> None:
    res = risk_spiked(1.5, **KW, p=3000.0)
    again = solve.solve_spiked(problem.spiked_builder(**KW, p=3000.0)(res.n_kappa, None), 1.5)
    assert res.converged and res.n_kappa in (24, 36, 54)
    # every field but the solve's own (the warm start's iterations and residual, the ladder's
    # labels) as a record of that rule built from scratch
    skip = {"iterations", "residual", "state", "order", "risk", "quadrature_change", "n_kappa"}
    for k, x in again.__dict__.items():
        if k not in skip:
            y = res.__dict__[k]
            assert (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), k
    assert np.isclose(res.risk, again.risk, rtol=1e-8)
