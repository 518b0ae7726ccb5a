"""The Python blocks of the README and of the user guide (docs/guide.md) run as written (with fewer
seeds and a smaller d, to stay fast)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_block_runs():
    text = (ROOT / "docs" / "guide.md").read_text()
    start = text.index("```python", text.index("## Python")) + len("```python")
    code = text[start:text.index("```", start)]
    assert "seeds=8)" in code and code.count("d=1000)") == 1
    namespace: dict = {}
    # the Monte Carlo line runs as written on 2 seeds at d = 200 (it is checked to run; its
    # numbers are the agreement tests' business): the same calls, a fraction of the draws' cost
    code = code.replace("seeds=8)", "seeds=2)").replace("d=1000)", "d=200)")
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["res"].converged and namespace["df"].converged.all()
    assert bool(namespace["grid"].converged.all()) and len(namespace["grid"]) == 3 * 4 * 2


def test_readme_spiked_block_runs():
    text = (ROOT / "docs" / "guide.md").read_text()
    start = text.index("```python", text.index("## Several directions")) + len("```python")
    code = text[start:text.index("```", start)]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    res, parts = namespace["res"], namespace["parts"]
    assert res.converged and parts["all"] == res.risk
    assert parts["all"] < parts["without_1"] and parts["all"] < parts["none"]


def test_guide_steps_block_runs():
    text = (ROOT / "docs" / "guide.md").read_text()
    start = text.index("```python", text.index("## Several giant steps")) + len("```python")
    code = text[start:text.index("```", start)]
    namespace: dict = {}
    exec(compile(code, "guide.md", "exec"), namespace)
    df, m = namespace["df"], namespace["m"]
    assert df["converged"].all() and sorted(df["step"].unique()) == [0, 1, 2, 3]
    assert m.states[2].a.shape == (2, 3)


def test_readme_first_number_block_runs():
    text = (ROOT / "README.md").read_text()
    start = text.index("```python", text.index("## A first number")) + len("```python")
    code = text[start:text.index("```", start)]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert 0 < namespace["df"]["risk"].min()


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120


def test_readme_shows_the_headline_figures():
    """The README shows theory against simulation (one step, several steps) as committed PNGs,
    each small and drawn by a registered `python -m figures NAME` from committed data."""
    import re
    import subprocess

    from figures.__main__ import FIGURES

    text = (ROOT / "README.md").read_text()
    assert text.startswith("# giantstep\n\n```bash\npython -m pip install . && python -m "
                           "asymptotics curve")
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", text)
    assert [Path(i).stem for i in images] == ["feature_learning", "steps"]
    assert text.index("## Theory against simulation") > text.index("**giantstep** computes")
    tracked = subprocess.run(["git", "ls-files", *images], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    assert "python -m figures " + " ".join(Path(i).stem for i in images) in text
    for image in images:
        path = ROOT / image
        assert path.is_file() and path.stat().st_size < 200_000, image
        assert path.stem in FIGURES, image
        if tracked:  # a git checkout: the image is committed, not only rendered locally
            assert image in tracked, image
