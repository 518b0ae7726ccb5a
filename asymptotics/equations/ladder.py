"""The quadrature policy of the K-group equations (docs/THEORY.md §10.8), one for every route
(the sRF groups of ``asymptotics.spiked.solve`` and the network's of
``asymptotics.network.solve``): the ladder of kappa rules, the error estimate of successive
converged rules, a point's climb and a curve's rule decided once by probe points. The routes
pass their own solver of one rule (``solve_rung``) and of a curve on one rule (``sweep``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
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
#: the second ladder of the sRF groups (docs/DERIVATIONS.md §9.6), climbed where the tensor
#: ladder does not settle: aligned rules (h, n), a trapezoid rule of step h along the sharpest
#: group's loading and n Gauss-Hermite nodes on the other axis, both refined by about 1.4 from
#: rule to rule (two rules that refine one axis only can agree while the other axis is off);
#: pruned as the tensor rules: 1140, 2004, 3624, 6342, 11338 nodes at r = 2; the same rules at
#: r = 3 (n Gauss-Hermite nodes on each of the two other axes): 11640 to 259492 nodes after
#: pruning (515 x 912 = 4.7e5 before: ~15 MB while the last rule is built); r = 4 keeps the
#: tensor ladder alone (its last rule would have 515 x 20 792 = 1.1e7 nodes before pruning)
_ALIGNED_RULES = ((0.14, 12), (0.1, 16), (0.07, 24), (0.05, 36), (0.035, 54))
ALIGNED_LADDER = {2: _ALIGNED_RULES, 3: _ALIGNED_RULES}


def aligned_ladder(r: int) -> tuple[tuple[float, int], ...]:
    """The aligned rules climbed with ``r`` spikes where the tensor ladder does not settle."""
    return ALIGNED_LADDER.get(r, ())


def rule_nodes(rule: int | tuple[float, int] | None) -> int | None:
    """The ``n_kappa`` a result on ``rule`` carries: the nodes per dimension of a tensor rule,
    the Gauss-Hermite nodes of the other axes of an aligned rule (h, n)."""
    return rule[1] if isinstance(rule, tuple) else rule


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


def relabel(res: Any, **changes: Any) -> Any:
    """``dataclasses.replace(res, **changes)``, by the result's own ``with_fields`` where it has
    one (:meth:`asymptotics.core.result.RiskResult.with_fields`: the same record, faster)."""
    with_fields = getattr(res, "with_fields", None)
    return with_fields(**changes) if with_fields is not None else replace(res, **changes)


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
        res = relabel(res, n_kappa=n, quadrature_change=err)
        if err <= QUADRATURE_RTOL:
            return res, i
    if not res.converged:
        return res, -1
    return replace(res, risk=math.nan, converged=False, status="max_iter", message=(
        f"quadrature not resolved: estimated error {res.quadrature_change:.2g} (relative; inf: "
        f"too few converged rules) at {rules[-1]} kappa nodes per dimension, the ladder's "
        f"largest rule, above {QUADRATURE_RTOL:g} (risk_spiked and risk_readout solve on a given "
        "rule: n_kappa=...)")), None


def climb_borrowed(cheap: Callable[[int], Any], full: Callable[[int, Any, bool], Any],
                   rules: Sequence[int], pair: bool = False) -> tuple[Any, int] | None:
    """A point's rule decided by a cheap model that shares the full model's kappa integrand
    (docs/THEORY.md §10.8, §15): ``cheap(i)`` solves the cheap model on ``rules[i]``, climbed by
    :func:`climb`; where it settles on ``rules[i]``, ``full(i, start, first)`` solves the full
    model there (``start``: the cheap solution on that rule; ``first``: the first full solve of
    the point), and the result carries that rule and the cheap climb's error estimate
    (borrowed). ``pair``: the full model first on the rule below, and its change from there must
    be at most QUADRATURE_RTOL (the estimate is then the larger of the two). None where the
    cheap climb does not settle, a full solve does not converge or the pair's change is larger:
    the caller climbs the full model."""
    seen: dict[int, Any] = {}

    def rung(i: int) -> Any:
        seen[i] = cheap(i)
        return seen[i]

    res, i = climb(rung, rules)
    if i is None or i < 0:
        return None
    err = res.quadrature_change
    if pair:
        low = full(i - 1, seen[i - 1], True)  # (settled: the rule below converged)
        got = full(i, res, False) if low.converged else low
        if got.converged:
            err = max(err, abs(got.risk - low.risk) / max(abs(got.risk), 1e-300))
    else:
        got = full(i, res, True)
    if not got.converged or err > QUADRATURE_RTOL:
        return None
    return relabel(got, n_kappa=rules[i], quadrature_change=err), i


def climb_ladders(solve_rule: Callable[[Any, bool], Any], ladders: Sequence[Sequence],
                  start: int = 0) -> tuple[Any, int | None]:
    """One point up several ladders in turn (the tensor ladder, then the aligned one): each is
    climbed by :func:`climb` (``solve_rule(rule, first)``: solve on ``rule``, ``first`` True on
    the first rule climbed) only where the ladders before it did not resolve the quadrature
    (index None); ``start``: the index, counted over the ladders end to end, of the first rule
    tried (a curve whose probes needed the second ladder starts its other probes there).
    Returns (result, index over the ladders end to end; -1: the equations failed, None: not
    resolved on any ladder, with the first ladder's reason)."""
    offset, first, res0 = 0, True, None
    for lad in ladders:
        if start >= offset + len(lad) or not lad:  # (an empty ladder: none at this r)
            offset += len(lad)
            continue
        sub = list(lad[max(start - offset, 0):])
        skip = offset + len(lad) - len(sub)

        def rung(i: int, sub: list = sub) -> Any:
            nonlocal first
            res = solve_rule(sub[i], first)
            first = False
            return res

        res, i = climb(rung, [rule_nodes(n) for n in sub])
        if i is not None:
            return res, (i if i < 0 else skip + i)
        if res0 is not None:  # (the first ladder's reason, and that this one failed too)
            res = replace(res0, message=f"{res0.message}; nor did the next ladder settle "
                                        f"({len(sub)} rules)")
        res0 = res
        offset += len(lad)
    return res0, None


class ProbeCache:
    """The probes' outcomes of the last ``size`` curves (:func:`curve_on_ladder`), first in first
    out, by an exact key: a repeated curve skips its probes' climbs (their results are read
    only). The route's key must name everything its climbs depend on besides the probe alphas,
    the rules and the policy's constants, which :func:`curve_on_ladder` adds."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict = {}

    def get(self, key: Hashable) -> list | None:
        return self.data.get(key)

    def put(self, key: Hashable, probes: list) -> None:
        self.data[key] = probes
        while len(self.data) > self.size:
            self.data.pop(next(iter(self.data)))

    def clear(self) -> None:
        self.data.clear()

    def __len__(self) -> int:
        return len(self.data)


def curve_on_ladder(alphas: list[float], rules: Sequence, sweep: Callable[..., list],
                    climb_at: Callable[..., tuple[Any, int | None]],
                    progress: bool | None, what: str = "spiked curve",
                    second: int | None = None,
                    cache: tuple[ProbeCache, Hashable] | None = None,
                    fail_fast: bool = False) -> list:
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
    (each point then is the single point's).

    ``second``: the index in ``rules`` where a second ladder starts (None: one ladder, or a
    ``climb_at`` that takes no start). Then ``climb_at(alpha, start)`` climbs from
    ``rules[start]``, and once the first ladder has not resolved a probe's quadrature the curve's
    rule is on the second ladder: the later probes climb that ladder alone (each settled there
    by two or three converged rules). A probe resolved on no ladder ends the probing: every
    point then climbs both ladders from the first rule (the single point's number).

    ``cache``: (a :class:`ProbeCache`, the route's exact key of what its climbs depend on
    besides the alphas): the probes' outcomes are kept there and a curve asked again with the
    same key, probe alphas, rules and policy takes them instead of climbing (the same results,
    bit for bit: a climb is a deterministic function of them).

    ``fail_fast``: a probe resolved on no ladder does not end the probing, and the curve is
    still decided once (:func:`_segments`): the other probes climb (from ``second``), the curve
    is swept on the finest rule one settled on, and only the points between an unresolved probe
    and its settled neighbours climb, one by one from that neighbour, as the later probes do,
    until :data:`FAIL_RUN` successive points settle on no rule; the points left before the
    unresolved probe are NaN with the reason, not climbed (docs/THEORY.md §10.8)."""
    n = len(alphas)
    start = 0

    def at_alpha(a: float) -> tuple[Any, int | None]:
        return climb_at(a) if second is None else climb_at(a, start)

    if n > 2 * len(PROBES):
        at = sorted({round(f * (n - 1)) for f in PROBES})
        key = None if cache is None or cache[1] is None else (
            cache[1], tuple((type(alphas[j]), float(alphas[j]).hex()) for j in at), tuple(rules),
            second, PROBES, QUADRATURE_RTOL, SETTLE_CHANGES, SETTLE_FACTOR, PAIR_FACTOR,
            *(("fail_fast", FAIL_RUN) if fail_fast else ()))
        probes = None if key is None else cache[0].get(key)
        if probes is None:
            probes = []
            for j in at:
                res, i = at_alpha(alphas[j])
                probes.append((res, i))
                if second is not None and (i >= second if i is not None else not fail_fast):
                    start = second  # the first ladder did not resolve this probe
                if i is None and not fail_fast:
                    break  # the curve climbs point by point: the other probes decide nothing
            if key is not None:
                cache[0].put(key, probes)
        done = [(res, i) for res, i in probes if i is not None and i >= 0]
        if fail_fast and done and len(probes) == len(at) and any(i is None for _, i in probes):
            # (the walk climbs as the probes after a settled one did: from the second ladder
            # once a probe settled there only)
            walk = 0 if second is None or all(i is None or i < second for _, i in probes) \
                else second
            memo = None if key is None else (cache[0], (key, "walk", tuple(
                (type(a), float(a).hex()) for a in alphas)))
            return _segments(alphas, rules, at, probes, sweep, climb_at if second is None
                             else (lambda a: climb_at(a, walk)), progress, memo)
        if done and len(probes) == len(at) and all(i is not None for _, i in probes):
            top = max(i for _, i in done)
            err = max(res.quadrature_change for res, _ in done)
            first = probes[0][0]  # the probe at alphas[0]: the sweep's first start
            # a probe settled on the curve's rule is that alpha's point (no second solve)
            known = {j: res for j, (res, i) in zip(at, probes, strict=True) if i == top}
            return sweep(rules[top], progress, (rules[top], err),
                         first if first.converged else None, known)
    from asymptotics.core.progress import Progress

    with Progress(n, f"{what} (kappa ladder per point)", unit="pt", enabled=progress) as bar:
        return [(climb_at(a) if second is None else climb_at(a, 0))[0]
                for a in bar.iter(alphas)]


#: a curve's walk from a settled probe towards one resolved on no ladder (:func:`_segments`)
#: stops after FAIL_RUN successive points that settle on no rule
FAIL_RUN = 2


def _nan_like(x: Any) -> Any:
    """``x`` (numbers, lists, dicts of them) with every number NaN."""
    if isinstance(x, dict):
        return {k: _nan_like(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(_nan_like(v) for v in x)
    return math.nan if isinstance(x, float | int) and not isinstance(x, bool) else x


def _segments(alphas: list[float], rules: Sequence, at: list[int], probes: list,
              sweep: Callable[..., list], climb: Callable[[float], tuple[Any, int | None]],
              progress: bool | None, memo: tuple[ProbeCache, Hashable] | None = None) -> list:
    """A curve some of whose probes were resolved on no ladder, decided once
    (docs/THEORY.md §10.8): the alphas between an unresolved probe and a settled neighbouring
    probe climb one by one (``climb``: the later probes' climb), walking from the settled
    probe, until :data:`FAIL_RUN` successive points settle on no rule (a point whose equations
    fail counts as one); every point from there to the unresolved probe is NaN with the reason
    (not climbed: the kappa ladders did not resolve its neighbours), as is every point between
    two unresolved probes. The other alphas are swept once on the finest rule a probe settled
    on, which carries the largest error estimate of the settled probes. ``memo``: (a
    :class:`ProbeCache`, the curve's exact key): the walk's outcomes are kept there, as the
    probes' (a curve asked again does not climb them again)."""
    done = [(res, i) for res, i in probes if i is not None and i >= 0]
    top = max(i for _, i in done)
    err = max(res.quadrature_change for res, _ in done)
    kept = None if memo is None else memo[0].get(memo[1])
    fixed: dict[int, Any] = {} if kept is None else dict(kept)  # (decided outside the sweep)

    def unresolved(j: int, near: Any, b: int, why: str) -> Any:
        return relabel(near, alpha=alphas[j], risk=math.nan, converged=False,
                       status="max_iter", iterations=0, residual=math.nan,
                       order=_nan_like(near.order), state=_nan_like(near.state),
                       message=f"quadrature not resolved: not climbed, as the curve's kappa "
                               f"ladders resolved neither the probe at alpha={alphas[b]:g} "
                               f"nor {why}")

    for k, (res, i) in enumerate(probes):
        if i is not None or kept is not None:
            continue
        b = at[k]
        fixed[b] = res
        for nb in (k - 1, k + 1):
            if not 0 <= nb < len(at):
                continue
            step = 1 if nb > k else -1
            inner = range(b + step, at[nb], step)  # (from the unresolved probe outwards)
            if probes[nb][1] is None:  # two unresolved probes: nothing between is climbed
                for j in inner:
                    fixed[j] = unresolved(j, res, b, f"the probe at alpha={alphas[at[nb]]:g}")
                continue
            misses, near = 0, res
            for j in reversed(inner):  # from the settled neighbour inwards
                if misses >= FAIL_RUN:
                    fixed[j] = unresolved(j, near, b, f"the {FAIL_RUN} points next to this "
                                                      "one towards it")
                    continue
                got, i2 = climb(alphas[j])
                fixed[j] = got
                if i2 is None or i2 < 0:
                    misses, near = misses + 1, got
                else:
                    misses = 0
    if memo is not None and kept is None:
        memo[0].put(memo[1], list(fixed.items()))
    known = {j: res for j, (res, i) in zip(at, probes, strict=True) if i == top}
    known.update(fixed)
    first = probes[0][0] if probes[0][1] is not None else None
    out = sweep(rules[top], progress, (rules[top], err),
                first if first is not None and first.converged else None, known)
    return [fixed.get(j, res) for j, res in enumerate(out)]
