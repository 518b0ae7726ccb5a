"""A finite network with an enormous ridge: the risk is E g^2 (every channel switched off), not
NaN from float64 overflow. E g^2 here by Gauss-Hermite quadrature and by hand, independently."""

from __future__ import annotations

import numpy as np
import pytest

import asymptotics as A
from asymptotics.models.problem import LAM_CAP, LimitWarning


def _eg2_tanh() -> float:
    x, w = np.polynomial.hermite_e.hermegauss(200)
    return float(np.sum(w * np.tanh(x) ** 2) / np.sqrt(2 * np.pi))


@pytest.mark.parametrize("kw,eg2", [
    (dict(model="srf"), None), (dict(), None), (dict(steps=2, model="srf"), None),
    (dict(readout="pm1", model="srf"), None),
    (dict(target="z1 + z1*z2", steps=2, model="srf"), 2.0)])
def test_huge_lam_at_finite_p_is_the_null_risk(kw, eg2):
    with pytest.warns(LimitWarning, match="evaluated at lam = 1e"):
        res = A.risk(1.5, lam=1e300, p=100, **kw)
    assert res.status == "converged" and res.lam == LAM_CAP
    assert res.risk == pytest.approx(_eg2_tanh() if eg2 is None else eg2, rel=1e-12)


def test_the_limit_is_untouched():
    with pytest.warns(LimitWarning, match="p = infinity"):
        res = A.risk(1.5, lam=1e300, model="srf")
    assert res.lam == 1e300
