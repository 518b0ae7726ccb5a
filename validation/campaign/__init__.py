"""The one campaign runner: a named plan of settings, a task function and a row schema
(:class:`Campaign`), run by :func:`run_campaign` on the scheduler into a SQLite :class:`Store`.

``spec.py`` (Campaign, Schema, task keys), ``store.py`` (SQLite, one table per campaign, long
format, ``export_csv``), ``runner.py`` (``run_campaign``: skip done keys, one transaction per
task, resumable after a kill, time budget, progress lines; ``load_or_run``: the rows from the
committed CSV, or run what it lacks; ``refresh_csv``: run what the store lacks, export it all;
``run_rows``: the same, returning the plan's rows), ``report.py`` (the markdown writer and where
reports go), ``template.py`` (report text whose numbers are placeholders and whose claims are
assertions), ``plots.py`` (the reports' figure helpers).
"""

from __future__ import annotations

from .runner import RunSummary, load_or_run, refresh_csv, run_campaign, run_rows
from .spec import Campaign, Schema
from .store import Store

__all__ = ["Campaign", "RunSummary", "Schema", "Store", "load_or_run", "refresh_csv",
           "run_campaign", "run_rows"]
