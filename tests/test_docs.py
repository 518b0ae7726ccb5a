"""Documentation stands alone: relative links in every Markdown file resolve inside the repository,
and no file points outside it (to a sibling ``shared`` directory, to seed documents or to issue
numbers). Papers are cited from docs/BIBLIOGRAPHY.md; equations from docs/THEORY.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__",
             ".pytest_cache", ".ruff_cache", ".import_linter_cache"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml"}
# A Markdown link [text](target) or an image ![alt](target); the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FORBIDDEN = [
    # the names are assembled so that this file does not itself name what it forbids
    (re.compile(r"\.\./" + "sha" + "red"), "a path to a sibling directory of the repository"),
    (re.compile(r"\bseeds?\s+0\d\d\b", re.IGNORECASE), "a seed document ('seed 00n')"),
    (re.compile(r"\b" + "see" + r"ds?/"), "a seed directory"),
    (re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE), "an issue number"),
]
# Files that still carry one such reference; each entry names the line to fix (none left).
PENDING: dict[str, str] = {}


def _files(suffixes: set[str]) -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and path.suffix in suffixes:
            out.append(path)
    return sorted(out)


def test_markdown_links_resolve() -> None:
    broken = []
    md_files = _files({".md"})
    assert md_files, "no Markdown files found"
    for md in md_files:
        text = md.read_text(encoding="utf-8")
        # ignore code spans and fenced blocks, which show syntax rather than link
        text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # external URL, mailto or in-page anchor
            path = target.split("#", 1)[0]
            if not (md.parent / path).exists():
                broken.append(f"{md.relative_to(ROOT)}: {target}")
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def test_theory_and_bibliography_exist() -> None:
    theory = (ROOT / "docs" / "THEORY.md").read_text(encoding="utf-8")
    for n in range(1, 10):
        assert re.search(rf"^## {n}\. ", theory, re.MULTILINE), f"docs/THEORY.md lacks §{n}"
    bib = (ROOT / "docs" / "BIBLIOGRAPHY.md").read_text(encoding="utf-8")
    for arxiv in ("2402.04980", "2305.18270", "2310.07891", "2205.01445", "2410.18938",
                  "2402.10127", "2002.09339", "1908.05355"):
        assert arxiv in bib, arxiv


@pytest.mark.parametrize("pattern, what", FORBIDDEN, ids=[w for _, w in FORBIDDEN])
def test_no_references_outside_the_repository(pattern: re.Pattern[str], what: str) -> None:
    hits = []
    for path in _files(TEXT_SUFFIXES):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "tests/test_docs.py" or rel in PENDING:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            if pattern.search(line):
                hits.append(f"{rel}:{i + 1}: {line.strip()[:100]}")
    assert not hits, f"{what} in:\n" + "\n".join(hits)


def test_pending_entries_are_still_needed() -> None:
    """Remove an entry from PENDING once its file is clean, so the exception cannot linger."""
    still = []
    for rel in PENDING:
        text = (ROOT / rel).read_text(encoding="utf-8")
        if any(p.search(text) for p, _ in FORBIDDEN):
            still.append(rel)
    clean = set(PENDING) - set(still)
    assert not clean, f"clean now, drop from PENDING: {clean}"


def test_files_named_in_readme_and_architecture_exist() -> None:
    """Every file the README, docs/guide.md or docs/ARCHITECTURE.md names in backticks exists
    the repository root, each package and each documentation folder; NAME is a placeholder)."""
    homes = [ROOT, ROOT / "docs", ROOT / "validation" / "reports"]
    for pkg in ("asymptotics", "validation", "figures"):
        homes += [p for p in (ROOT / pkg).rglob("*") if p.is_dir() and "__pycache__" not in p.parts]
        homes.append(ROOT / pkg)
    missing = []
    for doc in ("README.md", "docs/ARCHITECTURE.md", "docs/guide.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for name in sorted(set(re.findall(r"`([A-Za-z0-9_./-]+\.(?:py|md|csv|toml))`", text))):
            if "NAME" in name:
                continue
            if not any((home / name).exists() for home in homes):
                missing.append(f"{doc}: {name}")
    assert not missing, "named but missing:\n" + "\n".join(missing)
