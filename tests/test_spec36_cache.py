"""``spectrum``'s law cache (asymptotics/spectra/api.py): a call with the same arguments returns
the same law, every argument and the spectra modules' settings are in its key, it is bounded
and cleared by ``clear_cache``, and the shared law cannot be altered."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import asymptotics as A
from asymptotics.spectra import api, clear_cache

KW = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5, d=1000.0)


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def _numbers(law) -> tuple:
    x = np.linspace(0.0, 1.05 * law.edge, 50)
    return (law.support, law.atom, [(o.location, dict(o.overlaps)) for o in law.outliers],
            law.density(x))


def test_same_arguments_same_law_and_recomputed_after_clear() -> None:
    law = A.spectrum("weights", **KW)
    assert A.spectrum("weights", **KW) is law
    clear_cache()
    again = A.spectrum("weights", **KW)
    assert again is not law
    (s1, a1, o1, d1), (s2, a2, o2, d2) = _numbers(law), _numbers(again)
    assert s1 == s2 and a1 == a2 and o1 == o2  # the computation is deterministic
    np.testing.assert_array_equal(d1, d2)


@pytest.mark.parametrize("change", [dict(d=2000.0), dict(beta=0.6), dict(model="srf"),
                                    dict(readout="pm1"), dict(target="tanh(z1)"),
                                    dict(alpha0=2.5), dict(lam=0.1)])
def test_every_argument_is_in_the_key(change: dict) -> None:
    law = A.spectrum("weights", **KW)
    other = A.spectrum("weights", **{**KW, **change})
    assert other is not law
    assert A.spectrum("weights", **KW) is law and A.spectrum("weights", **{**KW, **change}) \
        is other


def test_readout_order_is_part_of_the_key() -> None:
    """A readout's dict as given (its groups' order is the law's parameters' order)."""
    a = api._cache_key("features", dict(readout={1.0: 0.5, -1.0: 0.5}))
    b = api._cache_key("features", dict(readout={-1.0: 0.5, 1.0: 0.5}))
    assert a != b and a == api._cache_key("features", dict(readout={1.0: 0.5, -1.0: 0.5}))
    assert api._cache_key("features", dict(eta=True)) != api._cache_key("features", dict(eta=1))


def test_a_changed_module_setting_is_not_served_the_cached_law(monkeypatch) -> None:
    from asymptotics.spectra import law as L

    law = A.spectrum("weights", **KW)
    monkeypatch.setattr(L, "TOP_GUARD", not L.TOP_GUARD)
    other = A.spectrum("weights", **KW)
    assert other is not law
    monkeypatch.undo()
    assert A.spectrum("weights", **KW) is not other  # computed again with the setting back


def test_bounded_least_recently_used(monkeypatch) -> None:
    monkeypatch.setattr(api, "CACHE_SIZE", 2)
    a = A.spectrum("weights", **KW)
    b = A.spectrum("weights", **{**KW, "d": 2000.0})
    assert A.spectrum("weights", **KW) is a  # a used last: b goes first
    A.spectrum("weights", **{**KW, "d": 3000.0})
    assert len(api._CACHE) == 2
    assert A.spectrum("weights", **KW) is a
    assert A.spectrum("weights", **{**KW, "d": 2000.0}) is not b


def test_the_shared_law_is_read_only() -> None:
    law = A.spectrum("features", 4.0, **{**KW, "target": "tanh(z1)"}, steps=2)
    with pytest.raises(TypeError, match="read-only"):
        law.params["alpha"] = 3.0
    with pytest.raises(TypeError, match="read-only"):
        law.outliers[0].overlaps.update(mean=0.0)
    with pytest.raises(TypeError):
        law.params["loadings"][0] += (1.0,)  # nested lists are tuples
    with pytest.raises(AttributeError):  # (a frozen dataclass)
        law.edge = 1.0  # type: ignore[misc]
    copy = dict(law.params)
    copy["alpha"] = 3.0  # a copy is an ordinary dict
    assert law.params["alpha"] == 4.0
    back = pickle.loads(pickle.dumps(law.outliers[0].overlaps))
    assert back == law.outliers[0].overlaps


def test_a_refusal_is_not_cached() -> None:
    with pytest.raises(ValueError, match="beta"):
        A.spectrum("weights", **{**KW, "beta": -1.0})
    assert not api._CACHE
