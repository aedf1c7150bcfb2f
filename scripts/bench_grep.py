#!/usr/bin/env python3
"""Parity and speed of `ov grep -o json` against `rg --json` (issue 4).

For each pattern, the (path, line) sets of both tools must be equal, on two trees:
the Python standard library (without site-packages; searched in place, never copied)
and a folder of edge cases made here (ignore files with `!` re-includes, dotfiles,
binaries, a NUL past ripgrep's first buffer, invalid UTF-8, CRLF, a 3 MB line, a
symlink loop, names with spaces and non-ASCII). Hidden and ignore rules are aligned:
both skip dotfiles, and rg reads .gitignore outside git repos too (`--no-require-git`).

Timing: each tool runs `--runs` times per pattern on the standard library; the report
gives medians and the median of the per-pattern ratios ov/rg. ov runs with a node limit
high enough to return every match, so both print the same work.

    python3 scripts/bench_grep.py [--runs 3] [--stdlib DIR] [--quick]
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

STDLIB = Path(os.__file__).parent
BIG = "100000000"

# (flags, pattern): literals, -i, anchors, words, alternations, classes, Unicode, none.
PATTERNS: list[tuple[list[str], str]] = [
    ([], "def"),
    ([], "PyUnicode_FromFormatV"),
    ([], "import os"),
    ([], "__init__"),
    (["-F"], "a.b("),
    (["-F"], "self.assertEqual("),
    (["-i"], "hello world"),
    (["-i"], "copyright"),
    (["-i"], "Kelvin"),
    ([], "^import"),
    ([], "^class \\w+\\(object\\):$"),
    ([], "\\)$"),
    ([], "^\\s*$"),
    ([], "^$"),
    (["-w"], "self"),
    (["-w"], "os"),
    ([], "\\bfoo\\b"),
    ([], "foo|bar|baz"),
    ([], "(?:TODO|FIXME|XXX)"),
    ([], "\\w+Error\\b"),
    ([], "[A-Z]{5,}"),
    ([], "\\d{4}-\\d{2}-\\d{2}"),
    ([], "0x[0-9a-fA-F]+"),
    ([], "[^\\x00-\\x7f]"),
    ([], "\\p{Greek}+"),
    ([], "[éèê]"),
    ([], "[\\u4e00-\\u9fff]"),
    ([], "zzqqxxnomatch"),
    ([], "x\\s+y"),
    ([], "[^a-z]{3}$"),
    ([], "crlfmark$"),
    ([], "crlfmark\\s"),
    ([], "needle3mb"),
    ([], "end of a long line$"),
    ([], "latebinary"),
    ([], "caf.\\b"),
]



# `ov` as a user runs it: -P keeps the searched folder (a copy of the standard library)
# off sys.path, so Python's own modules are not imported from it; bytecode is cached
# outside the tree, as an installed package's is (this machine sets
# PYTHONDONTWRITEBYTECODE, which would recompile every module on every run).
OV = [sys.executable, "-P", "-m", "ov"]
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", "/tmp/ov-bench/pycache")

def make_edge(d: Path) -> Path:
    """The edge-case folder (a git repo, so rg and ov read the same ignore files)."""
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(d)], check=True)

    def w(rel: str, data: bytes | str) -> None:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    w(".gitignore", "*.log\n!keep.log\nbuild/\nsub/*.tmp\n")
    w("debug.log", "def ignored\n")
    w("keep.log", "def kept crlfmark\n")
    w("build/out.py", "def built\n")
    w("sub/a.tmp", "def tmp\n")
    w("sub/.ignore", "skipme.txt\n")
    w("sub/skipme.txt", "def skipped\n")
    w("sub/ok.py", "def ok(): pass\nimport os\n")
    w(".hidden.py", "def hidden\n")
    w(".dir/x.py", "def hidden dir\n")
    w("bin/early.bin", b"def\x00binary\n")
    late = b"latebinary first\n" + (b"y" * 99 + b"\n") * 1500 + b"latebinary after\x00\nlatebinary 3\n"
    w("bin/late.txt", late)
    w("bad-utf8.txt", b"caf\xe9 au lait\ncaf\xc3\xa9 cr\xc3\xa8me\nself def\n")
    w("crlf.txt", b"crlfmark\r\nline two crlfmark\r\nlast crlfmark\n")
    w("big/long.txt", "x" * 3_000_000 + " needle3mb end of a long line\nshort def\n")
    w("names/with space.py", "def spaced(): x  y\n")
    w("names/ünïcödé.py", "def ünïcödé(): return 'Ωμέγα λ'\n")
    w("names/日本.txt", "漢字 テスト def\n")
    w("empty.txt", "")
    w("nonl.txt", "def no newline at end")
    os.symlink("..", d / "names" / "loop")
    os.symlink("crlf.txt", d / "link.txt")
    return d


# Lines with invalid UTF-8: ov searches the decoded text (U+FFFD for each bad byte, the
# DESIGN's decoding), rg the raw bytes, so classes like [^\x00-\x7f] may differ there.
# They are listed apart (and counted), not compared.
INVALID: set[tuple[str, int]] = set()


def rg_lines(root: Path, flags: list[str], pattern: str, extra: list[str]) -> set[tuple[str, int]]:
    p = subprocess.run(["rg", "--json", "--no-require-git", *extra, *flags, "-e", pattern, "."],
                       cwd=root, capture_output=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"rg failed on {pattern!r}: {p.stderr.decode(errors='replace')}")
    out = set()
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        if ev["type"] == "match":
            d = ev["data"]
            path = d["path"].get("text") or d["path"].get("bytes")
            key = (path.removeprefix("./"), d["line_number"])
            out.add(key)
            if "text" not in d["lines"]:
                INVALID.add(key)
    return out


def ov_lines(root: Path, flags: list[str], pattern: str, extra: list[str]) -> set[tuple[str, int]]:
    p = subprocess.run([*OV, "grep", "-o", "json", "--node-limit", BIG,
                        "--level-limit", "1000", *extra, *flags, "--", pattern],
                       cwd=root, capture_output=True)
    d = json.loads(p.stdout)
    if d["status"] != "ok":
        raise RuntimeError(f"ov failed on {pattern!r}: {d['error']}")
    for m in d["result"]["matches"]:
        if "\ufffd" in m["content"]:
            INVALID.add((m["path"], m["line"]))
    return {(m["path"], m["line"]) for m in d["result"]["matches"]}


def timed(cmd: list[str], cwd: Path, runs: int) -> float:
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stdlib", type=Path, default=STDLIB)
    ap.add_argument("--quick", action="store_true", help="parity only, no timing")
    args = ap.parse_args()
    if not shutil.which("rg"):
        print("rg not found (pip install --only-binary :all: ripgrep)", file=sys.stderr)
        return 2
    std = args.stdlib.resolve()
    rg_std = ["-g", "!/site-packages/"]
    ov_std = ["--exclude-uri", "site-packages"]
    tmp = Path(tempfile.mkdtemp(prefix="ov-bench-grep-"))
    failures = 0
    ratios = []
    rows = []
    try:
        edge = make_edge(tmp / "edge")
        for flags, pat in PATTERNS:
            label = " ".join([*flags, pat])
            for name, root, rx, ox in (("stdlib", std, rg_std, ov_std), ("edge", edge, [], [])):
                INVALID.clear()
                a, b = ov_lines(root, flags, pat, ox), rg_lines(root, flags, pat, rx)
                excused = (a ^ b) & INVALID
                if excused:
                    print(f"note [{name}] {label}: {len(excused)} lines with invalid UTF-8 differ")
                    a, b = a - excused, b - excused
                if a != b:
                    failures += 1
                    print(f"MISMATCH [{name}] {label}: ov-only {sorted(a - b)[:5]} "
                          f"rg-only {sorted(b - a)[:5]}")
                if name == "stdlib":
                    n = len(b)
            if args.quick:
                rows.append((label, n, None, None))
                continue
            t_ov = timed([*OV, "grep", "-o", "json", "--node-limit", BIG,
                          "--level-limit", "1000", *ov_std, *flags, "--", pat], std, args.runs)
            t_rg = timed(["rg", "--json", "--no-require-git", *rg_std, *flags, "-e", pat, "."],
                         std, args.runs)
            ratios.append(t_ov / t_rg)
            rows.append((label, n, t_ov, t_rg))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'pattern':40} {'lines':>7} {'ov s':>7} {'rg s':>7} {'ov/rg':>6}")
    for label, n, t_ov, t_rg in rows:
        if t_ov is None:
            print(f"{label[:40]:40} {n:7}")
        else:
            print(f"{label[:40]:40} {n:7} {t_ov:7.3f} {t_rg:7.3f} {t_ov / t_rg:6.2f}")
    print(f"patterns: {len(PATTERNS)}, parity mismatches: {failures}")
    if ratios:
        print(f"median ov/rg: {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
