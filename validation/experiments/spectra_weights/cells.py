"""The campaigns of the spectra after several steps (one task per (setting, d, draws) cell):
their task, parameter record, key and export order in one place, used by
:mod:`validation.experiments.spectra_weights.steps` (the weights, their shadow rows) and
:mod:`validation.experiments.spectra_weights.features` (the features, the row-slope
diagnosis)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from validation.campaign import Campaign, Schema, refresh_csv


def _run_cell(cell_fn, job: tuple) -> list[dict]:
    return cell_fn(*job)


def _cell_record(top: int, models: tuple, job: tuple) -> dict:
    """A task's parameter record: every field of the setting, d, the number of draws, the
    number of outliers compared and the models."""
    s, d, n_seeds = job
    return {"setting": s, "d": d, "draws": n_seeds, "top": top, "models": models}


def _settings_rank(names: tuple, row: dict) -> tuple:
    """The export's order of the tasks: the settings' order, then d."""
    return (names.index(row["setting"]) if row["setting"] in names else len(names), row["d"])


def _job_key(job: tuple) -> tuple:
    return (job[0].name, job[1])


def setting_campaign(name: str, jobs, task, schema: Schema, version: str, settings,
                     record) -> Campaign:
    """A campaign of (setting, d, draws) cells (this module's, its shadow rows' and the
    features' after several steps): one task per cell (``task(job)``, a module-level callable),
    keyed by ``record(job)`` and ``version``; exported in the order of ``settings`` then d,
    with ``%.10g`` cells."""
    from validation.protocol.rows import g10_cell

    names = tuple(s.name for s in settings)
    return Campaign(name, tuple(jobs), task, schema, key_columns=("setting", "d"),
                    key=_job_key, cell=g10_cell, version=version, record=record,
                    rank=partial(_settings_rank, names))


def cell_task(cell_fn, top: int, models: tuple) -> tuple:
    """``(task, record)`` of a campaign whose task is ``cell_fn(setting, d, draws)`` and whose
    record is :func:`_cell_record` with ``top`` outliers and ``models``."""
    return partial(_run_cell, cell_fn), partial(_cell_record, top, models)


def refresh(c: Campaign, csv: Path, *, store: str | Path | None = None,
            quiet: bool = False) -> Path:
    """Run the cells of ``c`` the store lacks and export every stored cell to ``csv`` (read from
    the committed file, written where :func:`validation.paths.data_file` says); returns the CSV
    written."""
    from validation.paths import data_file

    read, write = data_file(csv, "validation", "reports", "data")
    refresh_csv(c, read, write, store=store, progress=not quiet)
    return write


def retheory(paths: tuple[Path, Path], settings, model: str, law, top: int) -> Path:
    """Recompute the theory columns of ``model``'s rows of a committed cell CSV (``paths``:
    read, write) after a change of the theory, without simulating: ``law(setting, d)`` returns
    ``(SpectralLaw, {quantity: theory})`` (extra rows); the outliers' locations and overlaps
    (the first ``top``) and the extra rows are replaced, every simulated column, the bulk's
    Kolmogorov distances and the edge are kept (the caller's theory change must not move the
    bulk). Writes the CSV atomically; returns its path."""
    import time

    import pandas as pd

    from validation.protocol.rows import g10_cell

    read, write = paths
    df = pd.read_csv(read)
    for (name, d), g in df[df.model == model].groupby(["setting", "d"], sort=False):
        s = next(x for x in settings if x.name == name)
        t0 = time.perf_counter()
        spec, new = law(s, int(d))
        secs = time.perf_counter() - t0
        edge = g[g.quantity.str.startswith("bulk edge")]
        if len(edge) and abs(edge.theory.iloc[0] - spec.edge) > 1e-6 * abs(spec.edge):
            raise ValueError(f"the bulk's edge of {name}, d = {d} moved ({edge.theory.iloc[0]} "
                             f"-> {spec.edge}): rerun the cells, the Kolmogorov rows are stale")
        locs = {}
        for i, o in enumerate(spec.outliers[:top]):
            locs[f"outlier {i + 1} ("] = (f"outlier {i + 1} ({o.channel})", o.location)
            new.update({f"outlier {i + 1}: overlap {k}": v for k, v in o.overlaps.items()})
        for idx in g.index:
            q = df.at[idx, "quantity"]
            loc = next((v for k, v in locs.items() if q.startswith(k)), None)
            if loc is not None:  # a location row: by its rank (the channel's label may change)
                df.at[idx, "quantity"], df.at[idx, "theory"] = loc
            elif q in new:
                df.at[idx, "theory"] = new[q]
            elif q.startswith("outlier"):
                raise ValueError(f"row {q!r} of {name}, d = {d} has no counterpart in the new "
                                 "theory: rerun the cells")
            df.at[idx, "theory_seconds"] = secs
    tmp = write.with_name(write.name + ".tmp")
    df.map(g10_cell).to_csv(tmp, index=False)
    tmp.replace(write)
    return write
