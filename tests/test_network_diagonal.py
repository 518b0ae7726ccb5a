"""The network route's bulk ``(V1, tau)`` subsystem where every group is in the base class (K = 1;
K = 2 with sigma' even and the ±1 readout) as one compiled kernel
(asymptotics/network/compiled/diagonal.py; docs/THEORY.md §15): numpy's pairwise sum, the map
and the whole solve against the Python map of ``coupling.fp_map`` and ``bulk.fixed_point``, bit
for bit, and the fallback where an evaluation leaves the diagonal path."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.equations.solver import SolverConfig
from asymptotics.network.compiled import diagonal as dg

K1 = dict(sigma="tanh", target="z1 + z1*z2", alpha0=4.942, readout="constant", steps=2,
          eta=(1.0, 2.0), beta=1.624, p=1624.0)
K2 = dict(sigma="tanh", target="tanh(z1)", alpha0=13.848, readout="pm1", steps=2,
          eta=(2.0, 4.0), beta=1.524, p=1524.0)


def test_pairwise_is_numpys_sum():
    """``pairwise`` equals numpy's sum of a (B, n) array bit for bit (lengths 1..9000: the
    leaves below 8 and up to 128 terms, the splits above)."""
    rng = np.random.default_rng(3)
    for n in list(range(1, 300)) + [511, 1024, 1523, 3200, 9000]:
        x = rng.standard_normal(n) * np.exp(3.0 * rng.standard_normal(n))
        B = 1 + n % 5
        P = np.concatenate([x] * B).reshape(B, n)[:, :, None, None]
        assert dg.pairwise(np.ascontiguousarray(P.ravel())) == P.sum(axis=(0, 1))[0, 0], n


def _first_rule(kw, monkeypatch):
    """The arguments of a point's ``_bulk_v``."""
    import asymptotics as A
    from asymptotics.network import solve as So

    seen = []
    real = So._bulk_v

    def spy(x, bulk, vargs, solver):
        if not seen:
            seen.append((x.copy(), bulk, vargs, solver))
        return real(x, bulk, vargs, solver)

    monkeypatch.setattr(So, "_bulk_v", spy)
    res = A.risk(2.0, model="network", lam=0.01, **kw)
    monkeypatch.undo()
    assert res.converged and seen
    return seen[0]


@pytest.mark.parametrize("kw", [K1, K2], ids=["K1", "K2"])
def test_kernel_is_the_python_map_and_solve_bit_for_bit(kw, monkeypatch):
    """The compiled map at random points near the start equals ``fp_map``'s ``fmap`` (the
    bulk's ``evaluate``) bit for bit; the compiled solve equals ``bulk.fixed_point`` of that map
    (x, iterations, residual); a point with some ``D_g <= 0`` is the fallback (None)."""
    from asymptotics.network.bulk import fixed_point
    from asymptotics.network.coupling import fp_map

    x, bulk, vargs, solver = _first_rule(kw, monkeypatch)
    w, mb1, ms2, A, lam, beta, pi = vargs
    K = pi.shape[0]
    assert bulk.K == K == (1 if kw is K1 else 2)
    s = dg.diagonal_ready(bulk)
    assert s is not None
    bulk.forget()
    fmap, _ = fp_map(bulk, vargs)
    y0 = np.concatenate([x[:K * K], x[K * K:] / pi])
    rng = np.random.default_rng(5)
    scratch = np.empty(s.size * K * K)
    for _ in range(20):
        y = y0 * (1.0 + 0.2 * rng.standard_normal(y0.size))
        y[K * K:] = np.abs(y[K * K:])
        f, ok = dg.diag_map(y, w, mb1, ms2, float(A), float(lam), float(beta), pi, s,
                            float(bulk.d), scratch)
        assert ok and np.array_equal(f, fmap(y))
    nn = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    cfg = SolverConfig(solver.rtol / 10)
    ref = fixed_point(fmap, y0, cfg, nn)
    out = dg.solve_diagonal(bulk, vargs, y0, cfg, nn)
    assert out is not None and ref.converged and out.converged
    assert np.array_equal(out.x, ref.x)
    assert (out.n_iter, out.residual, out.status) == (ref.n_iter, ref.residual, ref.status)
    bad = y0.copy()
    bad[K * K] = -bad[K * K]  # tau_1 < 0: D_1 < 0, the bulk's general evaluation
    assert not dg.diag_map(bad, w, mb1, ms2, float(A), float(lam), float(beta), pi, s,
                           float(bulk.d), scratch)[1]
    assert dg.solve_diagonal(bulk, vargs, bad, cfg, nn) is None


def test_route_is_unchanged_without_the_kernel(monkeypatch):
    """A K = 1 point along alpha with and without the kernel (``DIAGONAL``): the same results."""
    import asymptotics as A
    from asymptotics.network import device

    def run():
        device._CACHE.clear()
        return [A.risk(a, model="network", lam=0.01, **K1) for a in (0.5, 2.0)]

    on = run()
    monkeypatch.setattr(dg, "DIAGONAL", False)
    off = run()
    for a, b in zip(on, off, strict=True):
        assert a.converged and a.risk == b.risk and a.state == b.state


@pytest.mark.parametrize("kw", [K1, K2], ids=["K1", "K2"])
def test_resolvent_newton_kernel_is_the_python_loop(kw, monkeypatch):
    """``GroupBulk.resolvent`` by the compiled Newton loop and by the Python loop, from the lower
    bound and then warm (the chord steps with the kept Jacobian): tau, V1, V2 within 1e-14
    (the traces are the same numbers; the Jacobian's Gram differs at rounding), the kept
    Jacobian too; the kernel taken."""
    from asymptotics.spiked.kernels import channel_v, vhats

    x, bulk, vargs, _ = _first_rule(kw, monkeypatch)
    w, mb1, ms2, A, lam, beta, pi = vargs
    K = pi.shape[0]
    iv = 1.0 / (1.0 + channel_v(x[:K * K].reshape(K, K), x[K * K:], mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    taken = []
    real = dg.diagonal_newton
    monkeypatch.setattr("asymptotics.network.bulk.diagonal_newton",
                        lambda *a: taken.append(1) or real(*a))
    out = {}
    for flag in (True, False):
        monkeypatch.setattr(dg, "DIAGONAL", flag)
        bulk.forget()
        cold = bulk.resolvent(M, lam + v2, beta, pi)
        warm = bulk.resolvent(M * (1.0 + 1e-7), lam + v2, beta, pi)
        out[flag] = (*cold, *warm, bulk._ed_last.copy())
    assert taken
    for a, b in zip(out[True], out[False], strict=True):
        assert np.all(np.isfinite(a)) and np.allclose(a, b, rtol=1e-14, atol=0.0), (a, b)
