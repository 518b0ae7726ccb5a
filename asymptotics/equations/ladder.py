"""The quadrature policy of the K-group equations (docs/THEORY.md §10.8), one for every route
(the sRF groups of ``asymptotics.spiked.solve`` and the network's of
``asymptotics.network.solve``): the ladder of kappa rules, the error estimate of successive
converged rules, a point's climb and a curve's rule decided once by probe points. The routes
pass their own solver of one rule (``solve_rung``) and of a curve on one rule (``sweep``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

#: the kappa rules per dimension of the K-group ladder (r >= 2; tensor Gauss-Hermite converges
#: slowly, and not monotonically, where the target is learned almost exactly): climbed until
#: :func:`quadrature_error` is at most QUADRATURE_RTOL (docs/THEORY.md §10.8)
LADDER = {2: (16, 24, 36, 54, 81, 122, 183), 3: (10, 16, 24, 36, 54, 72), 4: (10, 15, 22, 33)}
QUADRATURE_RTOL = 1e-3
#: a risk is settled when each of the last SETTLE_CHANGES changes between successive converged
#: rules is at most QUADRATURE_RTOL / SETTLE_FACTOR (relative to the last risk): two rules that
#: agree by accident (an oscillating sequence crossing its limit) do not settle a point; or when
#: the last change alone is at most QUADRATURE_RTOL / PAIR_FACTOR (two rules agreeing to 1e-5:
#: a point whose integrand the coarse rules already resolve)
SETTLE_CHANGES = 2
SETTLE_FACTOR = 1.0
PAIR_FACTOR = 100.0
#: the probe points of a curve (fractions of its length) that choose its kappa rule
PROBES = (0.0, 0.25, 0.5, 0.75, 1.0)


def ladder(r: int) -> tuple[int, ...]:
    """The kappa rules (nodes per dimension) climbed with ``r`` spikes; () for r = 1 (the
    one-spike rule is used as it is)."""
    return LADDER.get(r, LADDER[4]) if r >= 2 else ()


def quadrature_error(risks: list[float]) -> float:
    """The estimated relative quadrature error of the last of the risks of successive converged
    kappa rules (docs/THEORY.md §10.8): the smaller of SETTLE_FACTOR times the largest of the
    last SETTLE_CHANGES relative changes and PAIR_FACTOR times the last change; inf while there
    are too few rules (NaN if any risk is)."""
    if len(risks) < 2:
        return math.inf
    scale = max(abs(risks[-1]), 1e-300)
    changes = [abs(a - b) / scale for a, b in zip(risks[:-1], risks[1:], strict=True)]
    pair = PAIR_FACTOR * changes[-1]
    if len(changes) < SETTLE_CHANGES:
        return pair
    return min(pair, SETTLE_FACTOR * max(changes[-SETTLE_CHANGES:]))


def climb(solve_rung: Callable[[int], Any], rules: Sequence[int]) -> tuple[Any, int | None]:
    """One point up the ladder ``rules``: ``solve_rung(i)`` solves on rule ``rules[i]``
    (warm-started from the rule before) and returns a result (fields ``converged``, ``risk``,
    ``n_kappa``, ``quadrature_change``, ``status``, ``message``). Returns (result, index of the
    rule it settled on; -1: the equations failed, None: the quadrature was not resolved).
    Settled: the risks of the last SETTLE_CHANGES + 1 successive rules all converged and
    :func:`quadrature_error` <= QUADRATURE_RTOL; a rule that does not converge restarts the
    count, and two successive failures are a failure of the equations, returned as such; a
    point converged on the last rule but never settled is NaN with the reason."""
    risks: list[float] = []
    failed = False
    res = None
    for i, n in enumerate(rules):
        res = solve_rung(i)
        if not res.converged:
            if failed:
                return res, -1
            failed, risks = True, []
            continue
        failed = False
        risks.append(res.risk)
        err = quadrature_error(risks)
        res = replace(res, n_kappa=n, quadrature_change=err)
        if err <= QUADRATURE_RTOL:
            return res, i
    if not res.converged:
        return res, -1
    return replace(res, risk=math.nan, converged=False, status="max_iter", message=(
        f"quadrature not resolved: estimated error {res.quadrature_change:.2g} (relative; inf: "
        f"too few converged rules) at {rules[-1]} kappa nodes per dimension, above "
        f"{QUADRATURE_RTOL:g}; pass a larger n_kappa")), None


def curve_on_ladder(alphas: list[float], rules: Sequence, sweep: Callable[..., list],
                    climb_at: Callable[[float], tuple[Any, int | None]],
                    progress: bool | None, what: str = "spiked curve") -> list:
    """The rule decided once per curve (docs/THEORY.md §10.8): the probe points (:data:`PROBES`)
    climb the ladder as single points do (``climb_at(alpha)``: :func:`climb`, returning the index
    in ``rules`` of the rule it settled on), then every alpha is solved once on the finest rule
    a probe settled on (``sweep(rules[i], progress, (rules[i], error), first, known)``: ``first``
    the probe's solution at alphas[0] (None if it failed), ``known`` {index: the probe's result}
    where a probe settled on that rule, which the sweep may take as that alpha's row), each
    point carrying
    that rule (``n_kappa``) and the largest error estimate of the probes
    (``quadrature_change``). A short curve (at most ``2 len(PROBES)`` points), or one where a
    probe's quadrature is not resolved or every probe's equations fail, climbs point by point
    (each point then is the single point's)."""
    n = len(alphas)
    if n > 2 * len(PROBES):
        at = sorted({round(f * (n - 1)) for f in PROBES})
        probes = [climb_at(alphas[i]) for i in at]
        done = [(res, i) for res, i in probes if i is not None and i >= 0]
        if done and all(i is not None for _, i in probes):
            top = max(i for _, i in done)
            err = max(res.quadrature_change for res, _ in done)
            first = probes[0][0]  # the probe at alphas[0]: the sweep's first start
            # a probe settled on the curve's rule is that alpha's point (no second solve)
            known = {j: res for j, (res, i) in zip(at, probes, strict=True) if i == top}
            return sweep(rules[top], progress, (rules[top], err),
                         first if first.converged else None, known)
    from asymptotics.core.progress import Progress

    with Progress(n, f"{what} (kappa ladder per point)", unit="pt", enabled=progress) as bar:
        return [climb_at(a)[0] for a in bar.iter(alphas)]
