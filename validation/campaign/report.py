"""The one markdown writer of the campaigns' reports, and where reports are written.

:class:`Markdown` builds a report from headings, paragraphs, lists and tables of a DataFrame
(cells formatted per column), and ends with the line that says how to regenerate it.
:func:`report_dir` resolves ``--out DIR``: the user's directory; without it the repository's
``validation/reports`` only in a source checkout; an installed package is never written into
(``ValueError`` asking for ``--out``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import in_checkout

if TYPE_CHECKING:
    import pandas as pd

#: the repository's reports directory (written to by default only in a source checkout)
REPORTS = Path(__file__).resolve().parents[1] / "reports"

Format = str | Callable[[Any], str]


def cell_text(value: Any, fmt: Format | None = None) -> str:
    """One table cell: ``fmt`` a format spec (``".4g"``) or a function; else ``str``. Pipes are
    escaped so that a cell never splits a row."""
    if fmt is None:
        text = str(value)
    elif callable(fmt):
        text = fmt(value)
    else:
        text = format(value, fmt)
    return text.replace("|", "\\|").replace("\n", " ")


def table_lines(df: pd.DataFrame, formats: Mapping[str, Format] | None = None,
                header: Mapping[str, str] | None = None, number: Format | None = None,
                ) -> list[str]:
    """A markdown table of ``df`` (its columns in order, its index ignored): a header row (the
    column names, or ``header[name]``), ``|---|`` per column, one line per row. A cell is
    written by its column's format in ``formats``, else a float by ``number`` (if given), else
    by ``str``."""
    formats = formats or {}
    header = header or {}
    cols = list(df.columns)
    lines = ["| " + " | ".join(cell_text(header.get(c, c)) for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(
            cell_text(v, formats.get(c, number if isinstance(v, float) else None))
            for c, v in zip(cols, row, strict=True)) + " |")
    return lines


class Markdown:
    """A report as lines: ``heading``, ``para``, ``bullets``, ``table``, ``lines`` (raw),
    ``regenerate`` (the command line); ``text()`` joins them (one trailing newline)."""

    def __init__(self, title: str | None = None) -> None:
        self._lines: list[str] = []
        if title:
            self.heading(title, 1)

    def _gap(self) -> None:
        if self._lines and self._lines[-1] != "":
            self._lines.append("")

    def heading(self, text: str, level: int = 2) -> Markdown:
        self._gap()
        self._lines += ["#" * level + " " + text, ""]
        return self

    def para(self, *text: str) -> Markdown:
        """One paragraph (the pieces joined by a space)."""
        self._gap()
        self._lines.append(" ".join(text))
        return self

    def bullets(self, items: Iterable[str]) -> Markdown:
        self._gap()
        self._lines += [f"- {item}" for item in items]
        return self

    def table(self, df: pd.DataFrame, formats: Mapping[str, Format] | None = None,
              header: Mapping[str, str] | None = None, number: Format | None = None,
              ) -> Markdown:
        """A table of ``df`` (:func:`table_lines`)."""
        self._gap()
        self._lines += table_lines(df, formats, header, number)
        return self

    def lines(self, lines: Iterable[str]) -> Markdown:
        """Raw lines, as they are."""
        self._lines += list(lines)
        return self

    def regenerate(self, command: str) -> Markdown:
        """The line that says how this report is regenerated."""
        self._gap()
        self._lines.append(f"Regenerate with: `{command}`")
        return self

    def text(self) -> str:
        lines = list(self._lines)
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines) + "\n"


def installed() -> bool:
    """True when :mod:`validation` runs from an installed package (not a source checkout)."""
    return not in_checkout(REPORTS)


def report_dir(out: str | Path | None, default: Path = REPORTS) -> Path:
    """Where a report goes: ``out`` when given; else ``default`` (the repository's
    ``validation/reports``) in a source checkout; an installed package needs ``out``."""
    if out is not None and str(out).strip():
        return Path(out)
    if installed():
        raise ValueError("validation runs from an installed package, whose files are not "
                         "written to: say where the report goes with --out DIR")
    return Path(default)


def write_text(out: str | Path, name: str, text: str) -> Path:
    """Write ``text`` as ``out/name`` (the directory created); returns the path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(text)
    return path
