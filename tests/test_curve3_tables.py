"""A curve after several steps asked again reuses its K-group tables (docs/THEORY.md §10.8,
§12.3): the mapping's rotated target is the same object for the same text and Q
(``steps_risk.mapping_params``), so the tables' cache of ``spiked.problem`` (tensor and aligned
rules) hits; the frames are the same, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import asymptotics as A
from asymptotics.multiindex import steps as steps_mod
from asymptotics.multiindex.steps import RotatedTarget, steps_mapping
from asymptotics.multiindex.steps_risk import mapping_params
from asymptotics.spiked import problem as P

#: a drawn setting of the benchmark whose curve climbs both kappa ladders (a rotated target)
SETTING = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=math.inf, eta=(11.93, 3.07, 6.75))


def test_the_rotated_target_is_reused_for_an_equal_mapping():
    m1 = steps_mapping(steps=3, readout="pm1", **SETTING)
    steps_mod.clear_cache()
    m2 = steps_mapping(steps=3, readout="pm1", **SETTING)
    p1, p2 = mapping_params(m1, 3), mapping_params(m2, 3)
    assert isinstance(p1["target"], RotatedTarget) and p2["target"] is p1["target"]
    assert p1 is not p2 and {k: v for k, v in p1.items() if k != "target"} == \
        {k: v for k, v in p2.items() if k != "target"}
    fresh = m2.spiked_params(3)["target"]  # (a new object, equal text and Q)
    assert fresh is not p1["target"] and fresh.text == p1["target"].text
    assert np.array_equal(fresh.Q, p1["target"].Q)


def test_a_curve_asked_again_builds_no_tables_and_is_the_same(monkeypatch):
    built = []
    for name in ("build_tables", "aligned_tables"):
        orig = getattr(P, name)
        monkeypatch.setattr(P, name, lambda *a, _o=orig, _n=name, **k: (built.append(_n),
                                                                         _o(*a, **k))[1])
    alphas = np.linspace(0.2, 5.0, 12)
    P.clear_cache()
    first = A.risk_curve(alphas, model="srf", steps=3, readout="pm1", lam=0.01, **SETTING)
    n_first = len(built)
    again = A.risk_curve(alphas, model="srf", steps=3, readout="pm1", lam=0.01, **SETTING)
    assert n_first >= 2 and "aligned_tables" in built  # (the curve needs the second ladder)
    assert len(built) == n_first  # nothing built the second time
    pd.testing.assert_frame_equal(first, again, check_exact=True)
