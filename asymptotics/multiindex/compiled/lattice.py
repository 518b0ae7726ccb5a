"""The kept nodes of the steps' product lattices without their full grids (docs/THEORY.md §12.4).

``step_rules.lattice_checks`` keeps the nodes of a product rule on a grid of per-axis nodes
whose weight (the product ``((w_0 w_1) w_2) ...`` of the axes' weights, C order) is above
``PRUNE`` times the largest, and reads its sub-rules' weights (other per-axis weights, the same
products) at those nodes. :func:`kept_nodes` does that in one compiled pass (counted, then
filled) with no array of the grid's size (up to a few hundred thousand products per rule):
the same products in the same order, so the same numbers bit for bit (counted in one call, written
in a second to buffers kept per thread, ``core.meta.scratch``). The largest product is
the product of the axes' largest weights (weights >= 0: rounding is monotone, so that product
is exact and attained)."""

from __future__ import annotations

from functools import reduce

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel
from asymptotics.core.meta import scratch


@kernel(cache=True, error_model="numpy")
def _kept(axes: np.ndarray, lens: np.ndarray, w: np.ndarray, thr: np.ndarray, last: np.ndarray,
          either: int, pts: np.ndarray, vals: np.ndarray) -> int:
    """Kernel: the number n of nodes of the grid ``axes[d, :lens[d]]`` whose product of rule
    0's weights ``w[0]`` exceeds ``thr[0]`` (or rule ``either``'s its ``thr``; -1: none); with
    ``pts`` (n, r) and ``vals`` (rules, n) given (not empty) also those nodes, in C order, and
    every rule's product there written to them; ``last[p]``: rule p's largest weight on the
    last axis (a row of the other axes below the threshold with it is skipped whole)."""
    r, nr = axes.shape[0], w.shape[0]
    m = lens[r - 1]
    rows = 1
    for d in range(r - 1):
        rows *= lens[d]
    wl = np.empty((nr, m))  # the last axis' weights per rule (contiguous)
    for p in range(nr):
        for j in range(m):
            wl[p, j] = w[p, r - 1, j]
    w0, t0 = wl[0], thr[0]
    alt = max(either, 0)
    wa, ta = wl[alt], thr[alt]
    pre = np.empty(nr)
    idx = np.zeros(max(r - 1, 1), dtype=np.int64)
    sweep = 1 if pts.shape[0] > 0 else 0  # 0: count the nodes, 1: write them
    n = 0
    for _ in range(rows):
        for p in range(nr):
            acc = 1.0  # 1 * w is w: the products ((w_0 w_1) w_2) ... of numpy's outer
            for d in range(r - 1):
                acc = acc * w[p, d, idx[d]]
            pre[p] = acc
        p0, pa = pre[0], pre[alt]
        if p0 * last[0] > t0 or (either >= 0 and pa * last[alt] > ta):
            for j in range(m):
                if p0 * w0[j] > t0 or (either >= 0 and pa * wa[j] > ta):
                    if sweep == 1:
                        for d in range(r - 1):
                            pts[n, d] = axes[d, idx[d]]
                        pts[n, r - 1] = axes[r - 1, j]
                        for p in range(nr):
                            vals[p, n] = pre[p] * wl[p, j]
                    n += 1
        d = r - 2  # the next index of the other axes in C order
        while d >= 0:
            idx[d] += 1
            if idx[d] < lens[d]:
                break
            idx[d] = 0
            d -= 1
    return n


def kept_nodes(axes: list[np.ndarray], rules: list[list[np.ndarray]], prune: float,
               either: int | None) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(nodes (n, r), [each rule's weights at them])``: the grid's nodes (C order) where rule
    0's product of the axes' weights ``rules[0]`` exceeds ``prune`` times its largest (or rule
    ``either``'s), by :func:`_kept` (once compiled) or numpy's outer products."""
    r, L = len(axes), max(len(x) for x in axes)
    tops = [reduce(lambda a, b: a * b, [float(np.max(x)) for x in ws]) for ws in rules]
    thr = np.array([prune * t for t in tops])
    alt = -1 if either is None else int(either)
    nr, none = len(rules), np.empty((0, r))
    args = (np.zeros((r, L)), np.array([len(x) for x in axes], dtype=np.int64),
            np.zeros((nr, r, L)), thr, np.array([float(np.max(ws[-1])) for ws in rules]), alt)
    for d, x in enumerate(axes):
        args[0][d, :len(x)] = x
        for p, ws in enumerate(rules):
            args[2][p, d, :len(x)] = ws[d]
    tiny = (args[0][:, :1], np.ones(r, dtype=np.int64), args[2][:, :, :1], *args[3:], none,
            np.empty((nr, 0)))
    if coldstart.kernel_ready(_kept, (*args, none, np.empty((nr, 0))), lambda: _kept(*tiny),
                              compile_mode_ready=True):
        n = _kept(*args, none, np.empty((nr, 0)))  # counted, then written to kept buffers
        pts, vals = scratch("pts", (n, r)), scratch("vals", (nr, n))
        if n:
            _kept(*args, pts, vals)
        return pts, list(vals)
    prods = [reduce(np.multiply.outer, ws) for ws in rules]  # each rule on the whole grid
    on = prods[0] > prune * prods[0].max()
    if either is not None:
        on |= prods[either] > prune * prods[either].max()
    pts = np.empty((int(np.count_nonzero(on)), r))
    for j, x in enumerate(axes):
        pts[:, j] = np.broadcast_to(x.reshape((-1,) + (1,) * (r - 1 - j)), on.shape)[on]
    return pts, [p[on] for p in prods]
