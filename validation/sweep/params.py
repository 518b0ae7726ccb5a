"""Sweep parameters: the kinds, their parameters and rules, the store's columns, grid parsing."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from asymptotics.core.parameters import default
from validation.protocol.pool import SCHEDULERS  # noqa: F401  (re-exported: the sweep's schedulers)

KINDS = ("theory", "theory-network", "network", "srf", "rf")
# the theory kinds: "theory" is the sRF equations (the model of the stored sweeps and figures),
# "theory-network" the network theory (asymptotics, model="network")
THEORY_KINDS = ("theory", "theory-network")


def is_theory(kind: str) -> bool:
    """Whether a sweep kind is a theory (no simulation parameters, one row per point)."""
    return kind in THEORY_KINDS
THEORY_PARAMS = ("sigma", "target", "beta", "alpha0", "eta", "delta", "lam", "alpha")
SIM_PARAMS = ("sigma", "target", "beta", "alpha0", "eta", "delta", "d", "n_test", "seed", "lam",
              "alpha")
# name -> (type, lower bound, whether the bound is allowed)
RULES: dict[str, tuple[type, float, bool]] = {
    "alpha": (float, 0.0, False), "alpha0": (float, 0.0, False), "beta": (float, 0.0, False),
    "eta": (float, 0.0, True), "lam": (float, 0.0, True), "delta": (float, 0.0, True),
    "d": (int, 2, True), "n_test": (int, 0, True), "seed": (int, 0, True),
}
#: the model parameters' defaults are the parameter table's (asymptotics.core.parameters); the
#: sweep's own: the kind and the seeds per point
DEFAULTS: dict[str, Any] = {**{k: default(k) for k in ("sigma", "target", "alpha0", "eta", "lam",
                                                      "beta", "delta", "d")},
                            "n_test": 0, "seed": 0}
DEFAULT_KIND = "theory"
DEFAULT_SEEDS = default("seeds")
META = ("key", "task", "task_rows", "kind")
TAIL = ("seconds", "cpu_seconds", "version")
SIM_RESULT = ("rep", "p", "n", "n0", "n_test_used", "entropy", "risk", "converged")
STRING_COLUMNS = ("key", "task", "kind", "sigma", "target", "measure", "model", "status", "message",
                  "version", "entropy")


def _theory_result_columns() -> tuple[str, ...]:
    from dataclasses import fields

    from asymptotics.api.risk import RiskResult
    from asymptotics.core.result import GROUP_FIELDS, STEP_FIELDS

    # "p" (the finite-width theory) is not a sweep parameter: sweeps are the p -> infinity limit,
    # where the mean-row ratio "common_row" does not enter either; sweeps are one-spike points
    # (no K-group model or order parameters; one step, constant readout, fresh batch)
    skip = set(THEORY_PARAMS) | {"state", "p", "common_row", *GROUP_FIELDS, *STEP_FIELDS}
    first = ("risk", "converged", "iterations", "residual")
    rest = tuple(f.name for f in fields(RiskResult) if f.name not in skip and f.name not in first)
    return first + rest


#: the type of every column but the theory's results (those are RiskResult's field types)
TYPES: dict[str, type] = dict(
    key=str, task=str, task_rows=int, kind=str, sigma=str, target=str, rep=int, p=int, n=int,
    n0=int, n_test_used=int, entropy=str, risk=float, converged=bool, seconds=float,
    cpu_seconds=float, version=str, **{name: rule[0] for name, rule in RULES.items()})


@cache
def schema(kind: str):
    """The store's row schema for ``kind`` (:class:`validation.campaign.Schema`): the columns of
    :func:`columns` with their types."""
    from dataclasses import fields

    from asymptotics.api.risk import RiskResult
    from validation.campaign import Schema

    named = {"float": float, "int": int, "str": str, "bool": bool}
    types = dict(TYPES)
    for f in fields(RiskResult):
        base = f.type.split(" | ")[0] if isinstance(f.type, str) else None  # "str | None"
        if f.name not in types and base in named:
            types[f.name] = named[base]
    return Schema(tuple((c, types[c]) for c in columns(kind)))


def params_of(kind: str) -> tuple[str, ...]:
    """The parameters a sweep of ``kind`` takes (grid or fixed), in their canonical order."""
    check_kind(kind)
    return THEORY_PARAMS if is_theory(kind) else SIM_PARAMS


def columns(kind: str) -> tuple[str, ...]:
    """The store's columns for ``kind`` (its header line)."""
    result = _theory_result_columns() if is_theory(kind) else SIM_RESULT
    return META + params_of(kind) + result + TAIL


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses (so ``sigma=max(z,0),tanh`` has two values)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        depth += (ch == "(") - (ch == ")")
        cur.append(ch)
    out.append("".join(cur))
    if len(out) > 1 and any(not s.strip() for s in out):
        raise ValueError(f"empty item in {text!r}; give values separated by single commas")
    return [s.strip() for s in out if s.strip()]


def check_value(name: str, value: Any) -> Any:
    """One parameter value, normalised (float, int or function spec) or a ValueError that says
    what is allowed."""
    if name in ("sigma", "target"):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a function name or an expression in z, got {value!r}")
        _function_ok(name, value.strip())
        return value.strip()
    if name not in RULES:
        raise ValueError(f"unknown parameter {name!r}; sweepable: {', '.join(SIM_PARAMS)}")
    typ, low, inclusive = RULES[name]
    if isinstance(value, (bool, str)) or not hasattr(value, "__float__"):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value) + 0.0  # + 0.0: -0.0 -> 0.0, one hash per point
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if typ is int:
        if v != int(v) or v < low:
            raise ValueError(f"{name} must be an integer >= {low:g}, got {value!r}")
        return int(v)
    if not (v > low or (inclusive and v == low)):
        raise ValueError(f"{name} must be {'>=' if inclusive else '>'} {low:g}, got {v:g}")
    return v


@lru_cache(maxsize=256)
def _function_ok(name: str, spec: str) -> None:
    from asymptotics.coefficients.functions import get_function

    get_function(spec)  # raises ValueError naming the registered functions


def parse_values(name: str, text: str) -> list:
    """``a,b,c`` (a list) or ``START:STOP:NUM`` (numpy.linspace, NUM >= 1); for sigma/target a
    comma list of function names or expressions."""
    text = text.strip()
    if name in ("sigma", "target"):
        values = _split_top_level(text)
    elif ":" in text:
        import numpy as np

        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"grid {name} must be a comma list (0.5,1,2) or START:STOP:NUM "
                             f"(0.2:5:50), got {text!r}") from None
        values = [float(v) for v in np.linspace(start, stop, num)]
        if RULES.get(name, (float,))[0] is int:
            values = [round(v) for v in values]
    else:
        values = []
        for piece in _split_top_level(text):
            try:
                values.append(float(piece))
            except ValueError:
                raise ValueError(f"grid {name} values must be numbers, got {piece!r}") from None
    if not values:
        raise ValueError(f"grid {name} must contain at least one value, got {text!r}")
    return [check_value(name, v) for v in values]


def parse_grid_spec(text: str) -> tuple[str, list]:
    """``NAME=SPEC`` of the command line (``alpha=0.2:5:50``, ``sigma=tanh,relu``)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            f"grid must be NAME=START:STOP:NUM or NAME=a,b,c, got {text!r}")
    if name not in SIM_PARAMS:
        raise argparse.ArgumentTypeError(
            f"grid parameter must be one of {', '.join(SIM_PARAMS)}, got {name!r}")
    try:
        return name, parse_values(name, spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def normalise_grid(kind: str, grid: Mapping[str, Any] | None,
                    fixed: Mapping[str, Any]) -> tuple[dict[str, list], dict[str, Any]]:
    allowed = params_of(kind)
    out_grid: dict[str, list] = {}
    for name, values in (grid or {}).items():
        if name not in allowed:
            raise ValueError(f"grid parameter {name!r} is not one of the {kind} parameters: "
                             f"{', '.join(allowed)}")
        if isinstance(values, str):
            values = parse_values(name, values)
        else:
            values = [check_value(name, v) for v in values]
        if not values:
            raise ValueError(f"grid {name} must contain at least one value")
        if len(set(values)) != len(values):
            raise ValueError(f"grid {name} has repeated values: {values}")
        out_grid[name] = values
    base: dict[str, Any] = {}
    for name, value in fixed.items():
        if name not in allowed:
            raise ValueError(f"{name!r} is not a {kind} parameter; allowed: {', '.join(allowed)}")
        if value is not None:
            base[name] = check_value(name, value)
    for name in allowed:
        if name in out_grid or name in base:
            continue
        if name == "alpha":
            raise ValueError("alpha must be given: grid={'alpha': [...]} or alpha=...")
        base[name] = DEFAULTS[name]
    for name in out_grid:
        base.pop(name, None)
    return out_grid, base


