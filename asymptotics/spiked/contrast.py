"""The jump at p = infinity of K >= 2 groups (THEORY.md §10.6): the status of a solved point
whose mean channel leans on the groups' contrast, a direction of their mean features too weak
for any accessible width."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asymptotics.core import group_checks
from asymptotics.core.coldstart import kernel
from asymptotics.equations.solver import Status
from asymptotics.spiked.kernels import channel_v

if TYPE_CHECKING:
    from asymptotics.spiked.problem import SpikedProblem


def contrast_status(prob: SpikedProblem, alpha: float, v: np.ndarray,
                    status: Status, svd: tuple | None = None) -> tuple[Status | str, str]:
    """K >= 2 groups at p = infinity: ``("needs_width", reason)`` where the mean channel uses a
    direction of the groups' mean features so weak that only networks wider than
    :data:`~asymptotics.core.group_checks.MAX_LIMIT_WIDTH` reach the limit (the groups'
    contrast channel opened by a tiny loading difference, THEORY.md §10.6); else unchanged.
    ``svd``: the mean design's (singular values, the target's power along them, its total
    power) at (V1, V2) = v, as ``anderson.solve_point`` returns them (else computed here)."""
    t = prob.tables
    K = prob.fractions.shape[0]
    if svd is None:
        finite, s, power, total = design_svd(v, t.weights, t.mu0, t.mub1, t.mus2, t.h)
    else:
        finite, (s, power, total) = True, svd
    need, rel = (group_checks.contrast_need(s, power, total, alpha / prob.beta, v[K * K:])
                 if finite else (0.0, 1.0))
    if need <= group_checks.WARN_LIMIT_WIDTH:
        return status, status.message
    if need <= group_checks.MAX_LIMIT_WIDTH:
        import warnings

        from asymptotics.models.problem import LimitWarning

        warnings.warn("K groups at p = infinity: the groups' contrast channel makes this limit "
                      "the answer only for networks much wider than the width in the result's "
                      "message; pass the width, p=... (the finite-width theory, THEORY.md "
                      "§10.6)", LimitWarning, stacklevel=3)
        return status, (f"{status.message}; the groups' contrast channel: the limit holds for "
                        f"networks much wider than ~{need:.2g} neurons (pass p=...)")
    return "needs_width", (
        f"at p = infinity the groups' contrast channel (a direction of their mean features whose "
        f"eigenvalue is {rel:.2g} of the largest) is unpenalised, and the limit holds only for "
        f"networks wider than ~{need:.2g} neurons: pass the width, p=... (the finite-width "
        "theory, THEORY.md §10.6)")


@kernel(cache=True, error_model="numpy")
def design_svd(v, w, mu0, mb1, ms2, h) -> tuple:
    """Kernel: the mean channel's design (rows sqrt(w/(1+V)) mu0) and target (sqrt(w/(1+V)) h)
    at (V1, V2) = v, as ``group_checks.contrast_width`` reads them: (finite, singular values,
    the target's power along the left singular vectors, its total power)."""
    n, K = mu0.shape
    iv = 1.0 / (1.0 + channel_v(v[:K * K].reshape((K, K)), v[K * K:], mb1, ms2))
    sq = np.sqrt(w * iv)
    design = np.empty((n, K))
    target = sq * h
    finite = True
    for j in range(n):
        if not np.isfinite(target[j]):
            finite = False
        for g in range(K):
            design[j, g] = sq[j] * mu0[j, g]
            if not np.isfinite(design[j, g]):
                finite = False
    if not finite:
        return False, np.zeros(0), np.zeros(0), 0.0
    U, s, _ = np.linalg.svd(design, full_matrices=False)
    power = (U.T @ target) ** 2
    return True, s, power, float(target @ target)
