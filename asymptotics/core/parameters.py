"""The one parameter table: every model parameter declared once (THEORY.md §1 conventions).

Each :class:`Parameter` carries its name, type, default, allowed range, help text and the section
of docs/THEORY.md that defines it. The theory's entry points (``risk``, ``risk_curve``,
``risk_grid``, ``build_problem``), the command lines (``add_model_arguments``) and the simulator's
``Setting`` take their defaults, help texts and checks from here, so that a value is accepted or
refused with the same message whichever door it comes in by (``tests/test_parameters.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asymptotics.core import checks


@dataclass(frozen=True)
class Parameter:
    """One parameter: ``kind`` is ``real`` (a float in [lo, hi], ``lo`` excluded when
    ``open_lo``), ``width`` (the width p: a real >= 1, or None / inf for the limit p -> infinity),
    ``integer`` (>= lo), ``choice`` (one of ``choices``) or ``function`` (a
    registered name, an expression in z or a callable; checked where it is parsed), ``readout``
    (a name or a mapping value -> weight) or ``matrix`` (an array; both checked where parsed)."""

    name: str
    kind: str
    default: object
    help: str
    section: str
    lo: float = -math.inf
    hi: float = math.inf
    open_lo: bool = False
    choices: tuple[str, ...] = ()
    words: tuple[str, ...] = ()  # words accepted besides numbers (e.g. "optimal")

    def check(self, value: object) -> object:
        """``value`` validated (and converted) with the message every entry point uses."""
        if isinstance(value, str) and value.strip() in self.words:
            return value.strip()
        if self.kind == "width":
            return _width(value)
        if self.kind == "real":
            return checks.real(self.name, value, self.lo, self.hi, lo_open=self.open_lo)
        if self.kind == "integer":
            return checks.integer(self.name, value, int(self.lo))
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got "
                                 f"{value!r}")
            return value
        return value

    def rule(self) -> str:
        """The allowed values in words (for help texts)."""
        if self.kind == "choice":
            return " | ".join(self.choices)
        if self.kind == "integer":
            return f">= {int(self.lo)}"
        if self.kind == "width":
            return ">= 1 or inf"
        if self.kind == "real":
            low = f"> {self.lo:g}" if self.open_lo else f">= {self.lo:g}"
            return low if self.hi == math.inf else f"in [{self.lo:g}, {self.hi:g}]"
        if self.kind == "readout":
            return "constant | pm1 | a mapping value -> weight"
        if self.kind == "matrix":
            return "an array of real numbers"
        return "a name, an expression in z or a callable"


def _width(value: object) -> float | None:
    """The width p of the finite-p theory: None or +inf (the limit), else a real p >= 1 (p = beta
    d; the equations are continuous in p, so p need not be an integer)."""
    if value is None:
        return None
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"p must be a real number >= 1 or None (the limit), got {value!r}")
    try:
        v = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond float64 (10**400)
        raise ValueError(f"p must be >= 1 and finite (the width, p = beta d) or None for p -> "
                         f"infinity, got {checks._show(value)}") from None
    except (TypeError, ValueError):
        raise TypeError(f"p must be a real number >= 1 or None (the limit), got {value!r}"
                        ) from None
    if v == math.inf:
        return None
    if not math.isfinite(v) or v < 1:
        raise ValueError(f"p must be >= 1 (the width, p = beta d) or None for p -> infinity, "
                         f"got {v:g}")
    return v


def _p(*args, **kwargs) -> Parameter:
    return Parameter(*args, **kwargs)


PARAMETERS: dict[str, Parameter] = {p.name: p for p in (
    _p("alpha", "real", None, "sample ratio n/d of the readout's ridge fit", "§1",
       lo=0.0, open_lo=True),
    _p("sigma", "function", "tanh", "activation sigma", "§1"),
    _p("target", "function", "tanh", "target g of <theta*, x>", "§1"),
    _p("alpha0", "real", 2.0, "first-batch ratio n0/d of the giant step", "§1",
       lo=0.0, open_lo=True),
    _p("eta", "real", 1.0, "rescaled learning rate eta_tilde = eta / p (0: random features)",
       "§1", lo=0.0, words=("optimal",)),
    _p("lam", "real", 0.01, "ridge penalty of the readout (sum-loss convention)", "§1",
       lo=0.0, words=("optimal",)),
    _p("beta", "real", 1.0, "width ratio p/d", "§1", lo=0.0, open_lo=True),
    _p("delta", "real", 0.0, "label-noise variance Delta", "§1", lo=0.0),
    _p("model", "choice", "network", "network (the trained network's theory), srf (its spiked "
       "random-features surrogate) or rf (random features, eta = 0)", "§3, §7",
       choices=("network", "srf", "rf")),
    _p("p", "width", None, "width p = beta d of the finite-width theory (None: p -> infinity)",
       "§7", lo=1.0),
    _p("common_row", "real", None, "ratio omega of the network's mean row at finite p: "
       "'network' (the trained network's), a number > 0, or None (network at finite p for "
       "model='network', 1 otherwise)", "§7", lo=0.0, open_lo=True, words=("network",)),
    _p("engine", "choice", "compiled", "compiled (one numba kernel a path) or python (the "
       "reference orchestration)", "§5", choices=("compiled", "python")),
    _p("steps", "integer", 1, "number of giant steps, each on a fresh batch of alpha0 d samples "
       "(1: the one step of §1; more: the K-group model of the steps)", "§12", lo=1),
    _p("readout", "readout", "constant", "the initial second layer: constant, pm1 or a mapping "
       "value -> weight (other than constant: the K-group model, network or sRF)", "§11"),
    _p("batch", "choice", "fresh", "fresh (a new batch of alpha0 d samples every step) or "
       "reused (every step on the same batch, steps <= 2)", "§14",
       choices=("fresh", "reused")),
    _p("loadings", "matrix", None, "a given K-group model: the K x r loadings u_g of its groups "
       "(with bulk, fractions, overlaps; None: built from the step)", "§10"),
    _p("bulk", "matrix", None, "a given K-group model: the bulk variances c_g (K)", "§10"),
    _p("fractions", "matrix", None, "a given K-group model: the fractions pi_g of the neurons "
       "(K, summing to 1)", "§10"),
    _p("overlaps", "matrix", None, "a given K-group model: the r x k overlaps of the target "
       "directions with the learned ones", "§10"),
    _p("d", "integer", 1000, "input dimension of a simulation", "§1", lo=2),
    _p("seeds", "integer", 10, "independent repetitions of a simulation", "§1", lo=1),
    _p("estimator", "choice", "mc", "test-error estimator of a simulation: mc (fresh test "
       "samples), split, cv (control variates)", "§1", choices=("mc", "split", "cv")),
)}


#: the example of several giant steps (THEORY.md §12) that ``risk_by_step`` and ``python -m
#: asymptotics steps`` both default to: a multi-index target learned over three steps with
#: growing learning rates and the +-1 readout. ``eta``: one value per step, the last repeated.
STEPS_EXAMPLE: dict[str, object] = dict(
    steps=3, sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0, 16.0),
    readout="pm1", lam=0.01, beta=1.0, delta=0.0, alpha="0.5:4:8")


def steps_eta(steps: int) -> tuple[float, ...]:
    """The example's eta_tilde schedule for ``steps`` steps (its last value repeated)."""
    eta = tuple(STEPS_EXAMPLE["eta"])  # type: ignore[arg-type]
    return tuple(eta[min(t, len(eta) - 1)] for t in range(steps))


def default(name: str) -> object:
    """The default of parameter ``name``."""
    return PARAMETERS[name].default


def check(name: str, value: object) -> object:
    """``value`` of parameter ``name``, validated with the one message of the table."""
    return PARAMETERS[name].check(value)


def help_text(name: str) -> str:
    """The command-line help of parameter ``name``: meaning, allowed values, default."""
    p = PARAMETERS[name]
    shown = ("inf" if p.default is None and p.name == "p"
             else f"{p.default:g}" if isinstance(p.default, float) else p.default)
    return f"{p.help}; {p.rule()} (default: {shown}; THEORY.md {p.section})"
