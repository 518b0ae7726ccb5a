"""A point whose tensor ladder does not settle, at an r with no second (aligned) ladder, is NaN
with the first ladder's reason (it raised AttributeError: relu, z1 + z1*z2, a three-value
readout after three steps, r = 3, before r = 3 had the aligned ladder)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from asymptotics.equations.ladder import climb_ladders


@dataclass(frozen=True)
class _Res:
    risk: float
    converged: bool = True
    n_kappa: int | None = None
    quadrature_change: float = math.nan
    status: str = "converged"
    message: str = ""


def test_an_empty_second_ladder_keeps_the_first_ladders_reason():
    calls = []

    def solve_rule(rule, first):  # risks that oscillate: never settled
        calls.append(rule)
        return _Res(risk=1.0 + 0.1 * (-1) ** len(calls))

    res, index = climb_ladders(solve_rule, ((10, 16, 24), ()))
    assert index is None and calls == [10, 16, 24]
    assert math.isnan(res.risk) and not res.converged
    assert "quadrature not resolved" in res.message


def test_the_route_that_raised_is_nan_with_a_reason(monkeypatch):
    """The point that raised, with the r = 3 aligned ladder taken away (r = 4 has none): NaN
    with the tensor ladder's reason; with it (r = 2 and 3 have one) it settles there."""
    import asymptotics as A
    from asymptotics.equations import ladder as ladder_mod

    kw = dict(model="srf", sigma="relu", target="z1 + z1*z2", steps=3, alpha0=9.719,
              eta=(2.0, 4.0, 8.0), readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25}, beta=1.112,
              lam=0.01, p=1112.0)
    with monkeypatch.context() as m:
        m.setitem(ladder_mod.ALIGNED_LADDER, 3, ())
        res = A.risk(0.5, **kw)
    assert math.isnan(res.risk) and res.status == "max_iter"
    assert "quadrature not resolved" in res.message
    res = A.risk(0.5, **kw)
    assert res.converged and "aligned rule" in res.message
