"""The several-steps mapping made faster without moving its numbers (docs/THEORY.md §12.4):
the piecewise Clenshaw kernel is each point's own recurrence bit for bit, the lattice and its
sub-rules are the index construction's, and the states of three slow drawn settings agree with
the former code's to 1e-12 of each array's largest entry."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.multiindex import step_rules, xi_lines
from asymptotics.multiindex.compiled import clenshaw


def _clenshaw_point(coef: np.ndarray, mp: np.ndarray, lo: float, h: float, t: float) -> list:
    """One point's four columns by Clenshaw's recurrence in Python floats (the kernel's
    operations, in its order)."""
    n_pieces = coef.shape[0]
    p = min(max(int(math.floor((t - lo) / (2.0 * h))), 0), n_pieces - 1)
    x = min(max((t - (lo + h * (2 * p + 1))) / h, -1.0), 1.0)
    out = []
    for c in range(4):
        a1, a2 = 0.0, 0.0
        for j in range(int(mp[p]) - 1, 0, -1):
            a1, a2 = float(coef[p, j, c]) + 2.0 * x * a1 - a2, a1
        out.append(float(coef[p, 0, c]) + x * a1 - a2)
    return out


def test_clenshaw_kernel_is_each_points_recurrence():
    """Points in any order (and beyond the pieces: clipped), pieces of 1..m terms (zero beyond):
    the kernel's columns are the per-point recurrence's, bit for bit."""
    rng = np.random.default_rng(7)
    n_pieces, m = 23, 19
    coef = rng.standard_normal((n_pieces, m, 4)) * np.exp(-0.7 * np.arange(m))[None, :, None]
    mp = rng.integers(1, m + 1, n_pieces).astype(np.int64)
    coef[np.arange(m)[None, :] >= mp[:, None]] = 0.0
    lo, h = -11.5, 0.5
    t = rng.uniform(lo - 1.0, lo + 2 * h * n_pieces + 1.0, 2001)
    got = xi_lines._clenshaw4(coef, mp, lo, h, t)
    ref = np.array([_clenshaw_point(coef, mp, lo, h, float(x)) for x in t])
    assert np.array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))


def test_clenshaw_into_its_place_is_the_four_column_kernels():
    """Seven columns straight into one (n, 7) array, six (the last two by numpy's products),
    three, four columns into a wider array (rows patched): the four-column kernel's numbers
    (a zero fourth column padded), bit for bit."""
    from asymptotics.multiindex.compiled.clenshaw import Dest

    rng = np.random.default_rng(11)
    n_pieces, m, lo, h = 17, 15, -8.5, 0.5
    t = rng.uniform(lo - 1.0, lo + 2 * h * n_pieces + 1.0, 1501)
    mp = rng.integers(1, m + 1, n_pieces).astype(np.int64)

    def four(c: np.ndarray) -> np.ndarray:
        pad = np.concatenate([c, np.zeros(c.shape[:2] + (4 - c.shape[2],))], axis=2)
        return xi_lines._clenshaw4(np.ascontiguousarray(pad), mp, lo, h, t)[:, :c.shape[2]]

    for q in (7, 3, 6):
        coef = rng.standard_normal((n_pieces, m, q))
        got = xi_lines.chebyshev_pieces(coef, lo, h, t, mp)
        ref = np.column_stack([four(coef[:, :, i:i + 4]) if q - i >= 3 else
                               clenshaw._numpy_pieces(coef[:, :, i:], lo, h, t, mp)
                               for i in range(0, q, 4)])
        assert got.flags.c_contiguous and np.array_equal(got, ref), q
    out = np.full((len(t), 9), np.nan)  # four columns from column 3 on of a wider array
    dest = Dest.rows(out, 3)
    coef = rng.standard_normal((n_pieces, m, 4))
    clenshaw.clenshaw_into(coef, mp, lo, h, t, dest.flat, dest.offs, dest.n_rows, dest.rs,
                           dest.cs)
    assert np.array_equal(out[:, 3:7], xi_lines._clenshaw4(coef, mp, lo, h, t))
    assert np.all(np.isnan(out[:, :3])) and np.all(np.isnan(out[:, 7:]))
    rows = np.array([3, 5, len(t) - 1])
    dest.at(1).put(np.arange(12.0).reshape(3, 4), rows)
    assert np.array_equal(out[3, 4:8], [0, 1, 2, 3])
    assert np.array_equal(out[-1, 4:8], [8, 9, 10, 11])


def test_chebyshev_pieces_before_compiled_are_numpys(monkeypatch):
    """Before the kernel is compiled: numpy's pieces on all columns at once."""
    monkeypatch.setattr(xi_lines.coldstart, "kernel_ready", lambda *a, **k: False)
    rng = np.random.default_rng(12)
    coef, mp = rng.standard_normal((9, 11, 7)), np.full(9, 11, dtype=np.int64)
    t = rng.uniform(-5.0, 5.0, 600)
    got = xi_lines.chebyshev_pieces(coef, -4.5, 0.5, t, mp)
    assert np.array_equal(got, clenshaw._numpy_pieces(coef, -4.5, 0.5, t, mp))


def _lattice_by_indices(h: np.ndarray, u_max: float, h0: float) -> tuple:
    """``step_rules.lattice_checks`` as the index construction writes it (every rule's product
    on the grid, the kept indices unravelled)."""
    axes, (w1, w2, w3, w4) = step_rules.axis_weights(h, u_max, h0)
    weak = bool(np.any(np.asarray(h) < 0))
    prods = []
    for ws in [w1, w2] + ([w3, w4] if weak else []):
        p = ws[0]
        for a in ws[1:]:
            p = np.multiply.outer(p, a)
        prods.append(p.ravel())
    on = prods[0] > step_rules.PRUNE * prods[0].max()
    keep = np.flatnonzero(on | (prods[3] > step_rules.PRUNE * prods[3].max()) if weak else on)
    idx = np.unravel_index(keep, tuple(len(x) for x in axes))
    pts = np.stack([x[i] for x, i in zip(axes, idx, strict=True)], axis=-1)
    subs = []
    for p in prods[1:]:
        ws = p[keep]
        sub = np.flatnonzero(ws > step_rules.PRUNE * ws.max())
        subs.append((sub, ws[sub] / ws[sub].sum()))
    checks = [(None, None, *subs[0])] + ([(*subs[1], *subs[2])] if weak else [])
    if weak and not np.any(np.asarray(h) > h0):
        checks = checks[1:]
    return pts, prods[0][keep] / prods[0][keep].sum(), checks


@pytest.mark.parametrize("h,h0", [([0.2, 0.2, -12.0], 0.2), ([0.3, 0.25, 0.2], 0.2),
                                  ([0.08, 0.5], 0.08), ([0.4, -16.0], 0.08), ([0.1032], 0.04),
                                  ([-8.0], 0.04)])
def test_lattice_checks_are_the_index_construction(h, h0):
    got = step_rules.lattice_checks(np.array(h), 9.0, h0)
    ref = _lattice_by_indices(np.array(h), 9.0, h0)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    assert len(got[2]) == len(ref[2])
    for one, two in zip(got[2], ref[2], strict=True):
        assert all((x is None and y is None) or np.array_equal(x, y)
                   for x, y in zip(one, two, strict=True))


@pytest.mark.parametrize("h,h0", [([0.2, 0.2, -12.0], 0.2), ([0.3, 0.25, 0.2], 0.2),
                                  ([0.4, -16.0], 0.08), ([0.1032], 0.04), ([-8.0], 0.04)])
def test_kept_nodes_compiled_are_numpys(monkeypatch, h, h0):
    """The lattice's kept nodes and rules' weights by the compiled pass (no grid formed) and by
    numpy's outer products on the whole grid (the path before it is compiled): bit for bit."""
    from asymptotics.multiindex.compiled import lattice

    seen = []
    real = lattice.kept_nodes
    monkeypatch.setattr(step_rules, "kept_nodes", lambda *a: seen.append(a) or real(*a))
    step_rules.lattice_checks(np.array(h), 9.0, h0)
    fast = real(*seen[-1])
    monkeypatch.setattr(lattice.coldstart, "kernel_ready", lambda *a, **k: False)
    slow = real(*seen[-1])
    assert np.array_equal(fast[0], slow[0]) and len(fast[1]) == len(slow[1])
    assert all(np.array_equal(x, y) for x, y in zip(fast[1], slow[1], strict=True))
    monkeypatch.setattr(lattice.coldstart, "kernel_ready", lambda *a, **k: True)
    tiny = real([np.array([0.0])], [[np.array([1.0])]], 1e-18, None)  # one node, one axis
    assert np.array_equal(tiny[0], [[0.0]]) and np.array_equal(tiny[1][0], [1.0])


def test_subset_is_fancy_indexing():
    rng = np.random.default_rng(2)
    U, w = rng.standard_normal((500, 3)), rng.random(37)
    t = (rng.random((500, 3)), rng.random(500), rng.random((500, 2)))
    idx = np.sort(rng.choice(500, 37, replace=False))
    got = step_rules.subset(U, w, t, idx)
    ref = (U[idx], w, *(x[idx] for x in t))
    assert all(np.array_equal(x, y) and x.flags.c_contiguous for x, y in zip(got, ref,
                                                                             strict=True))


#: three slow drawn settings of benchmarks/bench_engine.py's section 2 (seeds 9002 #21, 4711 #17,
#: 31337 #23) and their states after three steps by the former code (the sub-rules' checks and
#: the xi rules' ripples by numpy's sums; compiled kernels)
FORMER = [
    (dict(sigma="softplus", target="z1 + z1*z2 + z1*z2*z3",
          readout={1.0: 0.09, -1.0: 0.49, -2.13: 0.42000000000000004}, alpha0=16.0,
          eta=(8.7, 5.98, 13.54)),
     [[329.7293045333567, 50.20401760625111, -1.0012191275901594e-14],
      [-362.4222939969972, -33.61696486407958, 1.254097674643103e-14],
      [-771.602887643535, -71.52606080724124, 2.59215023423566e-14]],
     [[55843.82348952183, -73507.15376697294, -156527.88087244195],
      [-73507.15376697294, 100230.84765903938, 213431.07793679184],
      [-156527.88087244195, 213431.07793679184, 454479.1535998851]],
     [15162.01188835156, 0.2237493834552473, 2.5603074501802303]),
    (dict(sigma="softplus", target="z1*z2 + tanh(z1)",
          readout={1.0: 0.42, -1.0: 0.46, -1.74: 0.12000000000000005}, alpha0=4.0,
          eta=(13.55, 14.81, 7.17)),
     [[13.959113420768208, 8.284773805807632], [-33.35815737533375, -6.196584279934633],
      [-57.91787505640877, -10.529774938204199]],
     [[1872.7670430995302, -2262.3004043575334, -3926.33769330005],
      [-2262.3004043575334, 8570.056397995018, 14896.6290900351],
      [-3926.33769330005, 14896.6290900351, 25894.46892517798]],
     [271.31304414565153, 6.216438652630704, 22.603557792822894]),
    (dict(sigma="tanh", target="z1*z2 + tanh(z1)",
          readout={1.0: 0.17, -1.0: 0.72, -1.14: 0.10999999999999999}, alpha0=4.0,
          eta=(10.9, 9.97, 1.56)),
     [[4.353663181824244, 2.550696028628582e-16], [-4.353663181824244, -3.5769437042051e-16],
      [-4.922673678630669, -6.4091988540683256e-18]],
     [[11.103531510267148, -11.103531510267139, -12.88253212046638],
      [-11.103531510267139, 11.10353151026713, 12.882532120466356],
      [-12.88253212046638, 12.882532120466356, 14.962445435157738]],
     [8.58338373607113, 8.583383736071134, 10.323221285752448]),
]


@pytest.mark.parametrize("kw,a,LL,c", FORMER)
def test_slow_settings_keep_their_numbers(kw, a, LL, c):
    """Each array of the state after three steps within 1e-12 of its largest entry of the former
    code's (benchmarks/compare_steps_mapping.py's measure)."""
    st = A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"], eta=kw["eta"],
                         readout=kw["readout"]).states[-1]
    for got, ref in ((st.a, a), (st.L @ st.L.T, LL), (st.c, c)):
        ref = np.asarray(ref)
        assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref))


def test_split_rest_by_blocks_is_all_rows_at_once(monkeypatch):
    """The split target's sums per block of rows (a one-row remainder too) equal the sums on all
    rows at once, bit for bit (the inputs of a drawn setting's third step)."""
    from asymptotics.multiindex import polynomial_spikes, steps

    seen = []
    real = polynomial_spikes.split_rest
    monkeypatch.setattr(polynomial_spikes, "split_rest",
                        lambda *a: seen.append(a) or real(*a))
    steps.clear_cache()
    kw = FORMER[1][0]
    A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"], eta=kw["eta"],
                    readout=kw["readout"])
    split, Uz, R, w, R2, w2, Bz, f, delta = seen[-1]
    rows = polynomial_spikes.SPLIT_ROWS
    for n in (Uz.shape[0], rows + 1, 2 * rows + 2, 1):
        args = (split, Uz[:n], R, w, R2, w2, Bz, f[:n], delta)
        blocks = real(*args)
        monkeypatch.setattr(polynomial_spikes, "SPLIT_ROWS", 10**9)
        once = real(*args)
        monkeypatch.setattr(polynomial_spikes, "SPLIT_ROWS", rows)
        assert all(np.array_equal(x, y) for x, y in zip(blocks, once, strict=True)), n


@pytest.mark.parametrize("n", [1500, 641, 129, 2])
def test_direct_rule_by_blocks_is_all_shifts_at_once(monkeypatch, n):
    """The xi rule's numpy sums in blocks of 64k shifts (a last shift alone joined to the block
    before) are those on all shifts at once, bit for bit, for both forms of the moments."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.gauss_rules import gauss_hermite
    from asymptotics.core import meta

    sigma, (xi, w) = get_function("softplus"), gauss_hermite(96)
    M = np.linspace(-40.0, 40.0, n)
    with meta.blas_limit(1):  # the mapping's steps
        monkeypatch.setattr(xi_lines, "DIRECT_BLOCK", 1 << 30)
        once = [f(sigma, sc, M, xi, w, least=10**12)
                for f, sc in ((xi_lines.xi_direct_small, 0.3), (xi_lines.xi_direct, 1.3))]
        for block in (1 << 15, 1 << 13, 1 << 12):
            monkeypatch.setattr(xi_lines, "DIRECT_BLOCK", block)
            blocks = xi_lines._row_blocks(n, len(xi))
            assert all(b.start % 64 == 0 for b in blocks) and blocks[-1].stop == n
            assert n < 2 or all(b.stop - b.start > 1 for b in blocks)
            got = [f(sigma, sc, M, xi, w, least=10**12)
                   for f, sc in ((xi_lines.xi_direct_small, 0.3), (xi_lines.xi_direct, 1.3))]
            assert all(np.array_equal(x, y) for x, y in zip(got, once, strict=True)), block
