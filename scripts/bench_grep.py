#!/usr/bin/env python3
"""Parity and speed of `ov grep -o json` against `rg --json` (issue 4).

For each pattern, the (path, line) sets of both tools must be equal, on two trees:
the Python standard library (without site-packages; searched in place, never copied)
and a folder of edge cases made here (ignore files with `!` re-includes, dotfiles,
binaries, a NUL past ripgrep's first buffer, invalid UTF-8, CRLF, a 3 MB line, a
symlink loop, names with spaces and non-ASCII). Hidden and ignore rules are aligned:
both skip dotfiles, and both read .gitignore only inside a git work tree (rg's default,
and ov's since it follows it: the edge-case folder is made one). Debian's kernel source
ends its .gitignore with `/*` and `!/debian/`: outside git, as unpacked, every file counts.

Timing: each tool runs `--runs` times per pattern on the standard library; the report
gives medians and the median of the per-pattern ratios ov/rg. ov runs with a node limit
high enough to return every match, so both print the same work.

A big tree (`--tree`, issue 18's suite) says whether a watcher's change journal served
grep (it spares grep a stat of each file the index rules out); `--watch` runs
`ov index --watch --no-embed` on the tree for the length of the run.

    python3 scripts/bench_grep.py [--runs 3] [--stdlib DIR] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
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
    (["-v"], "."),  # inverted: a line's first match is enough (it visited every character's)
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


def rg_lines(root: Path, flags: list[str], pattern: str, extra: list[str],
             paths: list[str] = ()) -> set[tuple[str, int]]:
    p = subprocess.run(["rg", "--json", *extra, *flags, "-e", pattern,
                        *(paths or ["."])], cwd=root, capture_output=True)
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


# -- a big tree (issue 18): the Linux kernel, or any tree of 100 MB+ with nested .gitignore
# Selective literals: identifiers in at most 20 files (the script checks and says so);
# common patterns: thousands of lines. Each pattern: parity of (path, line) sets of
# `ov grep -o json` (with the index, and with --no-index) against `rg --json`, then
# timings of text output (`rg -n`, as ov always numbers lines) for rg, ov with the index
# and ov --no-index, interleaved run by run so load swings hit all three alike.
SELECTIVE = ["ieee80211_sta_ps_deliver_wakeup", "xhci_ring_cmd_db", "ext4_fc_replay_inode",
             "btrfs_scrub_cancel_dev", "kvm_mmu_unprotect_page", "nvme_tcp_try_send_ddgst",
             "drm_gem_shmem_madvise", "tcp_rack_reo_timeout", "SND_SOC_DAPM_PINCTRL",
             "blk_mq_tagset_wait_completed_request"]
# for a tree without drivers/ (arch, Documentation and the small folders beside them)
SELECTIVE_ARCH = ["kvm_mmu_unprotect_page", "ieee80211_sta_ps_deliver_wakeup", "x86_pmu_enable_all",
                  "sev_es_terminate", "arm64_early_this_cpu_has_bti", "mips_cm_probe",
                  "pseries_lpar_register_process_table", "s390_kernel_write", "klp_shadow_alloc",
                  "cpu_has_vmx", "arch_stack_walk_user", "irq_fpu_usable"]
COMMON = [(["-F"], "EXPORT_SYMBOL_GPL"), (["-F"], "static inline"), (["-F"], "mutex_lock("),
          (["-F"], "return -EINVAL;"), ([], "spin_lock_irq(save|restore)"),
          (["-F"], "#include <linux/slab.h>"), (["-w"], "kfree"), (["-i"], "copyright"),
          ([], "^static const struct"), ([], "[a-z]+_ops\\b")]


def _rusage_children() -> float:
    import resource  # noqa: PLC0415

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child: user + system) of one run, output to /dev/null."""
    c0, t0 = _rusage_children(), time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, _rusage_children() - c0


def _ov_set(tree: Path, flags: list[str], pat: str, extra: list[str],
            paths: list[str] = ()) -> set:
    p = subprocess.run([*OV, "grep", "-o", "json", "--node-limit", BIG, *extra, *flags, "--", pat,
                        *paths], cwd=tree, capture_output=True)
    d = json.loads(p.stdout)
    if d["status"] != "ok":
        raise RuntimeError(f"ov failed on {pat!r}: {d['error']}")
    return {(m["path"], m["line"]) for m in d["result"]["matches"]}


def journal_line(tree: Path) -> str:
    """Whether a watcher's change journal serves grep on `tree` (ov.journal)."""
    from ov.journal import status  # noqa: PLC0415

    j = status(tree / ".ov" / "index.db", tree)
    if j is None:
        return "none (grep stats each file the index rules out)"
    return (f"ready, {j['changed']} paths changed since the catch-up" if j["ready"]
            else f"not vouching: {j['not_ready']}")


class Watching:
    """`ov index --watch --no-embed` on `tree` for the length of a `with` block, entered
    once its change journal vouches for the index."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Watching:
        from ov.journal import ask  # noqa: PLC0415

        self.proc = subprocess.Popen([*OV, "index", "--watch", "--no-embed"], cwd=self.tree,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while ask(self.tree / ".ov" / "index.db", self.tree) is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ov index --watch did not start a change journal")
            time.sleep(0.2)
        return self

    def __exit__(self, *_exc) -> None:
        import signal  # noqa: PLC0415

        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def big_tree(tree: Path, runs: int, noidx_runs: int = 1, noidx_common: bool = False,
             paths: list[str] = (), only: str | None = None,
             modes: tuple[str, ...] = ("index", "noidx"), base: str | None = None) -> int:
    """The issue 18 suite on one big tree; returns the number of parity mismatches."""
    if "index" in modes and not (tree / ".ov" / "index.db").is_file():
        print(f"{tree}: no index (run `ov index --no-embed` there first)", file=sys.stderr)
        return 2
    print(f"tree {tree}; load before: {os.getloadavg()[0]:.2f}")
    if "index" in modes:
        print(f"change journal: {journal_line(tree)}")
    paths = list(paths)
    sel = SELECTIVE_ARCH if paths or not (tree / "drivers").is_dir() else SELECTIVE
    cases = [("selective", ["-F"], p) for p in sel] + [("common", f, p) for f, p in COMMON]
    if only:
        cases = [c for c in cases if c[0] == only]
    print(f"paths searched: {' '.join(paths) or '(the whole tree)'}")
    mismatches, rows = 0, []
    for kind, flags, pat in cases:
        want = rg_lines(tree, flags, pat, [], paths)
        files = len({p for p, _ in want})
        for extra in ([[]] if "index" in modes else []) + ([["--no-index"]] if "noidx" in modes else []):
            got = _ov_set(tree, flags, pat, extra, paths)
            if got != want:
                mismatches += 1
                print(f"MISMATCH {' '.join(extra)} {pat!r}: ov-only {sorted(got - want)[:3]} "
                      f"rg-only {sorted(want - got)[:3]}")
        if kind == "selective" and files > 20:
            print(f"note: {pat!r} is in {files} files (> 20): counted as common")
            kind = "common"
        cmds = {"rg": ["rg", "-n", *flags, "-e", pat, *paths],
                "ov": [*OV, "grep", "--node-limit", BIG, *flags, "--", pat, *paths],
                "ov-noidx": [*OV, "grep", "--no-index", "--node-limit", BIG, *flags, "--", pat,
                             *paths]}
        if kind == "common" and not noidx_common and "index" in modes:
            del cmds["ov-noidx"]  # read-everything either way: the selective rows time it
        if "index" not in modes:
            del cmds["ov"]
        if "noidx" not in modes:
            cmds.pop("ov-noidx", None)
        if base:  # the same runs of another checkout's ov, interleaved (a before/after)
            for k in [k for k in cmds if k != "rg"]:
                cmds[k + "-base"] = [base, *cmds[k][1:]]
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for r in range(runs):
            for k, cmd in cmds.items():
                if not k.startswith("ov-noidx") or r < noidx_runs:
                    times[k].append(_run_timed(cmd, tree))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in times.items()}
        rows.append((kind, " ".join([*flags, pat]), len(want), files, med))
        print(f"{kind:9} {' '.join([*flags, pat])[:38]:38} {len(want):7} lines {files:5} files  "
              + "  ".join(f"{k} {w:.3f}s/{c:.3f}cpu" for k, (w, c) in med.items()), flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}; parity mismatches: {mismatches} "
          f"(over {len(cases)} patterns x {len(modes)} mode(s))")
    for kind in ("selective", "common"):
        sel = [r for r in rows if r[0] == kind]
        if not sel:
            continue
        for k in ("ov", "ov-noidx", "ov-base", "ov-noidx-base"):
            if k not in sel[0][4]:
                continue
            wall = statistics.median(r[4][k][0] / r[4]["rg"][0] for r in sel)
            cpu = statistics.median(r[4][k][1] / r[4]["rg"][1] for r in sel)
            print(f"{kind} ({len(sel)} patterns): median {k}/rg wall {wall:.2f}x, cpu {cpu:.2f}x")
    return mismatches


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stdlib", type=Path, default=STDLIB)
    ap.add_argument("--quick", action="store_true", help="parity only, no timing")
    ap.add_argument("--tree", type=Path, help="a big tree with a fresh index (issue 18 suite)")
    ap.add_argument("--noidx-runs", type=int, default=1,
                    help="runs of `ov grep --no-index` per pattern (big tree; it reads everything)")
    ap.add_argument("--paths", nargs="+", default=[],
                    help="search these folders of the big tree only (both tools)")
    ap.add_argument("--only", choices=("selective", "common"), help="one kind of pattern (big tree)")
    ap.add_argument("--modes", default="index,noidx",
                    help="which ov runs to check and time on the big tree: index, noidx or both")
    ap.add_argument("--noidx-common", action="store_true",
                    help="time --no-index on the common patterns too (big tree)")
    ap.add_argument("--watch", action="store_true",
                    help="run `ov index --watch --no-embed` on the big tree meanwhile, so that a "
                         "change journal serves grep (started and stopped here)")
    ap.add_argument("--base", metavar="PYTHON",
                    help="also time `PYTHON -P -m ov` (another checkout's interpreter, e.g. "
                         "main's venv) in the same runs, for a before/after (big tree)")
    args = ap.parse_args()
    if not shutil.which("rg"):
        print("rg not found (pip install --only-binary :all: ripgrep)", file=sys.stderr)
        return 2
    if args.tree is not None:
        tree = args.tree.resolve()
        with Watching(tree) if args.watch else contextlib.nullcontext():
            return 1 if big_tree(tree, args.runs, args.noidx_runs, args.noidx_common, args.paths,
                                 args.only, tuple(args.modes.split(",")), args.base) else 0
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
            t_rg = timed(["rg", "--json", *rg_std, *flags, "-e", pat, "."],
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
