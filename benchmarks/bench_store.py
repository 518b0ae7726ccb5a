"""Write throughput of the two row stores: the CSV row store (``validation.protocol.rows.Store``:
one
``write`` + ``fsync`` per block, checksummed lines) against the campaigns' SQLite store
(``validation.campaign.Store``: one transaction per task, WAL, ``synchronous=NORMAL``).

The same rows both ways: ``--rows`` rows (default 10,000) in tasks of ``--per-task`` rows
(default 10, one row per repetition), each task written as it would finish in a campaign, then
the whole store read back. Prints the rows per second of each and their ratio (SQLite / CSV);
also SQLite with ``synchronous=FULL`` (an fsync per commit, as durable as the CSV store against
a power cut; the store's ``NORMAL`` is as safe against a killed process).
Run: python benchmarks/bench_store.py [--rows 10000] [--per-task 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from validation.campaign import Campaign, Schema
from validation.campaign import Store as SqliteStore
from validation.protocol.rows import Layout, read_blocks
from validation.protocol.rows import Store as CsvStore

SCHEMA = Schema.of(name=str, d=int, seed=int, rep=int, alpha=float, risk=float,
                   seconds=float)


def _rows(n: int, per_task: int) -> list[list[dict]]:
    rng = np.random.default_rng(0)
    tasks = []
    for t in range(n // per_task):
        tasks.append([dict(name=f"setting-{t % 37}", d=1000, seed=t, rep=r,
                           alpha=float(rng.uniform(0.1, 5)), risk=float(rng.random()),
                           seconds=float(rng.random())) for r in range(per_task)])
    return tasks


def bench_csv(path: Path, tasks: list[list[dict]]) -> tuple[float, float]:
    layout = Layout(block=lambda row: f"{row['name']}|{row['d']}|{row['seed']}",
                    size=lambda row: len(tasks[0]), checksum=True)
    cols = [*SCHEMA.names, "crc"]
    t0 = time.perf_counter()
    with CsvStore(path, cols, layout) as st:
        for rows in tasks:
            st.add(rows)
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    blocks = read_blocks(path, cols, layout)
    assert sum(len(b) for b in blocks.values()) == sum(len(t) for t in tasks)
    return write, time.perf_counter() - t0


def bench_sqlite(path: Path, tasks: list[list[dict]], sync: str = "NORMAL",
                 ) -> tuple[float, float]:
    c = Campaign("bench", (), lambda s: [], SCHEMA, key_columns=("name", "d", "seed"),
                 key=lambda s: s)
    t0 = time.perf_counter()
    with SqliteStore(path) as st:
        st.conn.execute(f"PRAGMA synchronous={sync}")
        for rows in tasks:
            st.write(c, (rows[0]["name"], rows[0]["d"], rows[0]["seed"]), rows)
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    with SqliteStore(path) as st:
        n = len(st.frame(c))
    assert n == sum(len(t) for t in tasks)
    return write, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000, help="rows written (default 10000)")
    ap.add_argument("--per-task", type=int, default=10, help="rows per task (default 10)")
    args = ap.parse_args()
    tasks = _rows(args.rows, args.per_task)
    n = sum(len(t) for t in tasks)
    with tempfile.TemporaryDirectory() as tmp:
        csv_w, csv_r = bench_csv(Path(tmp) / "runs.csv", tasks)
        sql_w, sql_r = bench_sqlite(Path(tmp) / "runs.sqlite", tasks)
        full_w, _ = bench_sqlite(Path(tmp) / "full.sqlite", tasks, "FULL")
    print(f"{n} rows in {len(tasks)} tasks of {args.per_task}")
    print(f"CSV store (fsync per block):       write {n / csv_w:10.0f} rows/s ({csv_w:.3f} s), "
          f"read {csv_r:.3f} s")
    print(f"SQLite store (a transaction/task): write {n / sql_w:10.0f} rows/s ({sql_w:.3f} s), "
          f"read {sql_r:.3f} s")
    print(f"SQLite, synchronous=FULL (an fsync per commit, the CSV store's durability): write "
          f"{n / full_w:.0f} rows/s ({full_w:.3f} s)")
    print(f"write throughput ratio SQLite / CSV: {csv_w / sql_w:.2f} "
          f"(synchronous=FULL: {csv_w / full_w:.2f})")


if __name__ == "__main__":
    main()
