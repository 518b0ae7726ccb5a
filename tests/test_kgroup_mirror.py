"""The K-group tables' mirrored lines and their one-kernel finish (docs/THEORY.md §10.2):
a tanh, erf or softplus line's pairs of shifts (p, -p) evaluated once (``spiked.coefficients.
_smooth_moments`` with ``mirror``) against every shift evaluated on its own, bit for bit; the
mirrored Chebyshev points of ``line_moments.on_line``; the features' scale, flush and mus2 of
``_finish_features`` against the numpy evaluation they replace, bit for bit; the stacked
pieces of a line's last range reused."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import line_moments as L
from asymptotics.coefficients.functions import get_function
from asymptotics.spiked import coefficients as C


def _piece_points(rng: np.random.Generator, h: float, lo: int, hi: int) -> np.ndarray:
    """The points ``on_line`` evaluates on the pieces lo..hi with ``mirror`` (shuffled)."""
    idx = np.arange(lo, hi + 1).astype(np.float64)
    x = np.concatenate([L.mirrored_points(L.M_CHEB), L.CHECKS])
    pts = ((h * (2 * idx + 1))[:, None] + h * x[None, :]).ravel()
    return pts[rng.permutation(pts.shape[0])]


@pytest.mark.parametrize("name", ["tanh", "softplus", "erf"])
def test_mirrored_pairs_are_each_shift_s_own_sums(name: str) -> None:
    fn = get_function(name)
    f = C.fast(fn)
    assert C._mirrored(f, 96)
    rng = np.random.default_rng(len(name))
    paired = 0
    for trial in range(40):
        h = float(rng.uniform(0.2, 1.0))
        lo = -int(rng.integers(1, 20))
        pts = _piece_points(rng, h, lo, -lo - 1 + int(rng.integers(-2, 3)))
        if trial % 4 == 0:  # repeated shifts, zeros, shifts with no partner, wide lines
            pts = np.concatenate([pts, -pts[:9], pts[:3], [0.0, -0.0, 41.5, -0.3]])
        s = float(rng.uniform(0.5, 1.5))
        want = C._smooth_moments(fn, f, pts, s, 96)
        got = C._smooth_moments(fn, f, pts, s, 96, True)
        assert np.array_equal(want.view(np.int64), got.view(np.int64))
        paired += int(np.sum(np.isin(pts, -pts[pts > 0])))
    assert paired > 1000  # (the pairs were there)


def test_only_exact_mirrors_are_taken() -> None:
    assert not C._mirrored(C.fast(get_function("erf(z-1)")), 96)
    assert not C._mirrored(get_function("relu"), 96)
    assert not C._mirrored(get_function("tanh(z) + 0.1*z"), 96)
    x = L.mirrored_points(L.M_CHEB)
    cos = L.chebyshev_basis(L.M_CHEB)[0]
    assert np.array_equal(x, -x[::-1]) and np.max(np.abs(x - cos)) <= 4.5e-16
    assert np.array_equal(x[:L.M_CHEB // 2], cos[:L.M_CHEB // 2])


@pytest.mark.parametrize("name", ["tanh", "softplus", "erf"])
def test_a_mirrored_line_is_the_direct_rule(name: str) -> None:
    """The moments on a line (mirrored points for tanh and softplus) against the direct rule at
    every shift, to the line's own tolerance, and the stacked pieces of its range reused."""
    fn = get_function(name)
    rng = np.random.default_rng(7)
    kap = C.tensor_rule(2, 24)[0]
    t = kap @ rng.standard_normal(2)
    L.clear_cache()
    got = C.moments(fn, t, 0.9, True, C.LADDER_GAIN, **C.INNER_NODES)
    want = C.moments(fn, t, 0.9, False, **C.INNER_NODES)
    scale = np.sqrt(np.max(want[:, 2]))
    assert np.max(np.abs(got[:, :2] - want[:, :2])) <= 1e-12 * scale
    assert np.max(np.abs(got[:, 2] - want[:, 2])) <= 1e-12 * scale ** 2
    keys = [k for k in L._PIECES if k[0] == "gaussian"]
    assert len(keys) == 1 and keys[0][-1] == "mirror"
    assert L._PIECES[keys[0]]["stack"][2].shape[1:] == (L.M_CHEB, 3)
    again = C.moments(fn, t, 0.9, True, C.LADDER_GAIN, **C.INNER_NODES)  # (the stack)
    assert np.array_equal(again, got)
    wider = np.concatenate([t, [t.max() + 3.0]])  # (a wider range: stacked afresh)
    assert np.array_equal(C.moments(fn, wider, 0.9, True, C.LADDER_GAIN,
                                    **C.INNER_NODES)[:-1], got)
    L.clear_cache()


def _flush_columns(values: np.ndarray, scale: np.ndarray, rel: float = 1e-12) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    for c in range(out.shape[1]):
        big = 0.0
        for j in range(out.shape[0]):
            big = max(big, abs(out[j, c]))
            if abs(out[j, c]) <= 1e-15 * scale[c]:
                out[j, c] = 0.0
        if big <= rel * scale[c]:
            out[:, c] = 0.0
    return out


def _finish_numpy(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numpy evaluation ``feature_tables`` had of raw (3, n, K)."""
    n, K = raw.shape[1], raw.shape[2]
    scale = (np.max(raw[2], axis=0) if n else np.zeros(K)) + 1e-300
    root = np.sqrt(scale)
    mu0, mb1 = _flush_columns(raw[0], root), _flush_columns(raw[1], root)
    ms2 = np.maximum(_flush_columns(raw[2] - raw[0] ** 2 - raw[1] ** 2, scale), 0.0)
    return mu0, mb1, ms2


def test_the_features_finish_is_numpy_s() -> None:
    rng = np.random.default_rng(3)
    for trial in range(600):
        n, K = int(rng.integers(0, 30)), int(rng.integers(1, 5))
        raw = rng.standard_normal((3, n, K)) * 10.0 ** rng.uniform(-20, 2, size=(3, 1, K))
        raw[2] = np.abs(raw[2]) + raw[0] ** 2 * (trial % 2)
        if trial % 7 == 0 and n:
            raw[rng.integers(3), rng.integers(n), rng.integers(K)] = np.nan
        if trial % 5 == 0 and n:
            raw[:, rng.integers(n), rng.integers(K)] = rng.choice([0.0, -0.0, 1e-300, -1e-17])
        if trial % 11 == 0:  # (mus2 of round-off: flushed, negative entries to zero)
            raw[2] = raw[0] ** 2 + raw[1] ** 2 + raw[2] * 1e-17
        want = _finish_numpy(raw)
        got = C._finish_features(np.ascontiguousarray(raw.transpose(2, 1, 0)))
        for a, b in zip(want, got, strict=True):
            assert a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def test_without_mirror_a_line_is_the_plain_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MIRROR = False``: a tanh line on the plain Chebyshev points and checks, its shifts
    evaluated one by one (the numbers of the line before the mirror, bit for bit)."""
    fn = get_function("tanh")
    t = C.tensor_rule(2, 16)[0] @ np.array([0.7, -1.1])
    monkeypatch.setattr(C, "MIRROR", False)
    L.clear_cache()
    got = C.moments(fn, t, 0.8, True, C.LADDER_GAIN, **C.INNER_NODES)
    assert not any(k[-1] == "mirror" for k in L._PIECES)
    L.clear_cache()
    want = L.on_line(lambda p: C._smooth_moments(fn, fn, p, 0.8, 96), t, 0.8, key=("plain",),
                     moments=True, gain=C.LADDER_GAIN)
    assert np.array_equal(got, want)
    L.clear_cache()


def test_a_piece_that_fails_its_checks_takes_the_direct_rule_at_its_shifts_only() -> None:
    """relu's moments at t < -12 s (beyond the split rule's half-width: exactly 0, a cliff from
    ~1e-33) fail their pieces' checks: those shifts take the direct rule, the others the
    interpolant of their accepted pieces (the whole line went direct before)."""
    fn = get_function("relu")
    rng = np.random.default_rng(5)
    t = np.sort(rng.uniform(-15.5, 15.5, 4000))
    L.clear_cache()
    got = C.moments(fn, t, 1.04, True, C.LADDER_GAIN, **C.INNER_NODES)
    want = C.moments(fn, t, 1.04, False, **C.INNER_NODES)
    (key,) = L._PIECES
    store = L._PIECES[key]
    bad = sorted(i for i in store if isinstance(i, int) and store[i] is None)
    assert 0 < len(bad) < sum(isinstance(i, int) for i in store)
    piece = np.floor(t / 2.0).astype(np.int64)  # (h = 1)
    direct = np.isin(piece, bad)
    assert 0 < direct.sum() < t.shape[0] and np.array_equal(got[direct], want[direct])
    scale = np.sqrt(np.max(want[:, 2]))
    assert np.max(np.abs(got[:, :2] - want[:, :2])) <= 1e-12 * scale
    assert np.max(np.abs(got[:, 2] - want[:, 2])) <= 1e-12 * scale ** 2
    L.clear_cache()


def _numpy_pairs(pts: np.ndarray) -> tuple:
    """The pairs of ``_smooth_moments`` as numpy found them before ``mirror_pairs``."""
    srt = np.argsort(pts)
    ps = pts[srt]
    at = np.minimum(np.searchsorted(ps, -ps), pts.shape[0] - 1)
    hit = (ps[at] == -ps) & (ps < 0.0)
    twin, first = srt[hit], srt[at[hit]]
    lone = np.ones(pts.shape[0], dtype=np.bool_)
    lone[twin] = lone[first] = False
    return first, twin, np.flatnonzero(lone)


def test_mirror_pairs_are_numpy_s_pairs() -> None:
    """The kernel's pairs (first, twin) and unpaired shifts against numpy's search, as values
    (each row's sums are its own), on pieces' points, repeats, zeros and unpaired shifts."""
    rng = np.random.default_rng(3)
    cases = [np.zeros(0), np.array([0.0, -0.0]), np.array([-1.5]), np.array([2.0, -2.0, -2.0])]
    for _ in range(30):
        pts = _piece_points(rng, float(rng.uniform(0.2, 1.0)), -int(rng.integers(1, 12)),
                            int(rng.integers(-3, 12)))
        cases.append(np.concatenate([pts, -pts[:7], pts[:4], [0.0, -0.0, 41.5, -0.3]]))
        cases.append(pts)
    found = 0
    for pts in cases:
        first, twin, lone = C.mirror_pairs(pts)
        want = _numpy_pairs(pts)
        assert np.array_equal(pts[twin], -pts[first]) and np.all(pts[twin] < 0.0)
        # (which of repeated shifts pairs depends on the sort of equal values: the same values)
        assert np.array_equal(np.sort(pts[twin]), np.sort(pts[want[1]]))
        assert np.array_equal(np.sort(pts[lone]), np.sort(pts[want[2]]))
        assert np.array_equal(np.sort(np.concatenate([first, twin, lone])),
                              np.arange(pts.shape[0])) or len(set(first.tolist())) < len(first)
        found += twin.shape[0]
    assert found > 5000


@pytest.mark.parametrize("mirror", [False, True])
def test_piece_offsets_give_on_line_s_points(mirror: bool) -> None:
    """``on_line``'s points and checks of new pieces from ``piece_offsets``: the numbers of the
    construction it replaced (broadcast points, checks negated left of 0 when mirrored), bit
    for bit, and the mirrored pieces' points exact negatives of each other."""
    h = 0.83
    index = np.array([-4, -3, -1, 0, 2, 3], dtype=np.int64)
    centres = h * (2 * index.astype(np.float64) + 1)
    x = L.mirrored_points(L.M_CHEB) if mirror else L.chebyshev_basis(L.M_CHEB)[0]
    checks = np.where((index < 0)[:, None] & mirror, -np.asarray(L.CHECKS), np.asarray(L.CHECKS))
    want = (centres[:, None] + h * np.concatenate(
        [np.broadcast_to(x, (index.shape[0], L.M_CHEB)), checks], axis=1)).ravel()
    offsets = L.piece_offsets(L.M_CHEB, mirror)[(index < 0).astype(np.intp)]
    got = (centres[:, None] + h * offsets).ravel()
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.array_equal(offsets[:, L.M_CHEB:], checks)
    rows = got.reshape(index.shape[0], -1)
    if mirror:  # (pieces -4 and 3, -1 and 0: exact negatives, the points in reverse order)
        for a, b in ((0, 5), (2, 3)):
            assert np.array_equal(rows[a, :L.M_CHEB], -rows[b, L.M_CHEB - 1::-1])
            assert np.array_equal(rows[a, L.M_CHEB:], -rows[b, L.M_CHEB:])
