"""The order the suite hands its files to the pytest-xdist workers (tests/conftest.py): the
longest files first, each file's tests together and in their own order."""

from __future__ import annotations

from pathlib import Path

import conftest


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_long_files_exist():
    here = Path(__file__).resolve().parent
    for name in conftest.LONG_FILES:
        assert (here / name).is_file(), name
    assert len(set(conftest.LONG_FILES)) == len(conftest.LONG_FILES)


def test_long_files_first_then_most_tests_first_each_file_in_its_order():
    ids = ["tests/test_a.py::t1", "tests/test_b.py::t1", "tests/test_b.py::t2",
           f"tests/{conftest.LONG_FILES[1]}::x", "tests/test_a.py::t0",
           f"tests/{conftest.LONG_FILES[0]}::y", f"tests/{conftest.LONG_FILES[0]}::x"]
    items = [_Item(i) for i in ids]
    conftest.pytest_collection_modifyitems(None, items)
    assert [it.nodeid for it in items] == [
        f"tests/{conftest.LONG_FILES[0]}::y", f"tests/{conftest.LONG_FILES[0]}::x",
        f"tests/{conftest.LONG_FILES[1]}::x",
        "tests/test_a.py::t1", "tests/test_a.py::t0",  # a tie on two tests: collection order
        "tests/test_b.py::t1", "tests/test_b.py::t2"]
