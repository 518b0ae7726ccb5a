"""Shared command-line machinery of every giantstep front end (asymptotics, validation, figures).

Bottom layer: imports nothing from ``validation`` or ``figures``. It provides

* :class:`Parser`: argparse with prefix matching off (``--p`` is an error, never ``--plot``),
  bad input reported as one line with exit status 2, negative numbers accepted as option values
  (``--alpha -1,2`` reaches the range check instead of "expected one argument") and
  ``--version`` on every parser and subcommand;
* argument types: :func:`real`, :func:`integer`, :func:`real_list` (empty items refused),
  :func:`parse_grid` (``a,b,c`` or ``START:STOP:NUM``);
* :func:`check_writable`: an output path whose directory is missing or not writable is refused
  *before* any work, naming the option;
* :func:`add_quiet` / :func:`apply_quiet`: the ``--quiet`` option of every long-running command
  (no progress reports, :mod:`asymptotics.core.progress`);
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# re-exported: every command prints its version and shows warnings as one line
from asymptotics.core.meta import one_line_warnings, version  # noqa: E402, F401

# a value starting with '-' and a digit (or '-.5') is a value, not an option
_NEGATIVE = re.compile(r"^-(\.?\d|inf|nan)", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """argparse with abbreviations off, one-line errors (exit 2), negative values, --version."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        add_version = kwargs.pop("add_version", True)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE
        if add_version:
            self.add_argument("--version", action="version",
                              version=f"giantstep {version()}")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._seen = list(sys.argv[1:] if args is None else args)
        if self._subparsers is None and ({"-h", "--help"} & set(self._seen)):
            # argparse prints the help at --help even after an unknown option: name it instead
            unknown = self._unknown_options()
            if unknown:
                self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return super().parse_known_args(args, namespace)

    def _unknown_options(self) -> list[str]:
        seen = self._seen[:self._seen.index("--")] if "--" in self._seen else self._seen
        known = set(self._option_string_actions)
        return [a for a in seen if a.startswith("-") and not _NEGATIVE.match(a)
                and a.split("=", 1)[0] not in known]

    def error(self, message: str) -> None:  # type: ignore[override]
        if "arguments are required" in message:  # name an unknown option first, if any
            unknown = self._unknown_options() if hasattr(self, "_seen") else []
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}"
        self.exit(2, f"error: {' '.join(message.split())}\n")

    def add_subparsers(self, **kwargs):  # type: ignore[override]
        kwargs.setdefault("parser_class", Parser)
        return super().add_subparsers(**kwargs)


def fail(message: str) -> int:
    """Print ``error: message`` (one line) on stderr; return the exit status 2."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


# ------------------------------------------------------------------------------------------------
# progress

QUIET_HELP = ("no progress reports on stderr (default: a bar on a terminal, else a line "
              "'done/total (x%%), elapsed, ~left' every ~10 s)")


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` on a long-running command (read by :func:`apply_quiet`)."""
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def apply_quiet(args: argparse.Namespace) -> bool:
    """Silence every progress report of the process when ``args.quiet`` (else allow them:
    :func:`asymptotics.core.progress.set_quiet`); returns ``args.quiet``."""
    from asymptotics.core.progress import set_quiet

    quiet = bool(getattr(args, "quiet", False))
    set_quiet(quiet)
    return quiet


# ------------------------------------------------------------------------------------------------
# argument types


def _number(text: str, name: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{name} must be finite, got {text!r}")
    return v


def real(name: str, lo: float | None = None, hi: float | None = None, *,
         strict_lo: bool = False) -> Callable[[str], float]:
    """argparse type: a finite float in ``[lo, hi]`` (``(lo, hi]`` with ``strict_lo``)."""

    def parse(text: str) -> float:
        v = _number(text, name)
        if lo is not None and (v <= lo if strict_lo else v < lo):
            raise argparse.ArgumentTypeError(
                f"{name} must be {'>' if strict_lo else '>='} {lo:g}, got {text}")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"{name} must be <= {hi:g}, got {text}")
        return v

    return parse


def integer(name: str, lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """argparse type: an integer in ``[lo, hi]``, with a message naming the option."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if lo is not None and v < lo:
            raise argparse.ArgumentTypeError(f"{name} must be >= {lo}, got {v}")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"{name} must be <= {hi}, got {v}")
        return v

    return parse


def split_list(text: str, name: str) -> list[str]:
    """Comma-separated items; an empty item (``1,,2``, ``1,2,``) is an error."""
    items = [t.strip() for t in str(text).split(",")]
    if any(not t for t in items):
        raise argparse.ArgumentTypeError(
            f"{name} has an empty item in {text!r}; give values separated by single commas")
    return items


def real_list(name: str, lo: float | None = None, *, strict_lo: bool = False,
              max_len: int = 100_000) -> Callable[[str], list[float]]:
    """argparse type: ``a,b,c`` of finite floats, each range-checked like :func:`real`."""
    one = real(name, lo, strict_lo=strict_lo)

    def parse(text: str) -> list[float]:
        values = [one(t) for t in split_list(text, name)]
        if len(values) > max_len:
            raise argparse.ArgumentTypeError(f"{name} has more than {max_len} values")
        return values

    return parse


def parse_grid(text: str, name: str = "alpha", *, max_num: int = 100_000) -> list[float]:
    """``a,b,c`` (a list) or ``START:STOP:NUM`` (numpy.linspace, ``1 <= NUM <= max_num``);
    every value > 0 and finite."""
    import numpy as np

    text = str(text).strip()
    usage = f"{name} must be a comma list (0.5,1,2) or START:STOP:NUM (0.2:5:50), got {text!r}"
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(usage)
        try:
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise argparse.ArgumentTypeError(usage) from None
        if not 1 <= num <= max_num:
            raise argparse.ArgumentTypeError(f"{name}: NUM must be in [1, {max_num}], got {num}")
        values = [float(v) for v in np.linspace(start, stop, num)]
    else:
        if not text:
            raise argparse.ArgumentTypeError(f"{name} must contain at least one value")
        items = split_list(text, name)
        try:
            values = [float(v) for v in items]
        except ValueError:
            raise argparse.ArgumentTypeError(usage) from None
        if len(values) > max_num:
            raise argparse.ArgumentTypeError(f"{name} has more than {max_num} values")
    for v in values:
        if not math.isfinite(v) or v <= 0:
            raise argparse.ArgumentTypeError(f"{name} values must be > 0 and finite, got {v:g}")
    return values


# ------------------------------------------------------------------------------------------------
# output paths


def _probe_dir(d: Path) -> bool:
    """True if a file can really be created in ``d`` (also right as root, where os.access is
    always true): create and remove a temporary file."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=d, prefix=".giantstep-probe-"):
            pass
    except OSError:
        return False
    return True


def check_writable(path: str | os.PathLike | None, option: str, *, directory: bool = False,
                   suffixes: Iterable[str] | None = None) -> None:
    """Raise ValueError (naming ``option``) unless ``path`` can be written, before any work is
    done. A file: its directory must exist and accept a new file. A directory (``directory``):
    it is created if missing (with its parents) and must accept a new file. ``suffixes``
    restricts the file extension (e.g. ``.png``, ``.svg``, ``.pdf``)."""
    if path is None:
        return
    if str(path).strip() == "":
        raise ValueError(f"{option}: empty path")
    try:
        _check_path(Path(path), option, directory, suffixes)
    except OSError as exc:  # a name too long, a path through a file, ...
        raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})"
                         ) from None


def _check_path(p: Path, option: str, directory: bool, suffixes: Iterable[str] | None) -> None:
    """:func:`check_writable` of a non-empty path."""
    if directory:
        if p.exists() and not p.is_dir():
            raise ValueError(f"{option}: {str(p)!r} exists and is not a directory")
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{option}: cannot create directory {str(p)!r} "
                             f"({exc.strerror or exc})") from None
        if not _probe_dir(p):
            raise ValueError(f"{option}: cannot write into directory {str(p)!r}")
        return
    if p.is_dir():
        raise ValueError(f"{option}: {str(p)!r} is a directory, expected a file name")
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if p.suffix.lower() not in allowed:
            raise ValueError(f"{option}: file type {p.suffix or '(none)'!r} not supported; "
                             f"use one of {', '.join(allowed)}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{option}: directory {str(parent)!r} does not exist")
    if not _probe_dir(parent) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{option}: cannot write {str(p)!r} (permission denied)")


def write_output(path: str | os.PathLike, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path``; a failure while writing (a full disk, ``/dev/full``, a
    vanished directory) is a ValueError naming ``option``, not a bare OSError."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})"
                         ) from None


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


# ------------------------------------------------------------------------------------------------
# figures

_METADATA = {
    ".png": {"Software": None},
    ".svg": {"Date": None},
    ".pdf": {"Creator": None, "Producer": None, "CreationDate": None},
}


def save_figure(fig, path: str | os.PathLike, **kwargs) -> Path:
    """``fig.savefig`` with reproducible metadata for the file type (PNG, SVG, PDF: no
    timestamps or software stamps), written to a temporary file and renamed into place, so that
    a failure never leaves a truncated figure behind."""
    p = Path(path)
    suffix = p.suffix.lower()
    meta = _METADATA.get(suffix)
    if meta is not None:
        kwargs.setdefault("metadata", meta)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}{suffix}")
    try:
        fig.savefig(tmp, format=suffix.lstrip(".") or None, **kwargs)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


