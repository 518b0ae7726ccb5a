"""A K-group curve's rows come from :class:`asymptotics.spiked.solve._Rows`, which builds each
record from the first one's fields instead of the dataclass' ``__init__`` (docs/THEORY.md §10.8):
every row must be the record ``solve_spiked`` returns at the same alpha, start and rule, field
for field (the compared fields and the raw ``state`` and ``order``), bit for bit; on one and
two groups, at p = infinity and finite p, with and without a warm start, at lam = 0 (the
ridgeless limit's own record) and where the equations fail."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from asymptotics.equations.solver import SolverConfig
from asymptotics.spiked import solve as S
from asymptotics.spiked.problem import spiked_builder

TWO = dict(sigma="erf(z-1)", target="z1 + z1*z2", loadings=[[1.2, 0.3], [-0.4, 0.9]],
           bulk=[0.8, 1.1], fractions=[0.45, 0.55], overlaps=[[0.7, 0.1], [0.2, 0.6]],
           lam=0.01, beta=1.0)
ONE = dict(sigma="tanh", target="tanh", loadings=[[0.8]], bulk=[1.0], fractions=[1.0],
           overlaps=[[0.6]], lam=0.1, beta=2.0)


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert list(a.__dict__) == list(b.__dict__)  # (the fields in the constructor's order)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, float) and math.isnan(x):
            assert isinstance(y, float) and math.isnan(y), f.name
        elif isinstance(x, tuple | list | dict):  # (repr: exact for floats, and nan == nan)
            assert type(x) is type(y) and repr(x) == repr(y), f.name
        else:
            assert type(x) is type(y) and x == y, f.name


@pytest.mark.parametrize("model, changes, nk", [
    (TWO, {}, 24), (TWO, {"p": 400.0}, 24), (TWO, {"lam": 0.0}, 16), (ONE, {}, None),
    (ONE, {"lam": 0.0, "beta": 0.5}, None)])
def test_each_row_is_solve_spikeds_record(model, changes, nk):
    prob = spiked_builder(**{**model, **changes})(nk, None)
    solver = SolverConfig()
    rows = S._Rows(prob, solver)
    rule = (nk or 0, 3e-4)
    x0 = None
    for a in (0.3, 0.9, 1.7, 4.0):
        want = S.solve_spiked(prob, a, solver, x0=x0, rule=rule)
        got = rows.solve(a, x0, rule)
        _same(got, want)
        if want.converged:
            x0 = S._v(prob, want) * 1.01


def test_a_failed_solve_is_the_same_record():
    """max_iter = 1: no point converges; the row says so as solve_spiked does."""
    prob = spiked_builder(**TWO)(16, None)
    solver = SolverConfig(max_iter=1)
    rows = S._Rows(prob, solver)
    for a in (0.5, 2.0):
        want = S.solve_spiked(prob, a, solver, rule=(16, 0.1))
        assert not want.converged and math.isnan(want.risk)
        _same(rows.solve(a, None, (16, 0.1)), want)


def test_the_curve_is_its_rows():
    """The curve's frame row by row against solve_spiked from the sweep's own starts."""
    alphas = list(np.linspace(0.3, 3.0, 6))
    df = S.risk_spiked_curve(alphas, n_kappa=24, progress=False, **TWO)
    prob = spiked_builder(**TWO)(24, None)
    seen: list = []
    nn = S._nonneg(2)
    for a, (_, row) in zip(alphas, df.iterrows(), strict=True):
        res = S.solve_spiked(prob, a, x0=S._predict(seen, a, nn) if seen else None,
                             rule=(0, math.nan))
        want = res.to_dict()
        for k, v in want.items():
            assert (v == row[k]) or (isinstance(v, float) and math.isnan(v)
                                     and math.isnan(row[k])), k
        if res.converged:
            seen = [*seen, (a, S._v(prob, res))][-S.PREDICTOR_POINTS:]
