"""The K-group tables' activation values written into their own temporary
(``spiked.coefficients._values_into``) against the functions' own evaluation, and the node sums
of three or more groups summed after their per-node rows (``equations.node_sums_k``) against the
reference kernels of ``spiked.kernels``: the same numbers bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.line_moments import rows_moments
from asymptotics.equations import node_sums_k
from asymptotics.spiked import coefficients as C
from asymptotics.spiked import kernels
from tests.test_node_sums import _tables


@pytest.mark.parametrize("name", ["tanh", "erf", "softplus", "relu", "erf(z-1)"])
def test_values_into_are_the_functions_values(name: str) -> None:
    f = C.fast(get_function(name))
    rng = np.random.default_rng(len(name))
    for shape in [(370, 96), (7, 96), (1, 5), (1001, 33)]:
        for scale in (0.5, 3.0, 10.0, 40.0):
            z = rng.standard_normal(shape) * scale
            z[0, 0] = 0.0
            want = f(z.copy())
            got = C._values_into(f, z.copy())
            assert got.dtype == np.float64 and np.array_equal(want, got)


def test_values_into_leave_other_functions_to_them() -> None:
    f = get_function("tanh(2*z) + 0.1*z**2")
    z = np.linspace(-5.0, 5.0, 12).reshape(3, 4)
    keep = z.copy()
    assert np.array_equal(C._values_into(f, z), f(keep)) and np.array_equal(z, keep)


def test_smooth_moments_are_the_rows_sums_of_the_values() -> None:
    f = C.fast(get_function("softplus"))
    pts = np.linspace(-9.0, 9.0, 301)
    x, w = C.gauss_hermite(96)
    ok, want = rows_moments(np.ascontiguousarray(f(pts[:, None] + (1.1 * x)[None, :])), x, w)
    assert ok and np.array_equal(C._smooth_moments(f, f, pts, 1.1, 96), want)


@pytest.mark.parametrize("K", [3, 4, 6])
def test_weighted_sums_are_vhats(K: int) -> None:
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, 2, 2)
    iv = 1.0 / (1.0 + kernels.channel_v(x[:K * K].reshape((K, K)), x[K * K:], mb1, ms2))
    M, v2 = kernels.vhats(iv, w, mb1, ms2, 1.0)
    got_M, got_v2, P = node_sums_k.weighted_sums(w * iv, mb1, ms2, h1)
    assert np.array_equal(got_M, M) and np.array_equal(got_v2, v2)
    ref = np.zeros((K, 2))
    for j in range(w.shape[0]):
        for g in range(K):
            for i in range(2):
                ref[g, i] += w[j] * iv[j] * mb1[j, g] * h1[j, i]
    assert np.array_equal(P, ref)


def test_softplus_values_skip_log1p_only_where_it_is_the_identity() -> None:
    """The registered softplus' values skip log1p where exp(-|z|) < 2^-54 (far out on the
    ladder's wide lines): there log1p(x) is x itself, so the numbers are the plain formula's."""
    x = np.concatenate([[0.0, 5e-324], np.geomspace(1e-320, C.LOG1P_EXACT, 4001)[:-1]])
    assert np.array_equal(np.log1p(x), x)
    f = C.fast(get_function("softplus"))
    z = np.linspace(-900.0, 900.0, 96 * 301).reshape(301, 96)
    z[3, :4] = (-37.5, 37.5, -37.4, 37.4)
    plain = np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))
    assert np.array_equal(C._values_into(f, z.copy()), plain)
    assert np.array_equal(C._values_into(f, z.copy()), f(z.copy()))


@pytest.mark.parametrize("name", ["softplus", "tanh", "erf"])
def test_smooth_moments_by_blocks_are_the_one_block_numbers(name: str, monkeypatch) -> None:
    """``_smooth_moments`` takes its shifts in blocks of SHIFT_BLOCK (each row's sums are its
    own): the same numbers as one block of every shift, across block edges."""
    fn = get_function(name)
    f = C.fast(fn)
    pts = np.linspace(-150.0, 150.0, 2 * C.SHIFT_BLOCK + 37)
    got = C._smooth_moments(fn, f, pts, 3.37, 96)
    monkeypatch.setattr(C, "SHIFT_BLOCK", 10**9)
    assert np.array_equal(got, C._smooth_moments(fn, f, pts, 3.37, 96))


def test_target_tables_by_blocks_are_the_one_block_numbers(monkeypatch) -> None:
    """``target_tables`` takes the kappa nodes in blocks of TARGET_CHUNK values (at least 256
    rows): a lambdified target (``_on_grid``) and a rotated callable give the numbers of one block
    to round-off of the BLAS sums (bit for bit on the machine the blocks were measured on)."""
    from asymptotics.spiked.problem import resolve_target

    g, k, _ = resolve_target("z1*z2 + tanh(z1)")
    Q = np.array([[0.8, -0.6], [0.6, 0.8]])

    def rotated(Z: np.ndarray) -> np.ndarray:
        return g(np.asarray(Z) @ Q.T)

    rotated.k = 2  # type: ignore[attr-defined]
    kap = C.tensor_rule(2, 183)[0]  # (3173 nodes: two blocks of the lambdified target)
    G = np.array([[0.5, 0.1], [0.2, 0.6]])
    for target, deg in ((g, (None, 1)), (rotated, None)):
        got = C.target_tables(target, k, kap, G, None, deg)
        monkeypatch.setattr(C, "TARGET_CHUNK", 2_000_000)
        ref = C.target_tables(target, k, kap, G, None, deg)
        monkeypatch.undo()
        for a, b in zip(got, ref, strict=True):
            assert np.allclose(a, b, rtol=1e-14, atol=1e-15 * np.max(np.abs(b)))
