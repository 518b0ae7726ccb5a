"""The piecewise Chebyshev series of the steps' xi-moments summed into their place
(docs/THEORY.md §12.4).

:func:`chebyshev_pieces` (``xi_lines.on_pieces``' interpolants) sums a piecewise Chebyshev
series (up to four columns at a time) at many points by Clenshaw's recurrence
(:func:`clenshaw_into`), the values written where their caller keeps them (:class:`Dest`: an
array's flat buffer, per block of ``n_rows`` points an offset, a row and a column stride), e.g.
four columns of a wider ``(n, q)`` array: no array per four columns, no copy.
:func:`moments_into` sums the xi-moments' four series at every group's shifts straight into
``xi_lines.xi_moments``' (n, K) arrays (F, m1, m2 and Var sigma' formed there): no (n, 4) array
per group, no copies into their columns. Each value is its point's own recurrence, the same
operations in the same order wherever it is written, so the same numbers bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel

#: points per block of :func:`_numpy_pieces`' basis (its rows stay in cache)
BLOCK = 8192
#: rows per block of :func:`moments_into` (its four arrays' rows there stay in cache)
MOMENT_ROWS = 4096


@dataclass(frozen=True)
class Dest:
    """Where the values of points ``0..`` go: point ``i``, column ``c`` at
    ``flat[offs[i // n_rows] + (i % n_rows) rs + c cs]``."""

    flat: np.ndarray
    offs: np.ndarray
    n_rows: int
    rs: int
    cs: int

    @staticmethod
    def rows(out: np.ndarray, col: int = 0) -> Dest:
        """Columns ``col..`` of the C-contiguous array ``out`` (n, q), point i its row i."""
        return Dest(out.reshape(-1), np.array([col], dtype=np.int64), max(out.shape[0], 1),
                    out.shape[1], 1)

    def at(self, first: int) -> Dest:
        """The same array from column ``first`` on."""
        return Dest(self.flat, self.offs + first * self.cs, self.n_rows, self.rs, self.cs)

    def put(self, vals: np.ndarray, rows: np.ndarray | None = None) -> None:
        """``vals`` (len(rows), q) written at the points ``rows`` (default: all, in order)."""
        if rows is None:  # per block of n_rows points a strided view
            size = self.flat.itemsize
            for b in range(-(-vals.shape[0] // self.n_rows)):
                part = vals[b * self.n_rows:(b + 1) * self.n_rows]
                as_strided(self.flat[self.offs[b]:], part.shape,
                           (self.rs * size, self.cs * size), writeable=True)[...] = part
            return
        rows = np.asarray(rows)
        pos = self.offs[rows // self.n_rows] + (rows % self.n_rows) * self.rs
        self.flat[pos[:, None] + self.cs * np.arange(vals.shape[1])[None, :]] = vals


@kernel(cache=True, error_model="numpy")
def clenshaw_into(coef: np.ndarray, mp: np.ndarray, lo: float, h: float, t: np.ndarray,
                  flat: np.ndarray, offs: np.ndarray, n_rows: int, rs: int, cs: int) -> None:
    """Kernel: the series ``coef`` (pieces, m, nc <= 4) on the pieces [lo + 2 h i,
    lo + 2 h (i + 1)] at the points t, by Clenshaw's recurrence over piece p's first ``mp[p]``
    terms (the rest are zero), written to :class:`Dest`'s places; the points grouped by piece,
    64 at a time side by side (each point's own operations: the numbers of a point alone)."""
    n_pieces, n, nc, nb_max = coef.shape[0], t.shape[0], coef.shape[2], 64
    order = np.empty(n, np.int64)
    first = np.zeros(n_pieces + 1, np.int64)
    for i in range(n):  # the points per piece, then their places (a counting sort)
        first[min(max(int(np.floor((t[i] - lo) / (2.0 * h))), 0), n_pieces - 1) + 1] += 1
    first = np.cumsum(first)
    fill = first[:-1].copy()
    for i in range(n):
        p = min(max(int(np.floor((t[i] - lo) / (2.0 * h))), 0), n_pieces - 1)
        order[fill[p]] = i
        fill[p] += 1
    x, x2, a1, a2 = np.empty(nb_max), np.empty(nb_max), np.empty((4, nb_max)), np.empty((4, nb_max))
    pos = np.empty(nb_max, np.int64)
    one, off0 = offs.shape[0] == 1, offs[0]  # one block: no division per point
    for p in range(n_pieces):
        for s in range(first[p], first[p + 1], nb_max):
            nb = min(nb_max, first[p + 1] - s)
            for q in range(nb):
                i = order[s + q]
                x[q] = min(max((t[i] - (lo + h * (2 * p + 1))) / h, -1.0), 1.0)
                x2[q] = 2.0 * x[q]
                if one:
                    pos[q] = off0 + i * rs
                else:
                    b = i // n_rows
                    pos[q] = offs[b] + (i - b * n_rows) * rs
            a1[:, :nb] = 0.0
            a2[:, :nb] = 0.0
            for j in range(mp[p] - 1, 0, -1):
                for c in range(nc):
                    cj = coef[p, j, c]
                    for q in range(nb):
                        a1[c, q], a2[c, q] = cj + x2[q] * a1[c, q] - a2[c, q], a1[c, q]
            for q in range(nb):
                for c in range(nc):
                    flat[pos[q] + c * cs] = coef[p, 0, c] + x[q] * a1[c, q] - a2[c, q]


@kernel(cache=True, error_model="numpy")
def clenshaw4(coef: np.ndarray, mp: np.ndarray, lo: float, h: float, t: np.ndarray
              ) -> np.ndarray:
    """Kernel: :func:`clenshaw_into` for four columns into a new (n, 4) array."""
    out = np.empty((t.shape[0], 4))
    clenshaw_into(coef, mp, lo, h, t, out.reshape(-1), np.zeros(1, np.int64),
                  max(t.shape[0], 1), np.int64(4), np.int64(1))  # (int64s: Python's signature)
    return out


@kernel(cache=True, error_model="numpy")
def moments_into(coef: np.ndarray, mp: np.ndarray, lo: float, h: float, M: np.ndarray,
                 cols: np.ndarray, F: np.ndarray, m1: np.ndarray, m2: np.ndarray,
                 v: np.ndarray) -> None:
    """Kernel: the xi-moments' series ``coef`` (pieces, m, 4: F, m1, m2, E sigma'^2) at the
    shifts ``M[:, g]`` of the groups g in ``cols``, written to ``F``, ``m1``, ``m2`` (n, K) and
    ``v = max(E sigma'^2 - m1^2, 0)`` as ``xi_lines.xi_moments`` forms them from
    :func:`clenshaw_into`'s values, which are summed here the same way (each value bit for bit;
    no (n, 4) array, no copies). The rows go :data:`MOMENT_ROWS` at a time (their values'
    places stay in cache), grouped by piece within them."""
    n_pieces, n, nb_max, rows = coef.shape[0], M.shape[0], 64, MOMENT_ROWS
    order, pc = np.empty(rows, np.int64), np.empty(rows, np.int64)
    first, fill = np.zeros(n_pieces + 1, np.int64), np.zeros(n_pieces, np.int64)
    x, x2, a1, a2 = np.empty(nb_max), np.empty(nb_max), np.empty((4, nb_max)), np.empty((4, nb_max))
    for g in cols:
        for r0 in range(0, n, rows):
            r1 = min(r0 + rows, n)
            first[:] = 0
            for i in range(r0, r1):  # the rows per piece (a counting sort)
                p = min(max(int(np.floor((M[i, g] - lo) / (2.0 * h))), 0), n_pieces - 1)
                pc[i - r0] = p
                first[p + 1] += 1
            for p in range(n_pieces):
                first[p + 1] += first[p]
                fill[p] = first[p]
            for i in range(r0, r1):
                order[fill[pc[i - r0]]] = i
                fill[pc[i - r0]] += 1
            for p in range(n_pieces):
                for s in range(first[p], first[p + 1], nb_max):
                    nb = min(nb_max, first[p + 1] - s)
                    for q in range(nb):
                        x[q] = min(max((M[order[s + q], g] - (lo + h * (2 * p + 1))) / h, -1.0),
                                   1.0)
                        x2[q] = 2.0 * x[q]
                    a1[:, :nb] = 0.0
                    a2[:, :nb] = 0.0
                    for j in range(mp[p] - 1, 0, -1):
                        for c in range(4):
                            cj = coef[p, j, c]
                            for q in range(nb):
                                a1[c, q], a2[c, q] = cj + x2[q] * a1[c, q] - a2[c, q], a1[c, q]
                    for q in range(nb):
                        i = order[s + q]
                        F[i, g] = coef[p, 0, 0] + x[q] * a1[0, q] - a2[0, q]
                        d = coef[p, 0, 1] + x[q] * a1[1, q] - a2[1, q]
                        m1[i, g] = d
                        m2[i, g] = coef[p, 0, 2] + x[q] * a1[2, q] - a2[2, q]
                        e = (coef[p, 0, 3] + x[q] * a1[3, q] - a2[3, q]) - d * d
                        v[i, g] = e if (e >= 0.0 or e != e) else 0.0  # np.maximum(e, 0.0)


def chebyshev_pieces(coef: np.ndarray, lo: float, h: float, t: np.ndarray,
                     mp: np.ndarray | None = None) -> np.ndarray:
    """The piecewise Chebyshev series ``coef`` (pieces, m, q) on the pieces [lo + 2 h i,
    lo + 2 h (i + 1)] at the points t (n): (n, q) (``mp``: each piece's terms, those beyond
    zero). Once compiled, four (three) columns at a time by ``compiled.clenshaw.clenshaw_into``
    straight into their columns of the one (n, q) array (one or two by numpy's); else
    :func:`_numpy_pieces`."""
    n_pieces, m, q = coef.shape
    n = t.shape[0]
    mp = np.full(n_pieces, m, dtype=np.int64) if mp is None else mp.astype(np.int64)
    t = np.ascontiguousarray(t, dtype=np.float64)
    tiny = (np.zeros((1, m, 4)), mp[:1], 0.0, 1.0, t[:1], np.empty(4), np.zeros(1, np.int64),
            1, 1, 1)
    if not (n > 0 and q >= 3 and coldstart.kernel_ready(
            clenshaw_into, tiny, lambda: clenshaw_into(*tiny), compile_mode_ready=True)):
        return _numpy_pieces(coef, lo, h, t, mp)
    out = np.empty((n, q))
    dest = Dest.rows(out)
    for i in range(0, q, 4):
        if q - i >= 3:
            part = dest.at(i)
            clenshaw_into(np.ascontiguousarray(coef[:, :, i:i + 4], dtype=np.float64), mp,
                          float(lo), float(h), t, part.flat, part.offs, part.n_rows, part.rs,
                          part.cs)
        else:  # one or two columns: numpy's
            dest.at(i).put(_numpy_pieces(coef[:, :, i:], lo, h, t, mp))
    return out


def _numpy_pieces(coef: np.ndarray, lo: float, h: float, t: np.ndarray, mp: np.ndarray
                  ) -> np.ndarray:
    """:func:`chebyshev_pieces` by numpy: the points sorted by piece, per block of
    :data:`BLOCK` of them the basis by its recurrence, one product per piece."""
    n_pieces, m, q = coef.shape
    n = t.shape[0]
    piece = np.clip(np.floor((t - lo) / (2.0 * h)), 0, n_pieces - 1).astype(np.int64)
    order = np.argsort(piece, kind="stable")
    ps = piece[order]
    x = np.clip((t[order] - (lo + h * (2 * ps + 1))) / h, -1.0, 1.0)
    out = np.empty((n, q))
    bounds = np.searchsorted(ps, np.arange(n_pieces + 1))
    T = np.empty((m, min(BLOCK, n)))
    for a0 in range(0, n, BLOCK):
        b0 = min(a0 + BLOCK, n)
        Tb = T[:, :b0 - a0]
        Tb[0] = 1.0
        if m > 1:
            Tb[1] = x[a0:b0]
        x2 = 2.0 * x[a0:b0]
        for j in range(2, m):
            np.multiply(x2, Tb[j - 1], out=Tb[j])
            Tb[j] -= Tb[j - 2]
        for i in range(ps[a0], ps[b0 - 1] + 1):
            a, b = max(bounds[i], a0), min(bounds[i + 1], b0)
            if b > a:
                out[order[a:b]] = Tb[:, a - a0:b - a0].T @ coef[i]
    return out
