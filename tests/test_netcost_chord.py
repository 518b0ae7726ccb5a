"""The network route's bulk subsystem across a point's kappa rules and its completion
(asymptotics/network/coupling.py ``chord_start``, bulk.py ``GroupBulk.resolvent``, schur.py
``blas_threads``; docs/DERIVATIONS.md §9.7): the next rule's chord start against the last
rule's solution, the point with and without it (the solver's tolerance, fewer evaluations), the
resolvent's returned tau with its W kept and its V1 the traces' there, and a point's BLAS on one
thread. The chord across rules is the full coupled climb's (``network/solve.BORROW = False``,
and the fallback of the borrowed rule, ``tests/test_netcost_borrow.py``)."""

from __future__ import annotations

import numpy as np

from asymptotics.network import schur
from asymptotics.network.bulk import GroupBulk
from tests.test_network_bulk import _noncommuting

KW = dict(sigma="relu", target="z1 + z1*z2", alpha0=16.0, readout="pm1", steps=2,
          eta=(2.0, 4.0))


def _point(monkeypatch, start: bool) -> tuple:
    """The point of :data:`KW` and its number of Schur evaluations (``start``: the chord from
    ``chord_start``; else from the last rule's solution with its Jacobian)."""
    import asymptotics as A
    from asymptotics.network import solve as So

    calls = []
    real = schur.schur

    def count(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(schur, "schur", count)
    monkeypatch.setattr(So, "BORROW", False)  # (the full coupled climb: every rule)
    if not start:
        monkeypatch.setattr(So, "chord_start", lambda *a: None)
    res = A.risk(2.0, **KW)
    monkeypatch.undo()
    return res, len(calls)


def test_next_rule_start_is_closer_than_the_last_solution(monkeypatch):
    """``chord_start`` (one Newton step on the bulk linearised at the last rule's solution, the
    new rule's node sums) lands within 1e-2 of the new rule's solution relative to the last
    rule's, and its chord converges in at most four evaluations."""
    import asymptotics as A
    from asymptotics.network import solve as So

    seen = []
    real = So.chord

    def spy(fmap, x0, jac, config, nonneg=(), max_iter=8):
        out = real(fmap, x0, jac, config, nonneg, max_iter)
        seen.append((x0.copy(), out))
        return out

    starts = []
    real_start = So.chord_start

    def spy_start(bulk, y, vargs):
        starts.append(y.copy())
        return real_start(bulk, y, vargs)

    monkeypatch.setattr(So, "chord", spy)
    monkeypatch.setattr(So, "chord_start", spy_start)
    monkeypatch.setattr(So, "BORROW", False)  # (the full coupled climb: every rule)
    res = A.risk(2.0, **KW)
    assert res.converged and seen and len(starts) == len(seen)
    ratios = []
    for (x0, out), y in zip(seen, starts, strict=True):
        assert out is not None and out.converged and out.n_iter <= 4
        far = np.max(np.abs(y - out.x))
        ratios.append(np.max(np.abs(x0 - out.x)) / far)
    assert max(ratios) <= 1e-2, ratios  # (measured 6e-4 to 3e-3)


def test_point_with_the_start_is_the_point_without_it(monkeypatch):
    """The same risk to the solver's tolerance (rtol 1e-10; measured ~1e-13) with fewer Schur
    evaluations."""
    with_start, n_with = _point(monkeypatch, True)
    without, n_without = _point(monkeypatch, False)
    assert with_start.converged and without.converged
    assert with_start.n_kappa == without.n_kappa
    assert abs(with_start.risk - without.risk) <= 1e-10 * abs(without.risk)
    assert n_with < n_without


def _bulk(K: int = 3, B: int = 2, n: int = 12, seed: int = 4) -> GroupBulk:
    return GroupBulk(_noncommuting(B, K, n, seed))


def test_resolvent_keeps_w_at_the_tau_it_returns(monkeypatch):
    """The resolvent's last evaluation forms W at the tau it returns (the completion's ``wkc``
    there is a kept result: no Schur evaluation), its V1 is the traces' at that tau, and tau
    solves ``tau = 1/(lamg + e(tau))`` to 1e-13."""
    gb = _bulk()
    A0 = np.random.default_rng(0).standard_normal((3, 3))
    vhat1 = 0.7 * A0 @ A0.T
    lamg, beta, pi = np.array([0.05, 0.2, 0.1]), 1.3, np.array([0.2, 0.5, 0.3])
    tau, V1, _ = gb.resolvent(vhat1, lamg, beta, pi)
    D = beta * pi * tau
    calls = []
    real = schur.schur
    monkeypatch.setattr(schur, "schur", lambda *a, **k: calls.append(1) or real(*a, **k))
    gb.wkc(vhat1, D)
    assert not calls
    monkeypatch.undo()
    e, V1e = gb.evaluate(vhat1, D, beta)
    assert np.max(np.abs(V1 - V1e)) <= 1e-13 * np.max(np.abs(V1e))
    assert np.max(np.abs(tau * (lamg + e) - 1.0)) <= 1e-13


def test_point_runs_blas_on_one_thread(monkeypatch, blas_two_threads):
    """A point's solve runs with BLAS limited to ``schur.BLAS_THREADS`` (1) threads."""
    from threadpoolctl import threadpool_info

    import asymptotics as A
    from asymptotics.network import solve as So

    seen = []
    real = So.solve_network

    def spy(*a, **k):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return real(*a, **k)

    monkeypatch.setattr(So, "solve_network", spy)
    assert A.risk(2.0, **KW).converged
    assert seen and all(s <= {1} for s in seen)
