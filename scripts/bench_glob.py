#!/usr/bin/env python3
"""Parity and speed of `ov glob -o json` against a reference and `fdfind --glob` (issue 4).

The reference: the files and symlinks git would list (`git ls-files -co
--exclude-standard` in the edge folder; a plain walk of the standard library, which
holds no ignore files), without hidden paths, filtered with wcmatch `globmatch`
(GLOBSTAR | BRACE, '/' separators) against the path relative to the root. fd runs with
`--full-path --glob ROOT/PATTERN` and `-s` (fd folds case by default), so its `*` does not cross `/` either.

Trees: the Python standard library without site-packages (in place) and an edge-case
folder made here. Timing: medians over `--runs`; the median of per-pattern ratios
ov/fdfind is reported.

    python3 scripts/bench_glob.py [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wcmatch import glob as wc

STDLIB = Path(os.__file__).parent
FD = shutil.which("fdfind") or shutil.which("fd")
BIG = "100000000"

PATTERNS = [
    "*.py", "**/*.py", "**/*.txt", "**/test_*.py", "test/*.py", "email/**",
    "**/*.{c,h}", "**/*.{toml,json}", "**/[a-c]*.py", "**/[!a-z]*", "**/?.py",
    "**/__init__.py", "**/data/**/*.toml", "json/*", "**/*.pem", "**/*tool*/**/*.py",
    "**/*.nothing", "encodings/cp*.py", "**/*_*_*.py", "*/*/*.py", "**/names/*",
    "**/*.log", "**/*.md",
]


# `ov` run as a user runs it, and the timing loop: shared with the grep benchmark
from bench_grep import OV, _run_timed, timed  # noqa: E402

def make_edge(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    files = {
        ".gitignore": "*.log\n!keep.log\nbuild/\nsub/*.tmp\n",
        "debug.log": "", "keep.log": "", "build/x.py": "", "sub/a.tmp": "", "sub/b.py": "",
        ".hidden.py": "", ".dir/x.py": "", "names/with space.py": "", "names/ünï.py": "",
        "names/日本.txt": "", "a/b/c/d.py": "", "a/b/e.toml": "", "data/x/y.toml": "",
        "README.md": "", "doc/guide.md": "",
    }
    for rel, text in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    os.symlink("..", d / "names" / "loop")
    os.symlink("README.md", d / "link.md")
    return d


def reference_files(root: Path, exclude_top: str | None) -> list[str]:
    if (root / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                             capture_output=True, check=True).stdout.decode().split("\0")
        files = [f for f in out if f]
    else:
        files = []
        for dp, dns, fns in os.walk(root):
            rel = os.path.relpath(dp, root)
            dns[:] = [x for x in dns if not (rel == "." and x == exclude_top)]
            for f in fns:
                files.append(f if rel == "." else f"{rel}/{f}")
            for x in dns:  # symlinked folders are listed as links, never entered
                if os.path.islink(os.path.join(dp, x)):
                    files.append(x if rel == "." else f"{rel}/{x}")
            dns[:] = [x for x in dns if not os.path.islink(os.path.join(dp, x))]
    return [f for f in files if not any(part.startswith(".") for part in f.split("/"))]


def ref_match(files: list[str], pattern: str) -> set[str]:
    return {f for f in files if wc.globmatch(f, pattern, flags=wc.GLOBSTAR | wc.BRACE | wc.FORCEUNIX)}


def ov_cmd(pattern: str, extra: list[str]) -> list[str]:
    return [*OV, "glob", "-o", "json", "--node-limit", BIG,
            "--level-limit", "1000", *extra, "--", pattern]


def fd_cmd(root: Path, pattern: str, extra: list[str]) -> list[str]:
    return [FD, "-s", "-t", "f", "-t", "l", *extra, "--full-path", "--glob", f"{root}/{pattern}", "."]


def ov_set(root: Path, pattern: str, extra: list[str]) -> set[str]:
    p = subprocess.run(ov_cmd(pattern, extra), cwd=root, capture_output=True)
    d = json.loads(p.stdout)
    if d["status"] != "ok":
        raise RuntimeError(f"ov failed on {pattern!r}: {d['error']}")
    return set(d["result"]["matches"])


def fd_set(root: Path, pattern: str, extra: list[str]) -> set[str]:
    p = subprocess.run(fd_cmd(root, pattern, extra), cwd=root, capture_output=True)
    return {x.removeprefix("./") for x in p.stdout.decode().splitlines()}


# -- a big tree (issue 18): the Linux kernel, or any tree of 100 MB+ with nested .gitignore
BIG_PATTERNS = ["**/*.c", "**/*.h", "drivers/**/*.c", "**/Makefile", "**/Kconfig", "fs/*/*.c",
                "**/*.{c,h}", "arch/*/include/asm/*.h", "**/*_test.c", "Documentation/**/*.rst",
                "include/linux/*.h", "**/*.dts"]


def big_tree(tree: Path, runs: int) -> int:
    """Parity with fdfind and timings of ov glob with the index's listing and without
    (--no-index), interleaved run by run; returns the number of mismatches."""
    if not (tree / ".ov" / "index.db").is_file():
        print(f"{tree}: no index (run `ov index --no-embed` there first)", file=sys.stderr)
        return 2
    print(f"tree {tree}; load before: {os.getloadavg()[0]:.2f}")
    mismatches, rows = 0, []
    for pat in BIG_PATTERNS:
        want = fd_set(tree, pat, [])
        for extra in ([], ["--no-index"]):
            got = ov_set(tree, pat, extra)
            if got != want:
                mismatches += 1
                print(f"MISMATCH {' '.join(extra)} {pat}: ov-only {sorted(got - want)[:3]} "
                      f"fd-only {sorted(want - got)[:3]}")
        cmds = {"fd": fd_cmd(tree, pat, []),
                "ov": [*OV, "glob", "--node-limit", BIG, "--", pat],
                "ov-noidx": [*OV, "glob", "--no-index", "--node-limit", BIG, "--", pat]}
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for _ in range(runs):
            for k, cmd in cmds.items():
                times[k].append(_run_timed(cmd, tree))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in times.items()}
        rows.append(med)
        print(f"{pat:26} {len(want):6} paths  "
              + "  ".join(f"{k} {w:.3f}s/{c:.3f}cpu" for k, (w, c) in med.items()), flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}; mismatches: {mismatches} "
          f"(over {len(BIG_PATTERNS)} patterns x 2 modes)")
    for k in ("ov", "ov-noidx"):
        wall = statistics.median(r[k][0] / r["fd"][0] for r in rows)
        cpu = statistics.median(r[k][1] / r["fd"][1] for r in rows)
        print(f"median {k}/fdfind wall {wall:.2f}x, cpu {cpu:.2f}x ({len(rows)} patterns)")
    return mismatches


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tree", type=Path, help="a big tree with a fresh index (issue 18 suite)")
    args = ap.parse_args()
    if FD is None:
        print("fdfind not found (apt-get install fd-find)", file=sys.stderr)
        return 2
    if args.tree is not None:
        return 1 if big_tree(args.tree.resolve(), args.runs) else 0
    std = STDLIB.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="ov-bench-glob-"))
    failures, rows, ratios = 0, [], []
    try:
        edge = make_edge(tmp / "edge")
        trees = (("stdlib", std, ["--exclude-uri", "site-packages"], ["-E", "/site-packages"],
                  reference_files(std, "site-packages")),
                 ("edge", edge, [], [], reference_files(edge, None)))
        for pat in PATTERNS:
            n = 0
            for name, root, ox, fx, files in trees:
                a, r, f = ov_set(root, pat, ox), ref_match(files, pat), fd_set(root, pat, fx)
                for other, label in ((r, "reference"), (f, "fdfind")):
                    if a != other:
                        failures += 1
                        print(f"MISMATCH [{name}] {pat} vs {label}: ov-only {sorted(a - other)[:4]} "
                              f"{label}-only {sorted(other - a)[:4]}")
                if name == "stdlib":
                    n = len(a)
            if args.quick:
                rows.append((pat, n, None, None))
                continue
            t_ov = timed(ov_cmd(pat, trees[0][2]), std, args.runs)
            t_fd = timed(fd_cmd(std, pat, trees[0][3]), std, args.runs)
            ratios.append(t_ov / t_fd)
            rows.append((pat, n, t_ov, t_fd))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'pattern':28} {'paths':>6} {'ov s':>7} {'fd s':>7} {'ov/fd':>6}")
    for pat, n, t_ov, t_fd in rows:
        tail = "" if t_ov is None else f" {t_ov:7.3f} {t_fd:7.3f} {t_ov / t_fd:6.2f}"
        print(f"{pat:28} {n:6}{tail}")
    print(f"patterns: {len(PATTERNS)}, mismatches: {failures}")
    if ratios:
        print(f"median ov/fdfind: {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
