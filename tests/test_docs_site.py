"""The documentation site (mkdocs.yml) builds with ``mkdocs build --strict``: a broken link, a
page missing from the navigation or an API reference to a name that does not exist fails the
build. The API reference covers every public name of ``asymptotics.__all__``, and the gallery
shows every registered figure.

Skipped when the site's tools are not installed (``pip install -e ".[docs]"``). The tutorials are
rendered from their source here (they run in tests/test_tutorials.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
REASON = "the documentation site needs mkdocs: pip install -e '.[docs]'"


def _needs_site_tools() -> None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python",
                   "mkdocs_jupyter", "pymdownx"):
        pytest.importorskip(module, reason=REASON)


def _api_identifiers() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(API.glob("*.md")))
    return set(re.findall(r"^::: ([\w.]+)", text, flags=re.MULTILINE))


def test_api_reference_covers_asymptotics_all() -> None:
    import asymptotics

    documented = _api_identifiers()
    missing = [name for name in asymptotics.__all__
               if not name.startswith("__") and f"asymptotics.{name}" not in documented]
    assert not missing, f"not in docs/api/*.md: {missing}"
    for name in ("asymptotics.api.grid.risk_grid", "asymptotics.api.grid.optimal_lam",
                 "asymptotics.api.grid.optimal_eta", "validation.protocol.simulator.Setting",
                 "validation.protocol.simulator.simulate",
                 "validation.protocol.simulator.simulate_curve",
                 "validation.compare.compare"):
        assert name in documented, name


def _build(out: Path, execute: bool) -> Path:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", GIANTSTEP_DOCS_EXECUTE=str(execute).lower())
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.perf_counter()
    # run from the temporary directory: the notebook plugin's cache lands there, not in the tree
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(out / "html")],
                          cwd=out, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-4000:]}"
    pages = sorted((out / "html").rglob("index.html"))
    print(f"site: {len(pages)} pages in {time.perf_counter() - t0:.1f} s")
    return out / "html"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    _needs_site_tools()
    return _build(tmp_path_factory.mktemp("site"), execute=False)


@pytest.mark.slow
def test_executed_tutorials_show_their_plots(tmp_path: Path) -> None:
    """GIANTSTEP_DOCS_EXECUTE=true: every tutorial page carries its outputs and its plot."""
    _needs_site_tools()
    html = _build(tmp_path, execute=True)
    for page in sorted((html / "tutorials").glob("0*/index.html")):
        text = page.read_text(encoding="utf-8")
        assert "<img" in text and "data:image/png;base64" in text, page.parent.name


def test_site_builds_strict(site: Path) -> None:
    for page in ("index.html", "installation/index.html", "THEORY/index.html",
                 "DERIVATIONS/index.html", "gallery/index.html", "api/asymptotics/index.html",
                 "tutorials/01_first_curves/index.html", "tutorials/04_your_own_model/index.html"):
        assert (site / page).is_file(), page


def test_site_api_pages_render_every_public_name(site: Path) -> None:
    html = "".join(p.read_text(encoding="utf-8") for p in (site / "api").rglob("index.html"))
    import asymptotics

    missing = [n for n in asymptotics.__all__
               if not n.startswith("__") and f'id="asymptotics.{n}"' not in html]
    assert not missing, f"API pages lack: {missing}"


def test_gallery_shows_every_figure(site: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from figures.__main__ import FIGURES

    html = (site / "gallery" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)  # code blocks are highlighted span by span
    for name in FIGURES:
        assert f"python -m figures {name}" in text, name
    shown = {Path(src).name for src in re.findall(r'<img[^>]*src="([^"]+\.png)"', html)}
    for png in sorted((ROOT / "figures" / "out").glob("*.png")):
        assert png.name in shown, f"figures/out/{png.name} is not in the gallery"
        assert (site / "gallery" / png.name).is_file()


def test_home_page_says_how_to_serve() -> None:
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "mkdocs serve" in text
