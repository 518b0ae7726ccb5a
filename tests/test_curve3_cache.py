"""The probes' cache of a K-group curve (docs/THEORY.md §10.8, ``spiked.problem.PROBES_CACHE``):
a curve asked again skips its probes' climbs and is the curve computed from nothing, bit for bit;
any change of what the climbs depend on (a parameter, even -0.0 for 0.0, the solver, the alphas,
the policy) misses; ``clear_cache`` (the one the benchmarks call) forgets it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from asymptotics.equations import ladder as L
from asymptotics.equations.solver import SolverConfig
from asymptotics.spiked import problem as P
from asymptotics.spiked import solve as S

#: a two-group, two-spike model (a multi-index target): the curve climbs the probes' ladder
MODEL = dict(sigma="erf(z-1)", target="z1 + z1*z2", loadings=[[1.2, 0.3], [-0.4, 0.9]],
             bulk=[0.8, 1.1], fractions=[0.45, 0.55], overlaps=[[0.7, 0.1], [0.2, 0.6]],
             lam=0.01, beta=1.0)
ALPHAS = np.linspace(0.3, 3.0, 14)


@pytest.fixture
def climbs(monkeypatch):
    """The alphas at which a point climbs the ladder (each call of ``_climb_point``)."""
    seen: list = []
    orig = S._climb_point

    def counted(problem, alpha, *args, **kw):
        seen.append(alpha)
        return orig(problem, alpha, *args, **kw)

    monkeypatch.setattr(S, "_climb_point", counted)
    P.clear_cache()
    yield seen
    P.clear_cache()


def curve(**changes):
    kw = dict(MODEL, **changes)
    alphas = kw.pop("alphas", ALPHAS)
    return S.risk_spiked_curve(alphas, progress=False, **kw)


def test_a_curve_asked_again_skips_its_probes_and_is_the_same_bit_for_bit(climbs):
    first = curve()
    n = len(climbs)
    assert n == len(L.PROBES) and len(P.PROBES_CACHE) == 1
    again = curve()
    assert len(climbs) == n  # no probe climbed again
    P.clear_cache()
    fresh = curve()  # computed from nothing once more
    assert len(climbs) == 2 * n
    for df in (again, fresh):
        pd.testing.assert_frame_equal(first, df, check_exact=True)
        for c in first.columns:  # (every value, NaN for NaN, by its bits where a float)
            for a, b in zip(first[c].tolist(), df[c].tolist(), strict=True):
                assert type(a) is type(b)
                if isinstance(a, float):
                    assert np.float64(a).tobytes() == np.float64(b).tobytes(), c
                else:
                    assert a == b, c


@pytest.mark.parametrize("change", [
    dict(lam=0.0100000001), dict(beta=1.0 + 2.0**-52), dict(delta=-0.0),
    dict(bulk=[0.8, 1.1 + 1e-15]),
    dict(fractions=[0.45 + 1e-12, 0.55 - 1e-12]), dict(overlaps=[[0.7, 0.1], [0.2, 0.6000001]]),
    dict(loadings=[[1.2, 0.3], [-0.4, 0.9 + 1e-13]]), dict(target="z1 + z2*z1"),
    dict(sigma="tanh"), dict(solver=SolverConfig(rtol=1e-11)), dict(n_omega=12),
    dict(alphas=np.linspace(0.3, 3.0 + 1e-14, 14)), dict(alphas=np.linspace(0.3, 3.0, 15)),
])
def test_a_changed_input_misses_the_cache(climbs, change):
    curve(delta=0.0)
    n = len(climbs)
    assert n == len(L.PROBES)
    curve(**{"delta": 0.0, **change})
    assert len(climbs) == 2 * n  # every probe climbed again
    assert len(P.PROBES_CACHE) == 2


def test_a_changed_policy_misses_the_cache(climbs, monkeypatch):
    curve()
    monkeypatch.setattr(L, "QUADRATURE_RTOL", 2e-3)
    curve()
    assert len(climbs) == 2 * len(L.PROBES)


def test_clear_cache_forgets_the_probes(climbs):
    curve()
    assert len(P.PROBES_CACHE) == 1
    P.clear_cache()
    assert len(P.PROBES_CACHE) == 0
    curve()
    assert len(climbs) == 2 * len(L.PROBES)


def test_the_cache_is_bounded_first_in_first_out():
    cache = L.ProbeCache(2)
    for key in "abc":
        cache.put(key, [key])
    assert len(cache) == 2 and cache.get("a") is None and cache.get("c") == ["c"]


def test_a_target_that_cannot_be_a_key_is_not_cached(climbs):
    class Unhashable:  # a vectorised g(Z) stating its k, equal by value (so not hashable)
        k = 2
        name = "unhashable"

        def __eq__(self, other):
            return isinstance(other, Unhashable)

        __hash__ = None  # type: ignore[assignment]

        def __call__(self, Z):
            return Z[..., 0] + Z[..., 0] * Z[..., 1]

    g = Unhashable()
    build = P.spiked_builder(**dict(MODEL, target=g, delta=0.0, p=None))
    assert build.key is None and P.probes_key(build, None, SolverConfig()) is None
    curve(target=g)
    curve(target=g)
    assert len(climbs) == 2 * len(L.PROBES) and len(P.PROBES_CACHE) == 0
