"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

The figure sections of the gallery (docs/gallery.md) are generated at build time from the
registry of ``python -m figures`` (figures/__main__.py) and the images in figures/out/: the page
never shows a figure that is not registered and never misses one. Images are added to the site
from where they live; nothing is written into docs/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "figures" / "out"
GALLERY = "gallery.md"
MARKER = "<!-- the figures are inserted here when the site is built -->"
# registered figures whose image files do not start with the figure's name
PREFIX = {"staircase": "multistep_", "outliers": "spectra_"}
# figures made by other commands than ``python -m figures``: (title, image, command, caption)
EXTRA = [
    ("finite_width", ROOT / "validation" / "reports" / "figures" / "finite_width_crossover.png",
     "python -m validation.matrix.finite_width",
     "the risk of sRF simulations at d = p = 1000, 2000, 4000 moves from random features to the "
     "p = infinity theory as r sqrt(p) grows; the finite-width theory follows them "
     "(validation/reports/FINITE_WIDTH.md)"),
]


def registered_figures() -> dict[str, str]:
    """``python -m figures --list``: name -> one-line description."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    before = os.environ.get("MPLBACKEND")
    from figures.__main__ import available  # sets MPLBACKEND=Agg for its own command line

    if before is None:  # ... which would reach the kernels of executed tutorials: undo it
        os.environ.pop("MPLBACKEND", None)
    return available()


def figure_images(name: str) -> list[Path]:
    """The PNG files of figure ``name`` in figures/out/."""
    return sorted(OUT.glob(f"{PREFIX.get(name, name + '.')}*png"))


def gallery_markdown() -> tuple[str, list[Path]]:
    """The figure sections of the gallery page and the images they show."""
    lines: list[str] = []
    images: list[Path] = []
    entries = [(name, figure_images(name), f"python -m figures {name}", desc)
               for name, desc in registered_figures().items()]
    entries += [(name, [path], cmd, caption) for name, path, cmd, caption in EXTRA]
    for name, paths, cmd, caption in entries:
        lines += [f"## {name}", "", f"{caption[:1].upper()}{caption[1:]}.", "", "```bash", cmd,
                  "```", ""]
        if not paths:
            lines += ["*(not rendered yet: run the command above)*", ""]
        for path in paths:
            lines += [f"![{path.stem}](gallery/{path.name})", ""]
            images.append(path)
    return "\n".join(lines), images


def on_config(config):
    # executed tutorials (GIANTSTEP_DOCS_EXECUTE=true) draw their plots inline in the kernel: a
    # non-interactive MPLBACKEND (Agg) inherited from the shell would swallow them
    os.environ.pop("MPLBACKEND", None)
    return config


def on_files(files: Files, config) -> Files:
    _, images = gallery_markdown()
    for path in images:
        files.append(File.generated(config, f"gallery/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != GALLERY:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{GALLERY} lacks the line {MARKER!r} where the figures go")
    return markdown.replace(MARKER, gallery_markdown()[0])
