"""Fixed-point solver: damped Picard with Anderson(m) acceleration and safeguards.

Stopping rule over all variables: max_i |F(x)_i - x_i| / max(|x_i|, scale_floor) <= rtol (a
relative residual; ``scale_floor`` keeps components that vanish at the solution from demanding
an absolute accuracy below round-off). The accelerated
step is rejected (history reset, plain damped step taken) when it is non-finite, leaves the domain
(variances and second moments >= 0), or raises the residual tenfold over the best seen.
The answer always says whether it converged; the caller decides what to report (never a number
from an unconverged run).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


class ConvergenceError(RuntimeError):
    """Raised in strict mode when the self-consistent equations do not converge."""


class Status(enum.IntEnum):
    CONVERGED = 0
    MAX_ITER = 1
    NON_FINITE = 2
    OUT_OF_DOMAIN = 3
    DIVERGED = 4

    @property
    def message(self) -> str:
        return _MESSAGES[self]


#: each status' message (one dict, not one built per call: a curve asks for one per point)
_MESSAGES = {
    Status.CONVERGED: "converged",
    Status.MAX_ITER: "maximum number of iterations reached before the tolerance",
    Status.NON_FINITE: "the map produced a non-finite value (divergent overlaps)",
    Status.OUT_OF_DOMAIN: "the iterates left the physical domain (negative variance)",
    Status.DIVERGED: "the risk diverges as lam -> 0+ (interpolation peak of ridgeless "
                     "regression)",
}


@dataclass(frozen=True)
class SolverConfig:
    """Immutable solver settings. ``damping`` is the Picard mixing weight (1 = no damping)."""

    rtol: float = 1e-10
    scale_floor: float = 1e-3
    max_iter: int = 500
    damping: float = 0.5
    anderson: int = 6

    def __post_init__(self) -> None:
        if not (0 < self.rtol < 1):
            raise ValueError(f"rtol must be in (0, 1), got {self.rtol}")
        if not (self.scale_floor > 0):
            raise ValueError(f"scale_floor must be > 0, got {self.scale_floor}")
        if not (self.max_iter >= 1):
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not (0 < self.damping <= 1):
            raise ValueError(f"damping must be in (0, 1], got {self.damping}")
        if not (self.anderson >= 0):
            raise ValueError(f"anderson must be >= 0, got {self.anderson}")


@dataclass(frozen=True)
class SolverResult:
    x: np.ndarray
    converged: bool
    status: Status
    n_iter: int
    residual: float
    residual_history: tuple[float, ...] = field(repr=False)

    @property
    def message(self) -> str:
        return self.status.message


def relative_residual(x: np.ndarray, fx: np.ndarray, scale_floor: float) -> float:
    """max_i |fx_i - x_i| / max(|x_i|, scale_floor)."""
    return float(np.max(np.abs(fx - x) / np.maximum(np.abs(x), scale_floor)))


def solve(
    fmap: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    config: SolverConfig = SolverConfig(),
    nonneg: tuple[int, ...] = (),
    blowup: float = 1e12,
) -> SolverResult:
    """Find x = fmap(x) from x0. ``nonneg`` indexes components that must stay >= 0; iterates whose
    size exceeds ``blowup`` are declared divergent (non-finite)."""
    x = np.array(x0, dtype=np.float64)
    nn = np.array(nonneg, dtype=np.int64)
    hist: list[float] = []
    X: list[np.ndarray] = []
    G: list[np.ndarray] = []
    best = np.inf
    beta = config.damping

    def ok(v: np.ndarray) -> bool:
        return bool(np.all(np.isfinite(v)) and np.max(np.abs(v)) < blowup)

    fx = fmap(x)
    for it in range(1, config.max_iter + 1):
        if not ok(fx):
            return SolverResult(x, False, Status.NON_FINITE, it, np.inf, tuple(hist))
        g = fx - x
        res = relative_residual(x, fx, config.scale_floor)
        hist.append(res)
        if res <= config.rtol:
            return SolverResult(fx, True, Status.CONVERGED, it, res, tuple(hist))
        best = min(best, res)
        X.append(x.copy())
        G.append(g.copy())
        if len(X) > config.anderson + 1:
            X.pop(0)
            G.pop(0)
        damped = x + beta * g
        x_new = damped
        if config.anderson > 0 and len(X) >= 2:
            dX = np.stack([X[i + 1] - X[i] for i in range(len(X) - 1)], axis=1)
            dG = np.stack([G[i + 1] - G[i] for i in range(len(G) - 1)], axis=1)
            scale = np.maximum(np.abs(x), config.scale_floor)
            cand = None
            if ok(dG) and ok(dX):
                try:
                    gam = np.linalg.lstsq(dG / scale[:, None], g / scale, rcond=1e-12)[0]
                    cand = x + beta * g - (dX + beta * dG) @ gam
                except np.linalg.LinAlgError:
                    cand = None
            if cand is not None and ok(cand) and np.all(cand[nn] >= 0):
                x_new = cand
            else:
                X, G = X[-1:], G[-1:]
        x_new[nn] = np.maximum(x_new[nn], 0.0)
        fx_new = fmap(x_new)
        if x_new is not damped:
            # safeguard: reject an accelerated step that fails or raises the residual tenfold
            bad = not ok(fx_new) or relative_residual(x_new, fx_new, config.scale_floor) > 10 * best
            if bad:
                X, G = X[-1:], G[-1:]
                x_new = damped
                x_new[nn] = np.maximum(x_new[nn], 0.0)  # as every step (the compiled kernels)
                fx_new = fmap(x_new)
        x, fx = x_new, fx_new
    return SolverResult(x, False, Status.MAX_ITER, config.max_iter, hist[-1], tuple(hist))


def chord(fmap: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, jac: np.ndarray,
          config: SolverConfig = SolverConfig(), nonneg: tuple[int, ...] = (),
          max_iter: int = 8) -> SolverResult | None:
    """``x = fmap(x)`` from ``x0`` by chord steps ``x <- x - jac^-1 (fmap(x) - x)`` with a fixed
    ``jac`` (the Jacobian of ``fmap(x) - x`` near the solution, e.g. a neighbouring problem's),
    converged by :func:`solve`'s rule (the relative change <= rtol; the answer is ``fmap(x)``).
    None where it does not converge within ``max_iter`` steps, a change does not halve, or a
    step leaves the domain (``nonneg``): the caller's fallback."""
    x = np.array(x0, dtype=np.float64)
    nn = np.array(nonneg, dtype=np.int64)
    prev = np.inf
    for it in range(1, max_iter + 1):
        fx = np.asarray(fmap(x), dtype=np.float64)
        if not np.all(np.isfinite(fx)):
            return None
        res = relative_residual(x, fx, config.scale_floor)
        if res <= config.rtol:
            return SolverResult(fx, True, Status.CONVERGED, it, res, ())
        if not res <= 0.5 * prev:
            return None
        prev = res
        try:
            x = x - np.linalg.solve(jac, fx - x)
        except np.linalg.LinAlgError:
            return None
        if not (np.all(np.isfinite(x)) and np.all(x[nn] >= 0.0)):
            return None
    return None


#: :func:`newton`'s ``predict``: an evaluation may be the last where the change expected there
#: is within this many times ``tight * rtol`` (None: every evaluation may be)
PREDICT_MARGIN: float | None = 10.0


def newton(fmap: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], np.ndarray],
           x0: np.ndarray, config: SolverConfig = SolverConfig(), nonneg: tuple[int, ...] = (),
           tight: float = 1e-2, fresh: float = 1e-5, max_iter: int = 12,
           predict: dict | None = None) -> SolverResult | None:
    """``x = fmap(x)`` from ``x0`` by Newton steps with ``jac(x)`` (the Jacobian of ``fmap(x) -
    x``, asked before ``fmap(x)``; fresh while the relative change is above ``fresh``, then
    chord steps with the last) to ``tight * config.rtol`` (the answer ``fmap(x)``, as
    :func:`chord`); where the change stops halving below ``config.rtol`` (rounding), the
    smaller one's. None where a change above ``config.rtol`` does not halve, a step leaves the
    domain (``nonneg``) or is not finite: the caller's fallback. ``predict``: before a chord
    step's ``fmap(x)``, ``predict["pred"]`` is set to the change expected there (the last two
    changes at Newton's quadratic rate after a fresh Jacobian, else at the chord's linear rate)
    over :data:`PREDICT_MARGIN` ``tight * config.rtol`` (0 before two changes): at most 1 where
    it may be the last."""
    x = np.array(x0, dtype=np.float64)
    nn = np.array(nonneg, dtype=np.int64)
    prev, best, J, older, quad = np.inf, None, None, np.inf, False
    for it in range(1, max_iter + 1):
        if prev > fresh:
            J = jac(x)
        elif predict is not None:
            rate = prev / older ** 2 * prev if quad else prev / older
            lim = (PREDICT_MARGIN or 0.0) * tight * config.rtol
            predict["pred"] = rate * prev / lim if older < np.inf and lim > 0.0 else 0.0
        fx = np.asarray(fmap(x), dtype=np.float64)
        if not np.all(np.isfinite(fx)):
            return None
        res = relative_residual(x, fx, config.scale_floor)
        if res <= tight * config.rtol:
            return SolverResult(fx, True, Status.CONVERGED, it, res, ())
        if not res <= 0.5 * prev:
            if res <= config.rtol and res <= prev:
                return SolverResult(fx, True, Status.CONVERGED, it, res, ())
            if prev <= config.rtol:
                return SolverResult(best, True, Status.CONVERGED, it - 1, prev, ())
            return None
        quad = prev > fresh  # (the step from x: with the Jacobian at x)
        older, prev, best = prev, res, fx
        try:
            x = x - np.linalg.solve(J, fx - x)
        except np.linalg.LinAlgError:
            return None
        if not (np.all(np.isfinite(x)) and np.all(x[nn] >= 0.0)):
            return None
    return None
