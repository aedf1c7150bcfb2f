#!/usr/bin/env python3
"""`ov grep` with a fresh index, for selective literals, against rg (issue 4).

The tree is the standard-library copy of scripts/bench_index.py (no site-packages, no
__pycache__; /tmp/ov-bench/stdlib by default), indexed keywords-only (`ov index
--no-embed`: grep reads only the trigram table and the files' sizes and mtimes). For each
rare identifier (and one literal found nowhere) it checks that `ov grep -o json` with the
index, `ov grep --no-index -o json` and `rg --json` give the same (path, line) set, then
times the three alternately, `--runs` times each, and reports medians and the ratios
ov/rg. Run it on a quiet machine: every figure here is a few tens of milliseconds.

    python3 scripts/bench_grep_index.py [--runs 7] [--workdir /tmp/ov-bench]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_grep as bg  # noqa: E402
import bench_index as bi  # noqa: E402

# Identifiers that occur in a handful of the stdlib's files, and one that occurs nowhere.
LITERALS = ["PyUnicode_FromFormatV", "_siftdown_max", "SO_REUSEPORT", "getfullargspec",
            "ThreadPoolExecutor", "zzqqxxnomatch"]


def ensure_index(tree: Path) -> dict:
    """A fresh keywords-only index of `tree` (incremental: a no-op when it is current)."""
    t = time.perf_counter()
    rep = bi.ov_index(tree, "--no-embed")["report"]
    rep["seconds"] = time.perf_counter() - t
    return rep


def timed_once(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=bi.child_env())
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=bi.DEFAULT_WORKDIR)
    args = ap.parse_args()
    if not shutil.which("rg"):
        print("rg not found (pip install --only-binary :all: ripgrep)", file=sys.stderr)
        return 2
    tree = bi.copy_stdlib(args.workdir / "stdlib")
    rep = ensure_index(tree)
    files = sum(1 for _ in tree.rglob("*") if _.is_file() and ".ov" not in _.parts)
    indexed = sum(rep.get(k, 0) for k in ("added", "updated", "unchanged"))
    print(f"tree: {tree} ({files} files); index: {indexed} files, refresh "
          f"{rep['seconds']:.2f} s ({rep.get('added', 0) + rep.get('updated', 0)} (re)indexed); "
          f"load {bi.loadavg()}")
    # rg skips .ov/ by its .gitignore (`*`) as ov does; dotfiles are skipped on both sides.
    ov = [*bg.OV, "grep", "-o", "json", "--node-limit", bg.BIG, "--level-limit", "1000", "-F"]
    rg = ["rg", "--json", "--no-require-git", "-F"]
    failures = 0
    rows = []
    for lit in LITERALS:
        with_idx = bg.ov_lines(tree, ["-F"], lit, [])
        without = bg.ov_lines(tree, ["-F"], lit, ["--no-index"])
        ref = bg.rg_lines(tree, ["-F"], lit, [])
        if not with_idx == without == ref:
            failures += 1
            print(f"MISMATCH {lit}: index-only {sorted(with_idx - ref)[:3]} "
                  f"rg-only {sorted(ref - with_idx)[:3]} no-index-diff {sorted(without ^ ref)[:3]}")
        ts: dict[str, list[float]] = {"index": [], "noindex": [], "rg": []}
        for _ in range(args.runs):  # alternate, so load drifts hit all three alike
            ts["index"].append(timed_once([*ov, "--", lit], tree))
            ts["noindex"].append(timed_once([*ov, "--no-index", "--", lit], tree))
            ts["rg"].append(timed_once([*rg, "-e", lit, "."], tree))
        med = {k: statistics.median(v) for k, v in ts.items()}
        rows.append((lit, len(ref), med["index"], med["noindex"], med["rg"]))
    # Python's own start-up, for scale: no ov code at all.
    bare = statistics.median(timed_once([sys.executable, "-P", "-c", "pass"], tree)
                             for _ in range(args.runs))
    print(f"\n{'literal':24} {'lines':>5} {'ov idx s':>9} {'ov -noidx':>9} {'rg s':>7} "
          f"{'idx/rg':>7} {'noidx/rg':>8}")
    for lit, n, a, b, r in rows:
        print(f"{lit:24} {n:5d} {a:9.3f} {b:9.3f} {r:7.3f} {a / r:7.2f} {b / r:8.2f}")
    print(f"literals: {len(rows)}, parity mismatches: {failures}")
    print(f"median ov(index)/rg: {statistics.median(a / r for _, _, a, _, r in rows):.2f}x; "
          f"median ov(--no-index)/rg: {statistics.median(b / r for _, _, _, b, r in rows):.2f}x; "
          f"`python -P -c pass`: {bare:.3f} s; load {bi.loadavg()}")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.pop("OV_EMBEDDER", None)
    sys.exit(main())
