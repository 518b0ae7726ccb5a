"""argparse types of the validation command lines (no imports from the package: every command
line module may use them without an upward import)."""

from __future__ import annotations

import argparse


def integer(name: str, lo: int):
    """argparse type: an integer >= ``lo``, with a message naming the option."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"{name} must be >= {lo}, got {v}")
        return v

    return parse
