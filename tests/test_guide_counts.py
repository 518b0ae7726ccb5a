"""The guide's table of validated claims quotes the network-steps report's counts as the report
states them (the report is regenerated from committed data by ``tests/test_reports.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_guide_quotes_the_network_steps_counts():
    report = (ROOT / "validation" / "reports" / "NETWORK_STEPS.md").read_text()
    m = re.search(r"\*\*d = 2000\*\*: network theory within 3 s\.e\. at (\d+)/(\d+) points, "
                  r"surrogate (\d+)/\d+\. \*\*All points\*\*: network (\d+)/(\d+), surrogate "
                  r"(\d+)/\d+", report)
    assert m, "the report's summary line changed form"
    net2000, n2000, srf2000, net_all, n_all, srf_all = m.groups()
    row = next(line for line in (ROOT / "docs" / "guide.md").read_text().splitlines()
               if line.startswith("| network theory beyond one step"))
    assert f"{net_all}/{n_all} within 3 s.e. (the surrogate: {srf_all}/{n_all})" in row
    assert f"at d = 2000 {net2000}/{n2000}" in row and f"the surrogate {srf2000}/{n2000}" in row
