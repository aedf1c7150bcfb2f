"""A ranked search while the background worker embeds beside it: with the search's claim on
the CPU (ov.indexer.Searching, which the worker waits for) and without it, and with no
worker at all.

    python3 scripts/bench_beside_worker.py TREE [--rounds 3] [--vectors-now 32]
    python3 scripts/bench_beside_worker.py TREE --grep [--rounds 5]

TREE holds an index whose vectors are still coming (for instance a copy of the kernel
after a first `ov search`, its worker stopped by `ov index --stop`). The run starts the
worker again (it takes away the stop mark; the next search resumes it), waits for its
embed phase, then times `Index.search` in process (the query model loaded once, as in
`ov mcp`), each query with and without the claim in turn, and finally stops the worker
and times the same queries alone. The worker's rows embedded per minute in each arm say
what the claim costs it. The worker is stopped at the end and kept stopped, as `ov index
--stop` leaves it (`ov index` completes the index).

With `--grep` it times `ov grep` (a child process each, as a user runs it) and rg on the
same patterns instead, alternately, while the worker embeds and after it is stopped: what
the worker costs each. grep takes no claim: at the worker's nice 10 it lost 0-7 %, and a
claim (importing the indexer to ask whether a worker runs) cost it more than that
(docs/BENCHMARKS.md, "grep beside the worker").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERIES = ["allocate memory for network buffer", "how does the scheduler pick the next task",
           "free pages when memory is low", "parse command line options of the kernel",
           "read the temperature sensor"]


# (args to `ov grep` and to rg): a rare literal (the index's prefilter reads a few files),
# a count over many files, and a regex that reads most of the tree
GREPS = [(["-F", "ext4_fc_replay_inode"], ["-F", "ext4_fc_replay_inode"]),
         (["-c", "EXPORT_SYMBOL_GPL"], ["-c", "EXPORT_SYMBOL_GPL"]),
         (["-l", r"spin_lock_irqsave\(&\w+->lock"], ["-l", r"spin_lock_irqsave\(&\w+->lock"])]


def _run(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _grep_round(root: Path, times: dict[str, list[float]], arm: str) -> None:
    ov = [sys.executable, "-m", "ov", "grep"]
    for ov_args, rg_args in GREPS:
        times[f"ov grep {' '.join(ov_args)} ({arm})"].append(_run(ov + ov_args, root))
        times[f"rg {' '.join(rg_args)} ({arm})"].append(_run(["rg", *rg_args], root))


def _embedding_worker(db: Path, wait_s: float = 900) -> None:
    """Wait until the index's worker is in its embed phase (it may still be starting or
    scanning); exit when it does not get there."""
    from ov.indexer import worker_state  # noqa: PLC0415

    deadline = time.monotonic() + wait_s
    state = worker_state(db)
    while (state is None or state.get("phase") != "embed") and time.monotonic() < deadline:
        time.sleep(1)
        state = worker_state(db)
    if state is None or state.get("phase") != "embed":
        sys.exit("no worker in its embed phase (the index is complete, or the worker did not start)")
    print(f"worker pid {state['pid']} embedding; load {os.getloadavg()[0]:.2f}", flush=True)


def grep_main(root: Path, db: Path, rounds: int) -> int:
    """`ov grep` and rg while the worker embeds, then with the worker stopped."""
    from ov.indexer import pause_worker, paused_file  # noqa: PLC0415
    from ov.worker import stop  # noqa: PLC0415

    if not shutil.which("rg"):
        sys.exit("rg not found: the comparison needs it")
    paused_file(db).unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "ov", "search", "warm up", "-n", "1"], cwd=root,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # resumes the worker
    _embedding_worker(db)
    times: dict[str, list[float]] = {}
    for arm in ("worker", "no worker"):
        if arm == "no worker":
            stop(db)
            pause_worker(db)
            print(f"worker stopped; load {os.getloadavg()[0]:.2f}", flush=True)
            time.sleep(5)
        for ov_args, rg_args in GREPS:
            for k in (f"ov grep {' '.join(ov_args)} ({arm})", f"rg {' '.join(rg_args)} ({arm})"):
                times[k] = []
        _grep_round(root, {k: [] for k in times}, arm)  # warm the page cache, not counted
        for _ in range(rounds):
            _grep_round(root, times, arm)
    print(f"\n{rounds} rounds; load at the end {os.getloadavg()[0]:.2f}\n")
    print("| command | worker embedding: median s | worker stopped: median s | ratio |")
    print("| --- | --- | --- | --- |")
    for ov_args, rg_args in GREPS:
        for name in (f"ov grep {' '.join(ov_args)}", f"rg {' '.join(rg_args)}"):
            a, b = (statistics.median(times[f"{name} ({arm})"]) for arm in ("worker", "no worker"))
            print(f"| `{name}` | {a:.3f} | {b:.3f} | {a / b:.2f} |")
    return 0


class _NoClaim:
    """`ov.indexer.Searching` that claims nothing: the search as it ran before the claim."""

    def __init__(self, db_path) -> None:
        self.fd = None

    def release(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vectors-now", type=int, default=None, help="OV_VECTORS_NOW_FILES for the searches")
    ap.add_argument("--grep", action="store_true", help="time `ov grep` and rg instead of ranked searches")
    args = ap.parse_args(argv)
    if args.grep:
        root = args.tree.resolve()
        db = root / ".ov" / "index.db"
        if not db.exists():
            sys.exit(f"{db}: no index (run a first `ov search` in the tree)")
        return grep_main(root, db, args.rounds)
    os.environ.pop("OV_EMBEDDER", None)  # the real model
    if args.vectors_now is not None:
        os.environ["OV_VECTORS_NOW_FILES"] = str(args.vectors_now)
    from ov import engine, indexer  # noqa: PLC0415
    from ov.api import Index  # noqa: PLC0415
    from ov.indexer import pause_worker, paused_file  # noqa: PLC0415
    from ov.worker import stop  # noqa: PLC0415

    if args.vectors_now is not None:
        engine.VECTORS_NOW_FILES = args.vectors_now
    root = args.tree.resolve()
    db = root / ".ov" / "index.db"
    if not db.exists():
        sys.exit(f"{db}: no index (run a first `ov search` in the tree)")
    paused_file(db).unlink(missing_ok=True)
    claim = indexer.Searching

    def embedded() -> int:
        with Index.open(root, readonly=True) as ix:
            return ix.store.coverage()[0]

    with Index.open(root, auto_index=True) as ix:  # resumes the worker
        ix.search("warm up the model")
        _embedding_worker(db)
        time.sleep(5)
        times: dict[str, list[float]] = {"claim": [], "no claim": [], "no worker": []}
        spent: dict[str, float] = {"claim": 0.0, "no claim": 0.0}
        rows: dict[str, int] = {"claim": 0, "no claim": 0}
        for r in range(args.rounds):
            for i, q in enumerate(QUERIES):
                order = ("claim", "no claim") if (r + i) % 2 == 0 else ("no claim", "claim")
                for arm in order:
                    indexer.Searching = claim if arm == "claim" else _NoClaim
                    before = embedded()
                    t0 = time.perf_counter()
                    ix.search(q)
                    dt = time.perf_counter() - t0
                    times[arm].append(dt)
                    spent[arm] += dt
                    rows[arm] += embedded() - before
        indexer.Searching = claim
        stop(db)
        pause_worker(db)  # no later search starts it again
        print(f"worker stopped; load {os.getloadavg()[0]:.2f}", flush=True)
        time.sleep(3)
        for r in range(args.rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                ix.search(q)
                times["no worker"].append(time.perf_counter() - t0)
    print(f"\nvectors-now files: {engine.VECTORS_NOW_FILES}; {args.rounds} rounds of {len(QUERIES)} queries; "
          f"load at the end {os.getloadavg()[0]:.2f}\n")
    print("| search | median s | max s | the worker's rows committed during the searches, per second |")
    print("| --- | --- | --- | --- |")
    for arm, ts in times.items():
        rate = f"{rows[arm] / spent[arm]:.1f}" if arm in rows and spent[arm] else "-"
        print(f"| {arm} | {statistics.median(ts):.2f} | {max(ts):.2f} | {rate} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
