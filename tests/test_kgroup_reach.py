"""The line pieces of a ladder's second rule built with its first (``reach``, docs/THEORY.md
§10.2, §10.8): the tables of both rules bit for bit those built without it, the second rule's
features then without a new direct evaluation, and a point's climb asking for it at its first
rule only."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import line_moments as L
from asymptotics.equations.ladder import ladder
from asymptotics.spiked import coefficients as C
from asymptotics.spiked import problem as P
from asymptotics.spiked import risk_spiked
from asymptotics.spiked import solve as S

KW = dict(target="z1*z2 + tanh(z1)", loadings=[[-0.6, 0.43], [1.08, 0.8], [-0.93, -0.64]],
          bulk=[1.29, 0.95, 0.61], fractions=[0.2, 0.3, 0.5],
          overlaps=[[-0.65, 0.06], [0.07, 0.89]], lam=0.01, beta=1.0)


def _tables(sigma: str, rules: tuple, reach: int | None) -> list:
    P.clear_cache()
    L.clear_cache()
    build = P.spiked_builder(sigma=sigma, **KW)
    return [build(n, None, reach if i == 0 else None).tables for i, n in enumerate(rules)]


def _direct_calls(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    orig = C._smooth_moments

    def counted(*a, **k):
        calls.append(a[2].shape[0])
        return orig(*a, **k)

    monkeypatch.setattr(C, "_smooth_moments", counted)
    return calls


@pytest.mark.parametrize("sigma", ["softplus", "erf", "tanh"])
def test_reach_builds_the_same_tables(sigma: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = ladder(2)[:3]
    plain = _tables(sigma, rules, None)
    reached = _tables(sigma, rules, rules[1])
    for a, b in zip(plain, reached, strict=True):
        for name in ("kappa", "weights", "mu0", "mub1", "mus2", "h", "h1", "h2"):
            x, y = getattr(a, name), getattr(b, name)
            assert np.array_equal(x.view(np.int64), y.view(np.int64)), name
    # the second rule's range widens the first's: without reach, its new pieces are a second
    # evaluation per group; with it, the first rule's evaluations (one per group) cover it
    calls = _direct_calls(monkeypatch)
    _tables(sigma, rules[:2], None)
    n_plain = len(calls)
    _tables(sigma, rules[:2], rules[1])
    assert len(calls) - n_plain == 3 and n_plain > 3
    P.clear_cache()
    L.clear_cache()


def test_a_climb_reaches_from_its_first_rule_only(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list = []
    orig = P.build_tables

    def spy(*a, **k):
        asked.append((k.get("n_kappa"), k.get("reach")))
        return orig(*a, **k)

    monkeypatch.setattr(P, "build_tables", spy)
    P.clear_cache()
    L.clear_cache()
    res = risk_spiked(1.5, sigma="erf", **KW)
    lad = S._ladder(2)
    assert res.converged and asked[0] == (lad[0], lad[1])
    assert all(reach is None for _, reach in asked[1:]) and len(asked) >= 2
    P.clear_cache()
    L.clear_cache()
