"""The K-group curve's faster pieces give the numbers of the plain code they replace, bit for bit
(docs/THEORY.md §10.8): the frame of a curve (``spiked.solve._frame``: the order column by
%-templates, float columns built as arrays; a route and step fields built in) is the DataFrame of
the results' ``to_dict()`` (with them inserted and set); the state unpacked by one itemgetter; the
sweep's predictor is the plain Lagrange predictor (re-implemented here as it was written); an
expression erf(a z + b) evaluated through the saturating erf is the expression's own function."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from asymptotics.coefficients.functions import get_function
from asymptotics.core.result import RESULT_COLUMNS, orders_json
from asymptotics.spiked import coefficients as C
from asymptotics.spiked import solve as S

#: a two-group, two-spike model (a multi-index target): the curve climbs the probes' ladder and
#: sweeps the other alphas
MODEL = dict(sigma="erf(z-1)", target="z1 + z1*z2", loadings=[[1.2, 0.3], [-0.4, 0.9]],
             bulk=[0.8, 1.1], fractions=[0.45, 0.55], overlaps=[[0.7, 0.1], [0.2, 0.6]],
             lam=0.01, beta=1.0)


def _plain_predict(seen, a, nn):
    """The predictor as first written (math.prod, generator tests, fancy indexing)."""
    if not seen:
        return None
    xs = [al for al, _ in seen]
    if len(set(xs)) < len(xs):
        return seen[-1][1]
    steps = [b - c for b, c in zip([*xs[1:], a], xs, strict=True)]
    if not (all(d * steps[-1] > 0 for d in steps)
            and all(abs(d) <= 2.0 * abs(e) for d, e in zip(steps[1:], steps, strict=False))):
        seen, xs = seen[-2:], xs[-2:]
    cs = [math.prod((a - aj) / (ai - aj) for j, aj in enumerate(xs) if j != i)
          for i, ai in enumerate(xs)]
    x0 = np.array(cs) @ np.array([v for _, v in seen])
    x0[nn] = np.maximum(x0[nn], 0.0)
    return x0


def test_the_predictor_is_the_plain_one_bit_for_bit():
    rng = np.random.default_rng(7)
    for K in (1, 2, 3):
        nn = S._nonneg(K)
        for _ in range(1500):
            m = int(rng.integers(1, 5))
            step = float(rng.choice([0.01, 0.05, 0.3])) * float(rng.choice([1.0, -1.0]))
            alphas = [1.0 + step * i * float(rng.choice([1.0, 1.0, 2.5, -1.0])) for i in range(m)]
            if rng.random() < 0.05:
                alphas[-1] = alphas[0]
            seen = [(al, rng.normal(size=K * K + K) * float(rng.choice([1e-3, 1.0, 1e2])))
                    for al in alphas]
            a = alphas[-1] + step * float(rng.choice([1.0, 3.0, -1.0]))
            want, got = _plain_predict(seen, a, nn), S._predict(seen, a, nn)
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("order", [
    None, {}, {"a": []}, {"a": [[]]}, {"a": [1.0, float("nan")]}, {"a": [1, 2.0]},
    {"a": [True]}, {"a%": [1e300, 1e-300, -0.0, 5e-324]}, {"a": [[1.0], 2.0]},
    {"a": [1.0, [2.0]]}, {'\u00e9"': [[1.5, 2.5], [3.5]]}, {"a": [float("inf")]},
    {"a": [1e308, 1e308]}, {1: [1.0]}, {"a": (1.0,)}, {"a": "x"}, {"a": [None]},
    {"Q1": [[0.1, 0.2], [0.3, 1 / 3]], "m": [2.0 / 3.0, -7e-17]}])
def test_the_order_strings_are_json_dumps(order):
    want = None if order is None else json.dumps(order)
    assert orders_json([order, order]) == [want, want]


def test_a_curve_frame_is_the_frame_of_its_results():
    """One curve's rows (probes and sweep): the frame equals the plain DataFrame of
    ``to_dict()`` (values, dtypes and every string), each order the unpacked state."""
    captured: list = []
    frame = S._frame

    def spy(results, *args):
        captured.append(results)
        return frame(results, *args)

    S._frame = spy
    try:
        df = S.risk_spiked_curve(np.linspace(0.3, 3.0, 14), progress=False, **MODEL)
    finally:
        S._frame = frame
    results = captured[0]
    plain = pd.DataFrame([res.to_dict() for res in results], columns=RESULT_COLUMNS)
    assert df.converged.all() and results[0].n_kappa > 0
    pd.testing.assert_frame_equal(df, plain, check_exact=True)
    assert list(df.order) == [json.dumps(res.order) for res in results]
    for res in results:
        flat = list(res.state)
        assert [x for v in res.order.values() for x in (
            [y for row in v for y in row] if isinstance(v[0], list) else v)] == flat
    # a route and fields (the curve entry's columns): the frame of inserting and setting them
    fields = dict(alpha0=16.0, eta=math.nan, steps=3, eta_schedule="[2.0, 8.0]", readout="pm1",
                  batch=None, extra="x")
    want = frame(results)
    want.insert(1, "route", "steps")
    for name, value in fields.items():
        want[name] = [value] * len(want) if value is None else value
    got = frame(results, "steps", fields)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.dtypes.equals(want.dtypes) and list(got.columns) == list(want.columns)
    empty = frame([], "steps", fields)
    assert list(empty.columns) == list(want.columns) and len(empty) == 0


@pytest.mark.parametrize("text", ["erf(z-1)", "erf(2*z+0.3)", "erf(z/sqrt(2))", "erf(3*z-2)"])
def test_an_affine_erf_is_the_expressions_own_function(text):
    fn = get_function(text)
    fast = C.fast(fn)
    assert fast is not fn and fast == fn
    z = np.random.default_rng(3).normal(size=(400, 97)) * 9.0
    z[0, :5] = (0.0, -0.0, 6.0, -6.0, 1e-300)
    assert np.array_equal(fast.f(z), fn.f(z)) and np.array_equal(fast(z), fn(z))


@pytest.mark.parametrize("text", ["erf(z**2)", "erf(z-1)+z", "tanh(z-1)", "erf(1)", "erf(-3*z)"])
def test_other_expressions_are_left_as_given(text):
    fn = get_function(text)
    assert C.fast(fn) is fn


def test_with_fields_is_dataclasses_replace():
    """Every field (compared or not) of ``with_fields`` is that of ``dataclasses.replace``; an
    unknown field is refused as replace refuses it."""
    from dataclasses import fields, replace

    res = S.risk_spiked(1.0, n_kappa=16, **MODEL)
    for changes in ({"n_kappa": 3, "quadrature_change": 0.1}, {"message": "m"},
                    {"risk": math.nan, "converged": False, "status": "max_iter"}, {}):
        got, want = res.with_fields(**changes), replace(res, **changes)
        assert type(got) is type(want) and got == want and got is not res
        for f in fields(want):
            assert getattr(got, f.name) is getattr(want, f.name)
    with pytest.raises(TypeError):
        res.with_fields(not_a_field=1)
    with pytest.raises(TypeError):
        replace(res, not_a_field=1)


@pytest.mark.parametrize("K,r,k", [(1, 1, 1), (2, 2, 2), (3, 3, 1), (4, 2, 2), (1, 3, 2)])
def test_the_state_unpacks_as_its_plain_slices(K, r, k):
    """``unpack_state`` (one itemgetter, from the array or its list) is the plain slicing of the
    state by ``_layout``, fresh lists every call; ``_v`` the (V1, V2) slice of ``sizes``."""
    from types import SimpleNamespace

    from asymptotics.spiked.kernels import sizes

    prob = SimpleNamespace(loadings=np.zeros((K, r)), k=k)
    o = sizes(K, r, k)
    x = np.random.default_rng(K * 100 + r * 10 + k).standard_normal(o[7])
    flat = x.tolist()
    plain = {n: [flat[j:j + c] for j in range(a, b, c)] if c else flat[a:b]
             for n, a, b, c in S._layout(K, r, k)}
    first, again = S.unpack_state(prob, x), S.unpack_state(prob, flat)
    assert first == plain and again == plain and list(first) == list(S.STATE_NAMES)
    assert all(type(v) is list for v in first.values())
    assert first["V1"] is not again["V1"] and first["V1"][0] is not again["V1"][0]
    got = S._v(prob, SimpleNamespace(state=tuple(flat)))
    assert np.array_equal(got, x[o[2]:o[4]]) and got.dtype == np.float64


def test_the_status_messages_are_the_listed_ones():
    """``Status.message`` reads one dict (not one built per call): every status has its text."""
    from asymptotics.equations.solver import _MESSAGES, Status

    assert Status.CONVERGED.message == "converged"
    assert Status(1).message.startswith("maximum number of iterations")
    assert {s.message for s in Status} == set(_MESSAGES.values())
    assert len({s.message for s in Status}) == len(Status)
