"""Report text that cannot go stale: markdown templates whose every number is a placeholder
``{{ expression }}`` evaluated on the data, whose qualitative claims are assertions
``{{! expression }}`` that render to nothing and must hold, and whose ``{{= name = expression }}``
define names for what follows. :func:`render` fails with every claim that no longer holds, so a
report regenerated from moved numbers cannot repeat stale prose. Used by the matrix's
investigation notes (:mod:`validation.matrix.notes`) and the experiments' discussions
(``validation/reports/*_notes.md``); the formatting helpers are here too."""

from __future__ import annotations

import re
from typing import Any

import numpy as np


def pct(x: float, nd: int = 1, sign: bool = True) -> str:
    """``x`` as a percentage (``+1.3%``)."""
    return f"{x:+.{nd}%}" if sign else f"{x:.{nd}%}"


def num(x: float, nd: int = 2) -> str:
    """``x`` with ``nd`` significant digits (``0.04``, ``6.8``)."""
    return f"{x:.{nd}g}"


def signed(x: float, nd: int = 1) -> str:
    """``x`` with a sign and ``nd`` decimals (``+3.1``, ``−0.3``)."""
    return f"{x:+.{nd}f}".replace("-", "−")


def span(values, fmt=num, **kw) -> str:
    """``min–max`` of ``values`` in format ``fmt``."""
    v = np.asarray(list(values), dtype=float)
    lo, hi = fmt(float(np.min(v)), **kw), fmt(float(np.max(v)), **kw)
    return lo if lo == hi else f"{lo}–{hi}"


_PLACEHOLDER = re.compile(r"\{\{([!=]?)(.+?)\}\}", re.S)


def render(template: str, names: dict[str, Any], source: str = "notes") -> str:
    """The template with every ``{{ expression }}`` replaced by its value; ``ValueError``
    listing every ``{{! claim }}`` that does not hold (or any expression that fails)."""
    failed: list[str] = []
    scope = {"__builtins__": {}, **names}

    def one(m: re.Match) -> str:
        expr = " ".join(m.group(2).split())
        name = None
        if m.group(1) == "=":  # a definition: {{= name = expression }}
            name, _, expr = (x.strip() for x in expr.partition("="))
        try:
            value = eval(expr, scope)  # noqa: S307 (the repository's own notes)
        except Exception as exc:  # noqa: BLE001
            failed.append(f"{expr}: {type(exc).__name__}: {exc}")
            return "?"
        if name:
            scope[name] = value
            return ""
        if m.group(1):
            if not bool(value):
                failed.append(f"claim does not hold: {expr}")
            return ""
        return value if isinstance(value, str) else str(value)

    text = _PLACEHOLDER.sub(one, template)
    if failed:
        raise ValueError(f"{source}: the numbers no longer support the notes; update them:\n  "
                         + "\n  ".join(failed))
    return text
