"""Keyword-only index rate and size (issue 13.4): `ov index --no-embed` of a fresh index.

    python3 scripts/bench_kwindex.py --tree /work/linux-ad --runs 1
    python3 scripts/bench_kwindex.py --tree /work/stdlib-copy --runs 3

Each run is the real CLI (`python -m ov index TREE --no-embed --db WORK/index.db`) in a
child process, into a fresh database outside the tree (the tree is never written to).
Per run: wall time; the CPU time (user + system) of the `ov` process, the writer (its
pool's readers are not counted: they are no children it waits for); the load average
before and after (`os.getloadavg`: on a shared machine a wall time means little without
it); the bytes of text indexed (`files.size`, what the rate is of); the index's size on
disk (the database and its WAL) and its largest tables (SQLite's `dbstat`). The medians
over the runs are printed last, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _fresh(db: Path) -> None:
    for p in db.parent.glob(db.name + "*"):
        p.unlink()


def _sizes(db: Path) -> tuple[int, int, list[tuple[str, int]]]:
    """(bytes of text indexed, bytes of the index on disk, the largest tables)."""
    from ov.store import connect

    disk = sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())
    con = connect(db, readonly=True)
    try:
        source = con.execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0]
        tables = con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                             "ORDER BY 2 DESC LIMIT 8").fetchall()
    finally:
        con.close()
    return source, disk, [(n, int(b)) for n, b in tables]


def run_once(tree: Path, db: Path) -> dict:
    _fresh(db)
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", str(tree), "--no-embed", "--db", str(db),
                          "--no-progress", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    if p.returncode != 0:
        raise SystemExit(f"ov index failed ({p.returncode}): {err.decode()[-2000:]}")
    load1 = os.getloadavg()[0]
    result = json.loads(out)["result"]
    source, disk, tables = _sizes(db)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 1), "load_before": load0, "load_after": load1,
            "files": result["added"], "chunks": result["chunks"], "source_mb": round(source / 1e6, 2),
            "index_mb": round(disk / 1e6, 2), "rate_mb_s": round(source / 1e6 / wall, 3),
            "ratio": round(disk / source, 3) if source else None,
            "tables_mb": {n: round(b / 1e6, 1) for n, b in tables}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "ov-bench-kwindex")
    args = ap.parse_args()
    if not args.tree.is_dir():
        raise SystemExit(f"{args.tree}: no such folder")
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = args.workdir / "index.db"
    runs = []
    for i in range(args.runs):
        r = run_once(args.tree.resolve(), db)
        runs.append(r)
        print(json.dumps({"run": i + 1, **r}), flush=True)
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("wall_s", "cpu_s", "rate_mb_s", "index_mb", "ratio", "load_before", "load_after")}
    print(json.dumps({"tree": str(args.tree), "runs": len(runs), "median": med}))
    _fresh(db)


if __name__ == "__main__":
    main()
