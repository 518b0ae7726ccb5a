"""The Schur route's inverse by potri and its reused scratch array (asymptotics/network/schur.py,
docs/DERIVATIONS.md §9.7): the blocks of ``S^-1`` against numpy's dense inverse of the same
``S``, the traces with and without the scratch bit for bit, and no returned array aliasing the
scratch (a later call leaves an earlier result unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network import schur


def _case(K: int, c: int, B: int = 3, n: int = 7, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.3, 2.0, (B, n))
    X = rng.standard_normal((B, K - c, n, 2 * n))
    sig = np.einsum("bgik,bgjk->bgij", X, X) / (2 * n) + 0.2 * np.eye(n)
    rest = np.linalg.inv(sig)
    C = rng.standard_normal((K, K))
    vp = C @ C.T / K + 0.1 * np.eye(K)
    Dp = rng.uniform(0.5, 2.0, K)
    return vp, Dp, s, rest, c


def _dense_S(vp, Dp, s, rest, c) -> np.ndarray:
    """The Schur complement of the base class, formed densely (module docstring)."""
    B, n = s.shape
    m = vp.shape[0] - c
    out = np.zeros((B, m * n, m * n))
    for b in range(B):
        P = np.zeros((c * n, c * n))
        for f in range(c):
            for h in range(c):
                P[f * n:(f + 1) * n, h * n:(h + 1) * n] = vp[f, h] * np.eye(n)
            P[f * n:(f + 1) * n, f * n:(f + 1) * n] += np.diag(1.0 / (Dp[f] * s[b]))
        FR = np.kron(vp[:c, c:], np.eye(n))
        RR = np.kron(vp[c:, c:], np.eye(n))
        for g in range(m):
            RR[g * n:(g + 1) * n, g * n:(g + 1) * n] += rest[b, g] / Dp[c + g]
        out[b] = RR - FR.T @ np.linalg.solve(P, FR)
    return out


@pytest.mark.parametrize("K,c", [(2, 1), (3, 2), (3, 1)])
def test_full_inverse_is_the_dense_inverse(K: int, c: int) -> None:
    vp, Dp, s, rest, c = _case(K, c)
    B, n = s.shape
    m = K - c
    work = np.empty((B, n, n))
    _, _, G = schur.schur(vp, Dp, s, rest, c, full=True, work=work)
    ref = np.linalg.inv(_dense_S(vp, Dp, s, rest, c))
    got = G.reshape(B, m * n, m * n)
    assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref))
    assert np.array_equal(got, np.swapaxes(got, 1, 2))  # symmetric exactly (one triangle)


@pytest.mark.parametrize("K,c", [(2, 1), (3, 2)])
def test_scratch_changes_no_bit_and_is_not_aliased(K: int, c: int) -> None:
    vp, Dp, s, rest, c = _case(K, c, seed=1)
    B, n = s.shape
    work = np.empty((B, n, n))
    t0 = schur.traces(vp, Dp, s, rest, c)
    t1 = schur.traces(vp, Dp, s, rest, c, work)
    assert np.array_equal(t0, t1)
    W1 = schur.wfull(vp, Dp, s, rest, c, work=work)
    W1c = W1.copy()
    schur.wfull(2.0 * vp, Dp, s, rest, c, work=work)  # overwrites the scratch
    schur.traces(vp, 0.5 * Dp, s, rest, c, work)
    assert np.array_equal(W1, W1c)
    assert np.array_equal(W1, schur.wfull(vp, Dp, s, rest, c))
