"""The one campaign runner: plan -> skip what is stored -> run on the scheduler -> store each
finished task in one transaction -> progress. Resumable and exact after a kill: a task is stored
whole or not at all, a task's rows depend only on its setting, and the export is sorted."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.pool import run_tasks
from .spec import Campaign
from .store import Store

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RunSummary:
    """What a run did: tasks planned, found stored, run now, and whether the budget stopped it."""

    planned: int
    skipped: int
    ran: int
    stopped: bool
    seconds: float

    @property
    def complete(self) -> bool:
        return self.skipped + self.ran == self.planned


def _timed(job: tuple[Callable[[Any], list[dict]], Any]) -> tuple[list[dict], float]:
    """Run one task (in a worker for ``n_jobs > 1``): its rows and its wall time."""
    fn, setting = job
    t0 = time.perf_counter()
    rows = fn(setting)
    return list(rows), time.perf_counter() - t0


def run_campaign(campaign: Campaign, store: Store, *, n_jobs: int = 1,
                 budget: float | None = None, progress: bool = True,
                 scheduler: str = "local", address: str | None = None,
                 interval: float | None = None, stream: Any = None) -> RunSummary:
    """Run the settings of ``campaign`` whose keys ``store`` lacks on
    :func:`validation.protocol.pool.run_tasks` (``n_jobs`` workers, ``scheduler``), storing each
    finished
    task's rows in one transaction as it completes.

    ``budget`` (seconds): no task starts once it is spent (the running ones finish and are
    stored); run again to go on. ``progress``: a first line (what is stored, what is to run,
    where), then :class:`asymptotics.core.progress.Progress` on ``stream`` (default stderr: a
    bar on a terminal, else one line every ``interval`` s, default
    :data:`asymptotics.core.progress.INTERVAL`) and a last line; False -- or ``--quiet``
    (:func:`asymptotics.core.progress.set_quiet`) -- prints nothing."""
    from asymptotics.core.progress import Progress, shown

    progress = shown(progress)
    t0 = time.monotonic()
    store.ensure(campaign)
    keys = [campaign.key_text(s) for s in campaign.settings]
    if len(set(keys)) != len(keys):
        seen: set[str] = set()
        dup = next(k for k in keys if k in seen or seen.add(k))
        raise ValueError(f"campaign {campaign.name}: the plan holds key {dup} twice")
    done = store.done(campaign)  # stored with the plan's key; a stale task reruns
    todo = [(k, s) for k, s in zip(keys, campaign.settings, strict=True) if k not in done]
    stream = stream if stream is not None else sys.stderr

    def say(text: str) -> None:
        if progress:  # one write: a report's heartbeat line never splits it
            stream.write(f"{campaign.name}: {text}\n")
            stream.flush()

    say(f"{len(keys) - len(todo)} of {len(keys)} tasks stored, {len(todo)} to run"
        + (f" ({n_jobs} jobs)" if n_jobs > 1 else "") + f" -> {store.path}")

    def stop() -> bool:
        return budget is not None and time.monotonic() - t0 >= budget

    ran = 0
    results = run_tasks(_timed, [(campaign.task, s) for _, s in todo], n_jobs,
                        scheduler=scheduler, address=address, stop=stop,
                        name=lambda job: f"{campaign.name}-{campaign.key_text(job[1])}")
    with Progress(len(todo), campaign.name, unit="tasks", enabled=progress and bool(todo),
                  interval=interval, stream=stream) as bar:
        for i, (rows, seconds) in results:
            store.write(campaign, todo[i][0], rows, seconds,
                        task_hash=campaign.task_hash(todo[i][1]))
            ran += 1
            bar.update()
    stopped = ran < len(todo)
    if todo:
        say(f"{ran} of {len(todo)} tasks run in {time.monotonic() - t0:.0f} s"
            + (f"; budget of {budget:g} s spent, {len(todo) - ran} left: run again to go on"
               if stopped else ""))
    return RunSummary(planned=len(keys), skipped=len(keys) - len(todo), ran=ran,
                      stopped=stopped, seconds=time.monotonic() - t0)


def refresh_csv(c: Campaign, read: Path, write: Path, *, store: str | Path | None = None,
                progress: bool = True) -> RunSummary:
    """Run the tasks of campaign ``c`` the SQLite ``store`` (default: beside ``write``) lacks,
    the store first taking the rows of the CSVs ``write`` and ``read`` that exist, then export
    every stored task to ``write``. ``progress``: as in :func:`run_campaign`."""
    with Store(Path(store) if store else write.with_suffix(".sqlite")) as st:
        _start_from(st, c, write, read)
        out = run_campaign(c, st, progress=progress)
        st.export_csv(c, write)
    return out


def run_rows(c: Campaign, read: Path, write: Path, *, save: bool = True, n_jobs: int = 1,
             progress: bool | None = True) -> pd.DataFrame:
    """The rows of campaign ``c``'s settings, in their order, once the tasks the store lacks
    are run. ``save``: the store is the SQLite file beside ``write``, first taking the rows of
    the CSVs ``write`` and ``read`` that exist, and every stored task is exported to ``write``;
    else the store is in memory and nothing is kept. ``progress``: as in :func:`run_campaign`
    (None: shown)."""
    with Store(write.with_suffix(".sqlite") if save else None) as st:
        if save:
            _start_from(st, c, write, read)
        run_campaign(c, st, n_jobs=n_jobs, progress=progress is not False)
        if save:
            st.export_csv(c, write)
        return st.frame(c, keys=[c.key_text(j) for j in c.settings])


def _start_from(st: Store, c: Campaign, write: Path, read: Path,
                import_csv: Callable[[Store, Campaign, Path], Any] | None = None) -> None:
    """The store ``st`` takes the rows of campaign ``c`` in the CSVs ``write`` and ``read`` that
    exist (each once), read by ``import_csv`` (default :meth:`Store.import_csv`)."""
    for source in dict.fromkeys([write, read]):
        if source.exists():
            (import_csv or Store.import_csv)(st, c, source)


def load_or_run(c: Campaign, read: Path, write: Path, *,
                ordered: Callable[[Path, Campaign, list[str]], pd.DataFrame | None],
                force: bool = False, n_jobs: int = 1,
                import_csv: Callable[[Store, Campaign, Path], Any] | None = None,
                log: Callable[[str], None] = print, what: str = "", done: str = "tasks run",
                show_paths: bool = False, progress: bool | None = True) -> pd.DataFrame:
    """The rows of campaign ``c``'s settings, in their order: from the CSV ``read`` when it
    holds every one (``ordered(path, c, wanted keys)`` reads them in order, or None when one is
    missing); else the missing ones are run into the SQLite store beside ``write`` (which starts
    from the CSVs' rows, read by ``import_csv``, default :meth:`Store.import_csv`; one transaction
    per task, so an interrupted run resumes), exported to ``write`` and read back. ``force``:
    run everything afresh. ``log`` gets one line: cached, or how many tasks ran and how long;
    ``progress``: the run's progress on stderr (:func:`run_campaign`; False: none). The CSV
    counts only with its keys file (:func:`validation.campaign.store.keys_path`) giving every
    wanted task the plan's key: a changed setting is run again."""
    wanted = [c.key_text(s) for s in c.settings]
    fresh = read.exists() and not force and _keys_match(read, c)
    df = ordered(read, c, wanted) if fresh else None
    if df is not None:
        log(f"[{what}] cached" + (f": {read}" if show_paths else ""))
        return df
    t0 = time.perf_counter()
    with Store(write.with_suffix(".sqlite"), fresh=force) as st:
        if not force:
            _start_from(st, c, write, read, import_csv)
        out = run_campaign(c, st, n_jobs=n_jobs, progress=progress is not False)
        st.export_csv(c, write)
    log(f"[{what}] {out.ran} {done}: {time.perf_counter() - t0:.1f} s"
        + (f" -> {write}" if show_paths else ""))
    df = ordered(write, c, wanted)
    if df is None:
        raise RuntimeError(f"{write}: the export lacks settings of campaign {c.name}")
    return df


def _keys_match(path: Path, c: Campaign) -> bool:
    """Whether the keys file of the CSV ``path`` holds every task of ``c``'s plan with its key."""
    from .store import keys_path, read_keys

    have = read_keys(keys_path(path))
    return all((have.get(k) or c.place_hash(k)) == h for k, h in c.plan_hashes().items())
