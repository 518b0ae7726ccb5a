"""The K-group node tables go to the solve kernels as they are, row-major, for every number of
groups (``spiked.anderson.node_args``, docs/THEORY.md §10.5): the kernels see one pattern of
array types whatever K, r and the target's rank, so numba compiles the solve tree once (two
groups' per-group tables in column order were a second compile of the whole tree, 30-90 CPU-s
on an empty cache, for a warm point ~30% faster; the same numbers either way)."""

from __future__ import annotations

import numba
import pytest

from asymptotics.spiked import anderson
from asymptotics.spiked.problem import spiked_builder

BASE = dict(sigma="erf(z-1)", target="z1 + z1*z2", overlaps=[[0.7, 0.1], [0.2, 0.6]])


def _problem(K: int, r: int, k: int):
    m = dict(BASE, loadings=[[0.9, 0.3, -0.2][:r], [-0.4, 0.8, 0.1][:r], [0.2, 0.5, 0.3][:r]][:K],
             bulk=[0.8, 1.1, 0.9][:K], fractions=[[1.0], [0.45, 0.55], [0.3, 0.3, 0.4]][K - 1],
             overlaps=[[0.6, 0.1][:k], [0.2, 0.5][:k], [0.1, 0.2][:k]][:r],
             target="z1 + z1*z2" if k == 2 else "tanh")
    return spiked_builder(lam=0.01, beta=1.0, delta=0.0, p=None, **m)(16, None)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_the_kernels_take_the_tables_as_they_are(K: int) -> None:
    prob = _problem(K, 2, 2)
    t = prob.tables
    assert all(a is b for a, b in zip(anderson.node_args(prob), (
        t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2), strict=True))


def test_one_layout_whatever_the_groups_r_and_the_targets_rank() -> None:
    """numba compiles the solve kernels once per pattern of array types: one, two and three
    groups with r = 1, 2, 3 and a target of rank 1 or 2 give one pattern."""
    pats = set()
    for K in (1, 2, 3):
        for r in (1, 2, 3):
            for k in (1, 2):
                if k <= r:
                    pats.add(tuple(str(numba.typeof(a))
                                   for a in anderson.node_args(_problem(K, r, k))))
    assert len(pats) == 1, pats
