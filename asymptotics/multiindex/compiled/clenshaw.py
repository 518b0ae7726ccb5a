"""The piecewise Chebyshev series of the steps' xi-moments summed into their place
(docs/THEORY.md §12.4).

``xi_lines.chebyshev_pieces`` sums a piecewise Chebyshev series (up to four columns at a time)
at many points by Clenshaw's recurrence (:func:`clenshaw_into`), the values written where
their caller keeps them (:class:`Dest`: an array's flat buffer, per block of ``n_rows`` points
an offset, a row and a column stride), e.g. four columns of a wider ``(n, q)`` array: no array
per four columns, no copy. (A stride between a point's columns is slower: four streams of
writes, where the xi-moments' copy into their ``(4, n, K)`` array per group is sequential.)
Each value is its point's own recurrence, the same operations in the same order wherever it
is written, so the same numbers bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from asymptotics.core.coldstart import kernel


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
                  max(t.shape[0], 1), 4, 1)
    return out
