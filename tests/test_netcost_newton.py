"""The network route's bulk ``(V1, tau)`` subsystem on a point's first kappa rule by Newton
with the exact Jacobian (asymptotics/equations/solver.py ``newton``, network/coupling.py
``fp_map``, network/solve.py ``_bulk_v``; docs/THEORY.md §15): the generic solver, the
Jacobian against a central difference off the solution, Newton against a tight Anderson solve,
and the Anderson fallback where Newton fails."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.equations.solver import SolverConfig, newton
from asymptotics.equations.solver import relative_residual as rel_res
from tests.test_network_bulk import residual_jacobian

KW = dict(sigma="relu", target="z1 + z1*z2", alpha0=16.0, readout="pm1", steps=2,
          eta=(2.0, 4.0))


def test_newton_solves_fixed_points_and_refuses_a_bad_jacobian():
    """x = A x + b with the exact Jacobian: one step; a nonlinear map: quadratic (the last
    change far below the tolerance); a Jacobian of the wrong sign: None (the caller's
    fallback); a step leaving the nonnegative orthant: None."""
    rng = np.random.default_rng(1)
    A = 0.3 * rng.standard_normal((4, 4))
    b = rng.standard_normal(4)
    out = newton(lambda x: A @ x + b, lambda x: A - np.eye(4), np.zeros(4),
                 SolverConfig(rtol=1e-10))
    assert out is not None and out.converged and out.n_iter == 2
    assert np.allclose(out.x, np.linalg.solve(np.eye(4) - A, b), rtol=1e-13, atol=1e-13)

    def f(x):
        return 0.5 * np.cos(x) + 0.1 * x * x

    def jac(x):
        return np.diag(-0.5 * np.sin(x) + 0.2 * x) - np.eye(3)

    out = newton(f, jac, np.zeros(3), SolverConfig(rtol=1e-10))
    assert out is not None and out.converged and out.residual <= 1e-12
    assert rel_res(out.x, f(out.x), 1e-3) <= 1e-14
    assert newton(lambda x: A @ x + b, lambda x: np.eye(4) - A, np.zeros(4),
                  SolverConfig()) is None
    assert newton(lambda x: x - 1.0, lambda x: -0.5 * np.eye(2), np.ones(2), SolverConfig(),
                  nonneg=(0,)) is None


def test_newton_predicts_its_last_evaluation(monkeypatch):
    """``predict``: before each chord step's evaluation the change expected there over
    ``PREDICT_MARGIN tight rtol`` (quadratic after a fresh Jacobian, else linear); the
    evaluation Newton returns had ``pred <= 1``, one with ``pred > 1`` was not the last (there W
    is not formed, :func:`asymptotics.network.coupling.fp_map`); None: 0 at every one; the
    iterates do not depend on it."""
    from asymptotics.equations import solver as SV

    def f(x):
        return 0.5 * np.cos(x) + 0.1 * x * x

    def jac(x):
        return np.diag(-0.5 * np.sin(x) + 0.2 * x) - np.eye(3)

    runs = {}
    for margin in (10.0, None):
        monkeypatch.setattr(SV, "PREDICT_MARGIN", margin)
        log, d = [], {}

        def fmap(x, d=d, log=log):
            log.append(d.pop("pred", None))
            return f(x)

        out = newton(fmap, jac, np.zeros(3), SolverConfig(rtol=1e-10), fresh=1e-1, predict=d)
        assert out is not None and out.converged
        runs[margin] = (out.x, log)
    (x1, log1), (x0, log0) = runs[10.0], runs[None]
    assert np.array_equal(x1, x0)
    chords = [p for p in log1 if p is not None]
    assert len(chords) >= 2 and log1[-1] is not None and log1[-1] <= 1.0
    assert all(p > 1.0 for p in log1[:-1] if p is not None) and any(p > 1.0 for p in chords)
    assert all(p == 0.0 for p in log0 if p is not None)


def _first_rule(monkeypatch):
    """The arguments of a point's first ``_bulk_v`` (the first kappa rule: no warm start)."""
    import asymptotics as A
    from asymptotics.network import solve as So

    seen = []
    real = So._bulk_v

    def spy(x, bulk, vargs, solver):
        if not seen:
            seen.append((x.copy(), bulk, vargs, solver, bulk.y_last is None))
        return real(x, bulk, vargs, solver)

    monkeypatch.setattr(So, "_bulk_v", spy)
    res = A.risk(2.0, **KW)
    monkeypatch.undo()
    assert res.converged and seen and seen[0][4]
    return seen[0][:4]


def test_fp_jacobian_off_the_solution_is_the_maps_central_difference(monkeypatch):
    """``fp_map``'s Jacobian at the isotropic start (off the bulk's solution, tau' != tau:
    tau's rows at tau') against a central difference of its map (measured 9e-11 of its
    largest entry; without the rows' correction, ``fp_jacobian`` alone, 0.1)."""
    from asymptotics.network.coupling import fp_map

    x, bulk, vargs, _ = _first_rule(monkeypatch)
    bulk.forget()
    pi = vargs[6]
    K = pi.shape[0]
    fmap, jac = fp_map(bulk, vargs)
    y0 = np.concatenate([x[:K * K], x[K * K:] / pi])
    fd = residual_jacobian(fmap, y0, 1e-5)
    J = jac(y0)
    scale = np.max(np.abs(fd))
    assert np.max(np.abs(J - fd)) <= 1e-6 * scale, np.max(np.abs(J - fd)) / scale
    assert np.max(np.abs(fmap(y0) - y0)) > 1e-3 * np.max(np.abs(y0))  # (off the solution)


def test_newton_is_a_tight_anderson_solve(monkeypatch):
    """Newton from the isotropic solution (at most four Jacobians and seven evaluations) lands
    on the fixed point of Anderson's solve at rtol 1e-14 within 1e-12 relative; Anderson's
    own answer at the route's tolerance (1e-11) is not closer."""
    from asymptotics.network.bulk import fixed_point
    from asymptotics.network.coupling import fp_map

    x, bulk, vargs, solver = _first_rule(monkeypatch)
    pi = vargs[6]
    K = pi.shape[0]
    y0 = np.concatenate([x[:K * K], x[K * K:] / pi])
    nn = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    bulk.forget()
    fmap, jac = fp_map(bulk, vargs)
    n_jac, n_map = [], []
    out = newton(lambda y: n_map.append(1) or fmap(y), lambda y: n_jac.append(1) or jac(y),
                 y0, SolverConfig(1e-11), nn)
    assert out is not None and out.converged
    assert len(n_jac) <= 4 and len(n_map) <= 7, (len(n_jac), len(n_map))
    tight = fixed_point(fmap, y0, SolverConfig(1e-14, max_iter=2000), nn)
    loose = fixed_point(fmap, y0, SolverConfig(1e-11), nn)
    assert tight.converged and loose.converged
    err_new = np.max(np.abs(out.x - tight.x) / np.abs(tight.x))
    err_old = np.max(np.abs(loose.x - tight.x) / np.abs(tight.x))
    assert err_new <= 1e-12 and err_new <= max(err_old, 1e-13), (err_new, err_old)


def test_anderson_is_the_fallback_where_newton_fails(monkeypatch):
    """With the Jacobian of the wrong sign Newton returns None and the first rule's Anderson
    solves it: the point converges to the same risk (the route's tolerance); with
    ``NEWTON = False`` Anderson alone, the same risk."""
    import asymptotics as A
    from asymptotics.network import coupling
    from asymptotics.network import solve as So

    ref = A.risk(2.0, **KW)
    calls = []
    real_fp, real_map = So.solve_fp, So.fp_map

    def count(*a, **k):
        calls.append(1)
        return real_fp(*a, **k)

    def bad_map(bulk, vargs, seen=None):
        fmap, jac = real_map(bulk, vargs, seen)
        return fmap, lambda y: -jac(y) - 2.0 * np.eye(y.size)

    monkeypatch.setattr(So, "solve_fp", count)
    monkeypatch.setattr(So, "fp_map", bad_map)
    res = A.risk(2.0, **KW)
    assert res.converged and calls
    assert res.risk == pytest.approx(ref.risk, rel=1e-9)
    monkeypatch.setattr(So, "fp_map", real_map)
    calls.clear()
    monkeypatch.setattr(coupling, "NEWTON", False)
    old = A.risk(2.0, **KW)
    assert old.converged and calls
    assert old.risk == pytest.approx(ref.risk, rel=1e-9)
    calls.clear()
    monkeypatch.setattr(coupling, "NEWTON", True)
    assert A.risk(2.0, **KW).risk == ref.risk and not calls  # (Newton alone, no fallback)


def test_newton_only_where_an_evaluation_is_a_schur_complement(monkeypatch):
    """One group (every group in the base class: W diagonal, an evaluation cheaper than a
    Jacobian): the first rule by Anderson, Newton not called; two groups of KW: Newton."""
    import asymptotics as A
    from asymptotics.network import solve as So

    calls = []
    real = So.newton

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(So, "newton", spy)
    assert A.risk(2.0, **{**KW, "readout": "constant"}).converged and not calls
    assert A.risk(2.0, **KW).converged and calls


def test_last_w_spares_the_completion_a_schur_evaluation(monkeypatch):
    """``solve.LAST_W``: the point's ``(V1, tau)`` is Newton's converged iterate, whose evaluation
    formed W; the completion reads it (its resolvent accepts the warm tau within rtol): at least
    one Schur evaluation fewer than the route before (False), the risk within the subsystem's
    tolerance of it (THEORY.md §15)."""
    import asymptotics as A
    from asymptotics.network import schur
    from asymptotics.network import solve as So

    calls = []
    real = schur.schur

    def count(*a, **k):
        calls.append(1)
        return real(*a, **k)

    A.risk(2.0, model="network", **KW)  # (the setting's device and groups built)
    monkeypatch.setattr(schur, "schur", count)
    out = {}
    for flag in (False, True):
        monkeypatch.setattr(So, "LAST_W", flag)
        calls.clear()
        out[flag] = (A.risk(2.0, model="network", **KW), len(calls))
    (old, n_old), (new, n_new) = out[False], out[True]
    assert old.converged and new.converged
    assert 0 < n_new < n_old
    assert new.risk == pytest.approx(old.risk, rel=1e-11)
