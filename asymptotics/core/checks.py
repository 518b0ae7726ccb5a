"""Parameter validation shared by the theory and the Monte Carlo (one home for the messages):
errors name the parameter, say what is allowed and what was given, e.g.
``alpha0 must be > 0 and finite, got -1``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _show(value: object) -> str:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) \
            and abs(int(value)) > 10**300:  # float() would overflow: the digits, not the int
        text = str(int(value))
        return f"an integer of {len(text.lstrip('-'))} digits ({text[:12]}...)"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}"
    return repr(value)


def real(name: str, value: object, lo: float = -math.inf, hi: float = math.inf, *,
         lo_open: bool = False, hi_open: bool = False) -> float:
    """``float(value)`` if it is a finite real number in the interval; TypeError for something that
    is not a number, ValueError (naming ``name`` and the interval) for one outside it."""
    if isinstance(value, (bool, str, bytes)):  # float("2") would accept a string
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        v = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond float64 (10**400): out of every finite range
        v = math.inf
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    ok = (math.isfinite(v) and (v > lo if lo_open else v >= lo)
          and (v < hi if hi_open else v <= hi))
    if not ok:
        if math.isinf(hi):
            rule = f"{'>' if lo_open else '>='} {lo:g} and finite"
        elif math.isinf(lo):
            rule = f"{'<' if hi_open else '<='} {hi:g} and finite"
        else:
            rule = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ValueError(f"{name} must be {rule}, got {_show(value)}")
    return v


def positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A finite real ``> 0`` (``>= 0`` with ``allow_zero``)."""
    return real(name, value, 0.0, lo_open=not allow_zero)


def integer(name: str, value: object, lo: int) -> int:
    """An integer (not a bool, not a float) ``>= lo``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def flag(name: str, value: object) -> bool:
    """A bool (True or False; not a string such as "yes", not a number)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def optional_flag(name: str, value: object) -> bool | None:
    """None, True or False (e.g. ``progress``: None = automatic)."""
    if value is None:
        return None
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True, False or None, got {value!r}")
    return value


def sequence(name: str, values: object) -> list:
    """A non-empty sequence of values (a list, tuple or array; not a string, not a scalar)."""
    import numpy as np

    if isinstance(values, (str, bytes, dict)) or (isinstance(values, np.ndarray)
                                                  and values.ndim == 0):
        raise TypeError(f"{name} must be a sequence of numbers such as [0.5, 1, 2], got "
                        f"{values!r}")
    try:
        out = list(np.asarray(values, dtype=object).ravel()) if isinstance(values, np.ndarray) \
            else list(values)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of numbers such as [0.5, 1, 2], got "
                        f"{values!r}") from None
    if not out:
        raise ValueError(f"{name} must contain at least one value")
    return out


def named(name: str, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` with a ValueError / TypeError naming ``name`` first (``sigma: unknown name
    ...``), unless its message already starts with it."""
    try:
        return fn(*args)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if msg.startswith(name):
            raise
        raise (TypeError if isinstance(exc, TypeError) else ValueError)(f"{name}: {msg}"
                                                                        ) from None
