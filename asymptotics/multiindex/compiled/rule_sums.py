"""One step's node sums of several rules on the same nodes in one pass (docs/THEORY.md §12.4).

A lattice is accepted when its state agrees with a sub-rule's (``step_rules.spike_rule``): the
sums of ``coefficients.step_kernels.node_sums`` over the rule and over one or two sub-rules
(rows of the same node arrays, other weights). Called one rule at a time these are one pass
over the nodes' arrays each (a sub-rule's rows are spread over all of them: as much memory
read as the whole rule). :func:`rules_sums` takes every rule's sums in one pass: per rule the
same terms (its weight times the node's values, formed as ``_node_sums`` forms them), summed in
the same order (blocks of ``SUM_BLOCK`` of that rule's nodes, added with Neumaier's
compensation), so each rule's sums are ``_node_sums``' bit for bit."""

from __future__ import annotations

import numpy as np

from asymptotics.coefficients.step_kernels import SUM_BLOCK
from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel


@kernel(cache=True, error_model="numpy")
def _flush(tot: np.ndarray, comp: np.ndarray, blk: np.ndarray) -> None:
    """Kernel: a block's sums ``blk`` added to ``tot`` with Neumaier's compensation ``comp``."""
    for p in range(blk.shape[0]):
        t = tot[p] + blk[p]
        if abs(tot[p]) >= abs(blk[p]):
            comp[p] += (tot[p] - t) + blk[p]
        else:
            comp[p] += (blk[p] - t) + tot[p]
        tot[p] = t
        blk[p] = 0.0


@kernel(cache=True, error_model="numpy")
def _rules_sums(U: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray, e0: np.ndarray,
                e1: np.ndarray, e2: np.ndarray, w: np.ndarray, ws: np.ndarray, idx: np.ndarray,
                xs: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Kernel: per rule p (``full[p]``: every node, weights ``w[ws[p]:ws[p] + n]``; else the
    ascending rows ``idx[xs[p]:xs[p + 1]]`` with weights ``w[ws[p]:...]``) the flat sums of
    ``step_kernels._node_sums`` (rules, q)."""
    n, r, K, m = U.shape[0], U.shape[1], m1.shape[1], e1.shape[1]
    P = full.shape[0]
    q = K * r + K * m + 2 * K + K * K
    tot, comp, blk = np.zeros((P, q)), np.zeros((P, q)), np.zeros((P, q))
    ptr, cnt = np.zeros(P, np.int64), np.zeros(P, np.int64)
    for x in range(n):
        for p in range(P):
            if full[p]:
                wi = w[ws[p] + x]
            else:
                k = xs[p] + ptr[p]
                if k >= xs[p + 1] or idx[k] != x:
                    continue
                wi = w[ws[p] + ptr[p]]
                ptr[p] += 1
            b = blk[p]
            s, nz, o = wi * e0[x], wi * e2[x], 0
            for g in range(K):
                a = s * m1[x, g]
                for j in range(r):
                    b[o + j] += a * U[x, j]
                o += r
            for g in range(K):
                a = wi * m1[x, g]
                for j in range(m):
                    b[o + j] += a * e1[x, j]
                o += m
            for g in range(K):
                b[o + g] += s * m2[x, g]
                b[o + K + g] += nz * v[x, g]
            o += 2 * K
            for g in range(K):
                a = m1[x, g] * nz
                for h in range(K):
                    b[o + g * K + h] += a * m1[x, h]
            cnt[p] += 1
            if cnt[p] == SUM_BLOCK:
                _flush(tot[p], comp[p], b)
                cnt[p] = 0
    for p in range(P):
        if cnt[p] > 0:
            _flush(tot[p], comp[p], blk[p])
    return tot + comp


def rules_sums(U: np.ndarray, rules: list[tuple[np.ndarray, np.ndarray | None]], m1: np.ndarray,
               m2: np.ndarray, v: np.ndarray, e0: np.ndarray, e1: np.ndarray, e2: np.ndarray
               ) -> list[tuple] | None:
    """``step_kernels.node_sums(U, w, m1, m2, v, e0, e1, e2, idx)`` for every rule ``(w, idx)``
    of ``rules`` (idx None: every node; else ascending rows) from one pass over the nodes; None
    while the kernel is not compiled (its compilation queued) or a rule's rows do not ascend."""
    arrs = tuple((np.asarray if i in (4, 5) else np.ascontiguousarray)(x, dtype=np.float64)
                 for i, x in enumerate((U, m1, m2, v, e0, e1, e2)))
    n = arrs[0].shape[0]
    full = np.array([i is None for _, i in rules], dtype=np.bool_)
    idxs = [np.ascontiguousarray(i, dtype=np.int64) for _, i in rules if i is not None]
    if n == 0 or any(i.shape[0] and np.any(np.diff(i) <= 0) for i in idxs) or any(
            np.shape(w)[0] != (n if i is None else len(i)) for w, i in rules):
        return None
    w = np.concatenate([np.asarray(x, dtype=np.float64) for x, _ in rules])
    ws = np.cumsum([0] + [np.shape(x)[0] for x, _ in rules])[:-1].astype(np.int64)
    idx = np.concatenate(idxs) if idxs else np.zeros(0, np.int64)
    xs = np.zeros(len(rules) + 1, np.int64)
    for p, (_, i) in enumerate(rules):
        xs[p + 1] = xs[p] + (0 if i is None else len(i))
    args = (*arrs, w, ws, idx, xs, full)
    tiny = (*(x[:1] for x in arrs), w[:1], np.zeros(1, np.int64), np.zeros(0, np.int64),
            np.zeros(2, np.int64), np.ones(1, np.bool_))
    if not coldstart.kernel_ready(_rules_sums, args, lambda: _rules_sums(*tiny),
                                  compile_mode_ready=True):
        return None
    out = _rules_sums(*args)
    r, K, m = U.shape[1], m1.shape[1], e1.shape[1]
    res = []
    for row in out:
        A, B, em2, nv, mm = np.split(row, np.cumsum([K * r, K * m, K, K]))
        res.append((A.reshape(K, r), B.reshape(K, m), em2, nv, mm.reshape(K, K)))
    return res
