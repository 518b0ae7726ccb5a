"""The per-group node tables of two groups in column order (``spiked.anderson.node_args``,
docs/THEORY.md §10.5): the K-group point solved on them is the point solved on the row-major
tables, bit for bit (every output of ``anderson.solve_point``: the state, the status, the
iterations, the residual, the risk, the mean design's singular values), on the generic branches
of the node sums too (r = 3, k = 1); ``risk_of`` (matrix products on the tables, where Q2 is
clamped) on row-major copies of them gives the same risk; one group and more than two keep the
row-major tables; the kernels see one layout per branch whatever r and the target's rank (each
new layout pattern is a compile of the solve kernels)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.spiked import anderson
from asymptotics.spiked import solve as S
from asymptotics.spiked.problem import spiked_builder

MODELS = {
    "K2 r2 k2": dict(sigma="erf(z-1)", target="z1 + z1*z2", loadings=[[1.2, 0.3], [-0.4, 0.9]],
                     bulk=[0.8, 1.1], fractions=[0.45, 0.55],
                     overlaps=[[0.7, 0.1], [0.2, 0.6]]),
    "K2 r3 k1": dict(sigma="tanh", target="relu", loadings=[[1.0, 0.2, -0.3], [0.1, -0.8, 0.4]],
                     bulk=[0.9, 0.7], fractions=[0.6, 0.4], overlaps=[[0.5], [0.3], [0.2]]),
    "K1 r2 k2": dict(sigma="softplus", target="z1*z2 + tanh(z1)", loadings=[[0.9, -0.5]],
                     bulk=[1.2], fractions=[1.0], overlaps=[[0.6, 0.2], [-0.1, 0.7]]),
}


def _outputs(prob, tables: tuple, alpha: float, x0: np.ndarray | None) -> tuple:
    nn = S._nonneg(prob.fractions.shape[0])
    start = np.zeros(nn.shape[0]) if x0 is None else x0
    return anderson.solve_point(start, x0 is not None, nn, *tables, alpha / prob.beta, prob.lam,
                                prob.delta, prob.beta, prob.fractions, prob.p_inv, 1e-10, 1e-3,
                                500, 0.5, 6)


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
               for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_column_tables_give_the_same_points_bit_for_bit(name: str) -> None:
    prob = spiked_builder(lam=0.01, beta=1.0, delta=0.0, p=None, **MODELS[name])(16, None)
    t = prob.tables
    rows = (t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2)
    cols = anderson.node_args(prob)
    assert all(np.array_equal(a, b) for a, b in zip(rows, cols, strict=True))
    if prob.fractions.shape[0] == 2:
        assert cols is anderson.node_args(prob)  # (kept for the tables: one copy per problem)
        for a in cols[2:5]:
            assert a.flags.f_contiguous and not a.flags.c_contiguous
    x0 = None
    for alpha in (0.3, 0.9, 2.0, 4.5):
        want, got = _outputs(prob, rows, alpha, x0), _outputs(prob, cols, alpha, x0)
        assert want[1] == 0 and _same(want, got)
        x0 = got[4]


def test_the_clamped_risk_is_the_same_on_column_tables() -> None:
    """``risk_of`` (matrix products on the tables) where Q2 is clamped at 0: the point's risk on
    the column tables is the row-major one."""
    prob = spiked_builder(lam=0.01, beta=1.0, delta=0.0, p=None, **MODELS["K2 r2 k2"])(16, None)
    t = prob.tables
    rows = (t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2)
    cols = anderson.node_args(prob)
    state = np.asarray(_outputs(prob, rows, 1.5, None)[0]).copy()
    o = S.sizes(2, 2, 2)
    state[o[1]:o[2]] = 0.0
    args = (state, t.weights)
    want = anderson.risk_of(*args, *rows[1:])
    got = anderson.risk_of(*args, np.ascontiguousarray(cols[1]), np.ascontiguousarray(cols[2]),
                           cols[3], cols[4], cols[5], np.ascontiguousarray(cols[6]), cols[7])
    assert got == want


@pytest.mark.parametrize("groups", [1, 3])
def test_one_group_and_more_than_two_keep_the_row_major_tables(groups: int) -> None:
    model = (MODELS["K1 r2 k2"] if groups == 1 else
             dict(MODELS["K2 r2 k2"], loadings=[[1.2, 0.3], [-0.4, 0.9], [0.2, 0.5]],
                  bulk=[0.8, 1.1, 0.9], fractions=[0.3, 0.3, 0.4]))
    prob = spiked_builder(lam=0.01, beta=1.0, delta=0.0, p=None, **model)(16, None)
    t = prob.tables
    assert all(a is b for a, b in zip(anderson.node_args(prob), (
        t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2), strict=True))


def test_one_layout_per_branch_whatever_r_and_the_targets_rank() -> None:
    """numba compiles the solve kernels once per pattern of array layouts: two groups with
    r = 1, 2, 3 and a target of rank 1 or 2 give one pattern (a table of one column is
    row-major to numba, so only the two-column group tables are in column order)."""
    import numba

    pats = set()
    for name in sorted(MODELS):
        for r in (1, 2, 3):
            m = dict(MODELS[name])
            if len(m["fractions"]) != 2:
                continue
            k = len(m["overlaps"][0])
            m["loadings"] = [[0.9, 0.3, -0.2][:r], [-0.4, 0.8, 0.1][:r]]
            m["overlaps"] = [[0.6, 0.1][:k], [0.2, 0.5][:k], [0.1, 0.2][:k]][:r]
            if k > r:
                continue
            prob = spiked_builder(lam=0.01, beta=1.0, delta=0.0, p=None, **m)(16, None)
            pats.add(tuple(str(numba.typeof(a)) for a in anderson.node_args(prob)))
    assert len(pats) == 1, pats
