"""The aligned kappa rules of the network route (docs/DERIVATIONS.md §9.6): kappa rotated onto
the loading of the sharpest group, a trapezoid rule on that axis and Gauss-Hermite on the others,
the second ladder of the route's quadrature policy (``asymptotics.equations.ladder``), climbed
where the tensor Gauss-Hermite ladder does not settle."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.equations.ladder import aligned_ladder, ladder
from asymptotics.multiindex.steps import trapezoid
from asymptotics.network.channels import Channels
from asymptotics.spiked.coefficients import Tables, feature_tables, target_tables, tensor_rule
from asymptotics.spiked.problem import (  # noqa: F401  (aligned_rotation: its home is spiked)
    SpikedProblem,
    aligned_rotation,
    build_spiked_problem,
    target_degrees,
)
from asymptotics.spiked.solve import SpikedResult


def aligned_problem(params: dict, sig: np.ndarray, h: float, n: int,
                    n_omega: int | None) -> tuple[SpikedProblem, Channels]:
    """The K-group problem with kappa rotated by :func:`aligned_rotation` (loadings ``U R``,
    overlaps ``R^T Gamma``, the channels' V block ``R^T Sig R``: an exact change of the basis of
    V) on the product of a trapezoid rule of step ``h`` on the first axis and ``n``
    Gauss-Hermite nodes on each other axis."""
    U = np.asarray(params["loadings"], dtype=np.float64)
    r = U.shape[1]
    R = aligned_rotation(U, params["bulk"])
    G = np.asarray(params["overlaps"], dtype=np.float64)
    k = G.shape[1]
    Rb = np.eye(r + k)
    Rb[:r, :r] = R
    rot = dict(params, loadings=(U @ R).tolist(), overlaps=(R.T @ G).tolist())
    base = build_spiked_problem(**rot, n_kappa=2, n_omega=n_omega)
    u1, w1 = trapezoid(1, h)
    rest, wr = tensor_rule(r - 1, n) if r > 1 else (np.zeros((1, 0)), np.ones(1))
    kap = np.hstack([np.repeat(u1, len(wr), axis=0), np.tile(rest, (len(w1), 1))])
    w = np.repeat(w1, len(wr)) * np.tile(wr, len(w1))
    w = w / w.sum()
    target = params["target"]
    degrees = target_degrees(base.target_name) if isinstance(target, str) and not isinstance(
        base.target, Function) else getattr(target, "degrees", None)
    mu0, mb1, ms2 = feature_tables(base.sigma, kap, base.loadings, base.bulk)
    hh, h1, h2 = target_tables(base.target, base.k, kap, base.overlaps, n_omega, degrees)
    c = np.ascontiguousarray
    prob = replace(base, tables=Tables(c(kap), c(w), c(mu0), c(mb1), c(ms2), c(hh), c(h1),
                                       c(h2)))
    return prob, Channels(np.einsum("ai,gab,bj->gij", Rb, sig, Rb), r, k)


_KEPT: dict = {}


def clear_aligned() -> None:
    """Forget the kept aligned rules (:func:`aligned_cached`)."""
    _KEPT.clear()


def aligned_cached(params: dict, sig: np.ndarray, h: float, n: int, n_omega: int | None):
    """:func:`aligned_problem`, kept for the next alpha of the same groups (it does not depend on
    alpha; the parameters compared by value, objects such as the target by identity)."""
    objs = tuple(v for v in params.values() if not isinstance(v, (list, tuple, float, int, str)))
    key = (tuple((k, repr(v) if isinstance(v, (list, tuple, float, int, str)) else id(v))
                 for k, v in sorted(params.items())), sig.tobytes(), h, n, n_omega)
    hit = _KEPT.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], objs, strict=True)):
        hit = (objs, aligned_problem(params, sig, h, n, n_omega))
        if len(_KEPT) >= 8:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[key] = hit
    return hit[1]


def rules(r: int) -> tuple:
    """The kappa rules the route climbs with ``r`` spikes (docs/THEORY.md §10.8, §15): the
    tensor Gauss-Hermite ladder, then, where it does not settle, the aligned ladder of the one
    quadrature policy (``equations.ladder.aligned_ladder``: r = 2 and 3; DERIVATIONS.md §9.6),
    each under the same settle rule."""
    return tuple(ladder(r)) + aligned_ladder(r)


def aligned_message(res: SpikedResult, rule: tuple) -> SpikedResult:
    """``res`` with the message of a point settled on the aligned ``rule``."""
    h, n = rule
    return replace(res, message=f"converged (aligned rule: trapezoid step {h:g} on the "
                                f"sharpest spike axis, {n} Gauss-Hermite nodes on the others; "
                                "the tensor Gauss-Hermite ladder did not settle)")
