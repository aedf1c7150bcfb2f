"""Hostile input catalogue (issue 17): a cloned tree is untrusted, and so is what a user
types. Each case runs one command against one hostile tree (links out of the root and
swapped in after indexing, a forged index, fifos, /dev/zero behind control files, names
and text with terminal escapes, a tree 600 folders deep, huge lines) or with one hostile
argument, and must end in under 10 s with either a clear error (exit 2, a code from
DESIGN.md, never `internal`) or a correct result (exit 0/1, checked), and never print
what lies outside the root.

`python tests/test_hostile.py` prints the counts docs/BENCHMARKS.md quotes.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import make_tree, run_inprocess  # noqa: E402

ENV = {"OV_EMBEDDER": "hash"}
LIMIT_S = 10.0
MARK = "zqxoutsidemarker"
OUTSIDE = ("root:x:", MARK)
CODES = {"invalid_argument", "invalid_pattern", "invalid_path", "not_found", "unsupported",
         "query_too_long", "index_busy", "deadline_exceeded"}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    # an error code, "result" (exit 0 or 1), "ok" (exit 0), or "unread" (exit 2 after the
    # results, status ok in JSON, with a warning: what the PATHs named was not read)
    expect: str
    tree: str = "hostile"  # which tree: hostile, forged, control, deep
    check: object = None  # a predicate on the Result, for results


def _paths_in(r) -> str:
    return r.out


def build_hostile(base: Path) -> Path:
    """The shared tree: indexed once, then made hostile on disk."""
    make_tree(base / "outside", {"secret.md": f"# S\n\nhello {MARK} outside.\n"})
    root = make_tree(base / "hostile", {
        "a.md": "# Alpha\n\nhello world alpha.\n",
        "b.py": '"""Bee module."""\n\ndef hello():\n    return 1\n',
        "swap.md": "# Swap\n\nhello swap target.\n",
        "swapdir/inner.md": "# Inner\n\nhello inner.\n",
        "esc\x1b[31mname.md": "# E\n\nhello \x1b]0;title\x07 \x1b[2J escapes\rover.\n",
        "new\nline.md": "# N\n\nhello newline name.\n",
        "-dash.md": "# D\n\nhello dash.\n",
        "sp ace.txt": "hello space\n",
        ("l" * 200) + ".md": "# L\n\nhello long name.\n",
        "crlf.txt": "hello crlf\r\nsecond\r\n",
        "bom.md": "\ufeff# Bom\n\nhello bom.\n",
        "empty.md": "",
        "bin.dat": b"hello\x00binary",
        "long.txt": "hello " + "x" * 600_000 + "\n",
        "many.txt": "hello\n" * 20_000,
        "uni.md": "# Ünïcødé\n\nhello \u202eevil\u202c rtl and e\u0301 combining 😀.\n",
    })
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0, "index"
    # made hostile after indexing: links swapped in, links out, loops, a fifo, devices
    (root / "swap.md").unlink()
    (root / "swap.md").symlink_to("/etc/passwd")
    (root / "swapdir" / "inner.md").unlink()
    (root / "swapdir").rmdir()
    (root / "swapdir").symlink_to(base / "outside")
    (root / "out.md").symlink_to(base / "outside" / "secret.md")
    (root / "loop").symlink_to("loop")
    (root / "dirloop").mkdir()
    (root / "dirloop" / "up").symlink_to("..")
    (root / "zero.txt").symlink_to("/dev/zero")
    (root / "rand.txt").symlink_to("/dev/urandom")
    os.mkfifo(root / "pipe.txt")
    (root / "dangling.md").symlink_to("nowhere.md")
    return root


def build_forged(base: Path) -> Path:
    """An index committed in a repository, its rows pointing outside (absolute, ../, a
    folder link), over chunks that hold the marker."""
    root = make_tree(base / "forged", {f"f{i}.md": f"# F{i}\n\nhello {MARK} forged {i}.\n"
                                        for i in range(5)} | {"real.md": "# R\n\nhello real.\n"})
    (root / "link").symlink_to(base / "outside")
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    conn = sqlite3.connect(root / ".ov" / "index.db")
    for i, p in enumerate(("/etc/passwd", "../outside/secret.md", "link/secret.md",
                           "a/../../outside/secret.md", str(base / "outside" / "secret.md"))):
        conn.execute("UPDATE files SET path = ? WHERE path = ?", (p, f"f{i}.md"))
        (root / f"f{i}.md").unlink()
    conn.commit()
    conn.close()
    return root


def build_control(base: Path) -> Path:
    root = make_tree(base / "control", {"a.md": "# A\n\nhello.\n", "sub/b.md": "hello b\n",
                                        "x" * 40 + ".txt": "hello stars\n"})
    (root / ".gitignore").symlink_to("/dev/zero")
    (root / "sub" / ".gitignore").write_text("*" * 16 + "z\n" + "*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    (root / ".ignore").write_bytes(b"# pad\n" * 200_000)
    os.mkfifo(root / ".ovignore")
    (root / ".ov").mkdir()
    (root / ".ov" / "config.toml").symlink_to("/dev/zero")
    (root / "pyproject.toml").symlink_to("/dev/urandom")
    # indexed here, not by whichever case runs first: pytest-xdist may hand `control-status`
    # to a process where no `control-index` ran (it then met no index at all)
    assert run_inprocess("index", ".", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    return root


def build_deep(base: Path) -> Path:
    root = base / "deep"
    root.mkdir()
    p = root
    for _ in range(600):
        p = p / "d"
    p.mkdir(parents=True)
    (p / "bottom.md").write_text("# Bottom\n\nhello bottom.\n")
    (root / "top.md").write_text("# Top\n\nhello top.\n")
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    return root


def _no(*words):
    return lambda r: not any(w in r.out for w in words)


def _has(*words):
    return lambda r: all(w in r.out for w in words)


BIG = "99999999999999999999"
C = Case
CASES = [
    # -- the hostile tree: links swapped in after indexing, links out, loops, devices
    C("read-swapped-link", ("read", "swap.md"), "not_found"),
    C("read-link-out", ("read", "out.md"), "invalid_path"),
    C("read-folder-link-out", ("read", "swapdir"), "invalid_path"),
    C("read-fifo", ("read", "pipe.txt"), "not_found"),
    C("read-dev-zero-link", ("read", "zero.txt"), "invalid_path"),
    C("read-loop-link", ("read", "loop"), "not_found"),
    C("read-dangling", ("read", "dangling.md"), "not_found"),
    C("read-root-L0", ("read", ".", "-L", "0"), "ok", check=_no("secret")),
    C("read-root-L1", ("read", ".", "-L", "1"), "ok", check=_no("secret", "inner.md")),
    C("read-root-L2", ("read", ".", "-L", "2"), "ok", check=_has("a.md")),
    C("read-escaped-name", ("read", "esc\x1b[31mname.md"), "ok", check=_has("escapes")),
    C("read-newline-name", ("read", "new\nline.md"), "ok", check=_has("newline name")),
    C("read-dash-name", ("read", "--", "-dash.md"), "ok", check=_has("hello dash")),
    C("read-long-name", ("read", "l" * 200 + ".md"), "ok", check=_has("long name")),
    C("read-bom", ("read", "bom.md"), "ok", check=lambda r: "\ufeff" not in r.out),
    C("read-empty", ("read", "empty.md"), "ok"),
    C("read-binary", ("read", "bin.dat"), "not_found"),
    C("read-unicode", ("read", "uni.md"), "ok", check=_has("combining")),
    C("search-swapped", ("search", "swap", "--search-type", "keywords"), "result", check=_no("swap.md")),
    C("search-read-content", ("search", "hello", "--read-content", "-n", "50"), "ok"),
    C("search-context", ("search", "hello", "--mode", "context", "--max-tokens", "4000"), "ok",
      check=_no("swapdir/inner")),
    C("search-L0", ("search", "hello", "-L", "0,1,2", "-n", "50"), "ok", check=_no("swap.md")),
    C("search-explain", ("search", "hello", "--explain"), "ok"),
    C("find-hello", ("find", "hello", "-n", "50", "--read-content"), "ok", check=_no("swap.md")),
    C("search-all-chunks", ("search", "hello", "--all-chunks", "-n", "50"), "ok"),
    C("grep-hello", ("grep", "hello"), "ok", check=_no("swap.md", "out.md")),
    C("grep-no-index", ("grep", "hello", "--no-index"), "ok", check=_no("swap.md")),
    C("grep-count", ("grep", "-c", "hello"), "ok", check=_has("many.txt:20000")),
    C("grep-files", ("grep", "-l", "hello"), "ok"),
    C("grep-context", ("grep", "-C", "3", "second"), "ok", check=_has("crlf.txt")),
    C("grep-escapes", ("grep", "escapes"), "ok", check=lambda r: "\x1b" not in r.out),
    C("grep-long-line", ("grep", "-c", "x{1000}"), "ok", check=_has("long.txt:1")),
    C("grep-swapped-path", ("grep", "root", "swap.md"), "unread", check=_no("root:x")),
    C("grep-link-dir", ("grep", "hello", "swapdir"), "unread", check=_no(MARK)),
    C("grep-fifo-path", ("grep", "hello", "pipe.txt"), "result"),
    C("grep-dev-zero-path", ("grep", "hello", "zero.txt"), "unread"),
    C("grep-follow-loop", ("grep", "hello", "dirloop"), "not_found"),  # a link alone: rg's "No files were searched"
    C("grep-hidden", ("grep", "--hidden", "hello"), "ok"),
    C("grep-multiline", ("grep", "-U", "hello\\nsecond"), "result"),
    C("grep-with-tags", ("grep", "hello", "--tags", "k=v"), "result"),
    C("grep-catastrophic", ("grep", "-U", "-c", "(\\s|\\S)*h$", "--timeout", "2"), "deadline_exceeded"),
    C("grep-nested-quantifier", ("grep", "-c", "(x+x+)+y", "--timeout", "2"), "result"),
    C("grep-huge-repeat", ("grep", "a{100000000}"), "invalid_pattern"),
    C("grep-bad-regex", ("grep", "("), "invalid_pattern"),
    C("grep-backslash", ("grep", "\\"), "invalid_pattern"),
    C("grep-long-pattern", ("grep", "-F", "q" * 100_000), "result"),
    C("grep-empty-pattern", ("grep", "-c", ""), "ok"),
    C("grep-A-big", ("grep", "-A", BIG, "hello"), "result"),
    C("grep-A-negative", ("grep", "-A", "-1", "hello"), "invalid_argument"),
    C("grep-node-limit-0", ("grep", "--node-limit", "0", "hello"), "invalid_argument"),
    C("grep-node-limit-big", ("grep", "--node-limit", BIG, "hello"), "result"),
    C("grep-level-limit-neg", ("grep", "--level-limit", "-1", "hello"), "invalid_argument"),
    C("grep-max-columns-0", ("grep", "--max-columns", "0", "hello"), "result"),  # no limit, as rg
    C("grep-max-columns-neg", ("grep", "--max-columns", "-1", "hello"), "invalid_argument"),
    C("grep-timeout-nan", ("grep", "--timeout", "nan", "hello"), "invalid_argument"),
    C("grep-timeout-zero", ("grep", "--timeout", "0", "hello"), "invalid_argument"),
    C("grep-timeout-huge", ("grep", "--timeout", "1e400", "hello"), "invalid_argument"),
    C("grep-bad-type", ("grep", "-t", "nosuchtype", "hello"), "invalid_argument"),
    C("grep-bad-glob", ("grep", "-g", "[", "hello"), "invalid_pattern"),
    C("grep-bad-tag", ("grep", "--tags", "novalue", "hello"), "invalid_argument"),
    C("grep-outside-path", ("grep", "-c", "nosuchword", "/etc/hostname"), "result"),
    C("grep-dotdot-path", ("grep", "-l", "hello", ".."), "result"),
    C("grep-missing-path", ("grep", "hello", "nope"), "not_found"),
    C("grep-count-and-files", ("grep", "-c", "-l", "hello"), "invalid_argument"),
    C("grep-exclude-outside", ("grep", "hello", "--exclude-uri", "../x"), "invalid_path"),
    C("grep-nul-pattern", ("grep", "a\x00b"), "result"),
    C("glob-all", ("glob", "**", "--node-limit", "1000"), "ok", check=_no("secret", "inner.md")),
    C("glob-links", ("glob", "*.md"), "ok", check=_has("a.md")),
    C("glob-unclosed", ("glob", "["), "invalid_pattern"),
    C("glob-brace-bomb", ("glob", "{" * 2000 + "a"), "invalid_pattern"),
    C("glob-brace-product", ("glob", "{a,b,c,d,e}" * 12), "invalid_pattern"),
    C("glob-deep-stars", ("glob", "/".join(["**"] * 40) + "/*"), "result"),
    C("glob-long", ("glob", "a" * 100_000), "invalid_pattern"),  # past 8,192 characters
    C("glob-dotdot", ("glob", "../*"), "invalid_pattern", check=_no("secret", "hostile")),
    C("glob-absolute", ("glob", "/etc/*"), "invalid_pattern", check=_no("passwd")),
    C("glob-outside-path", ("glob", "hostname", "/etc"), "result"),
    C("glob-link-path", ("glob", "**", "swapdir"), "unread", check=_no("secret")),
    C("glob-bad-field", ("glob", "*", "-f", "bogus"), "invalid_argument"),
    C("glob-node-limit-0", ("glob", "*", "--node-limit", "0"), "invalid_argument"),
    C("glob-fields", ("glob", "*", "-f", "name,path,type,size,mode,mtime,tags"), "ok"),
    C("search-empty", ("search", ""), "invalid_argument"),
    C("search-spaces", ("search", "   "), "invalid_argument"),
    C("search-too-long", ("search", "word " * 3000), "query_too_long"),
    C("search-limit-0", ("search", "x", "-n", "0"), "invalid_argument"),
    C("search-limit-big", ("search", "x", "-n", BIG), "invalid_argument"),
    C("search-threshold-nan", ("search", "x", "--threshold", "nan"), "invalid_argument"),
    C("search-threshold-neg", ("search", "x", "--threshold", "-1"), "invalid_argument"),
    C("search-after-overflow", ("search", "x", "--after", "800000d"), "invalid_argument"),
    C("search-before-overflow", ("search", "x", "--before", "99999999999999999w"), "invalid_argument"),
    C("search-after-hours", ("search", "x", "--after", BIG + "h"), "invalid_argument"),
    C("search-after-iso-edge", ("search", "x", "--after", "0001-01-01T00:00+14:00",
                                "--search-type", "keywords"), "result"),
    C("search-after-garbage", ("search", "x", "--after", "yesterdayish"), "invalid_argument"),
    C("search-after-empty", ("search", "x", "--after", ""), "invalid_argument"),
    C("search-time-field", ("search", "x", "--time-field", "bogus"), "invalid_argument"),
    C("search-bad-tag", ("search", "x", "--tags", "=v"), "invalid_argument"),
    C("search-bad-level", ("search", "x", "-L", "3"), "invalid_argument"),
    C("search-bad-level-text", ("search", "x", "-L", "a,b"), "invalid_argument"),
    C("search-bad-cursor", ("search", "x", "--cursor", "garbage"), "invalid_argument"),
    C("search-empty-cursor", ("search", "x", "--cursor", ""), "invalid_argument"),
    C("search-bad-mode", ("search", "x", "--mode", "bogus"), "invalid_argument"),
    C("search-bad-type", ("search", "x", "--search-type", "bogus"), "invalid_argument"),
    C("search-max-tokens-0", ("search", "x", "--mode", "context", "--max-tokens", "0"), "invalid_argument"),
    C("search-max-tokens-big", ("search", "x", "--mode", "context", "--max-tokens", BIG), "invalid_argument"),
    C("search-dedup-big", ("search", "x", "--mode", "context", "--session-id", "s", "--dedup-turns", BIG),
      "invalid_argument"),
    C("search-dedup-neg", ("search", "x", "--mode", "context", "--session-id", "s", "--dedup-turns", "-1"),
      "invalid_argument"),
    C("search-session-long", ("search", "x", "--mode", "context", "--session-id", "s" * 300),
      "invalid_argument"),
    C("search-uri-outside", ("search", "x", "-u", "/etc"), "invalid_path"),
    C("search-uri-dotdot", ("search", "x", "-u", "../outside"), "invalid_path"),
    C("search-uri-missing", ("search", "x", "-u", "nope"), "not_found"),
    C("search-fts-syntax", ("search", 'a AND OR "NEAR( * ^ - col:val', "--search-type", "keywords"), "result"),
    C("search-quote", ("search", '"', "--search-type", "keywords"), "result"),
    C("search-emoji", ("search", "😀 \u202e", "--search-type", "keywords"), "result"),
    C("search-nul", ("search", "a\x00b", "--search-type", "keywords"), "invalid_argument"),
    C("search-escape-query", ("search", "\x1b[2J", "--search-type", "keywords"), "result"),
    C("tag-no-value", ("tag", "a.md", "k"), "invalid_argument"),
    C("tag-empty-key", ("tag", "a.md", "=v"), "invalid_argument"),
    C("tag-bad-mode", ("tag", "a.md", "k=v", "--mode", "bogus"), "invalid_argument"),
    C("tag-folder", ("tag", ".", "k=v"), "invalid_argument"),
    C("tag-missing", ("tag", "nope.md", "k=v"), "not_found"),
    C("tag-outside", ("tag", "/etc/passwd", "k=v"), "invalid_path"),
    C("tag-long-key", ("tag", "a.md", "k" * 1000 + "=v"), "ok"),
    C("read-level-3", ("read", "a.md", "-L", "3"), "invalid_argument"),
    C("read-outside", ("read", "/etc/passwd"), "invalid_path"),
    C("read-dotdot", ("read", "../outside/secret.md"), "invalid_path"),
    C("read-missing", ("read", "nope.md"), "not_found"),
    C("status", ("status",), "ok"),
    C("manifest", ("manifest",), "ok"),
    C("db-fifo", ("status", "--db", "@fifo"), "invalid_path"),
    C("db-proc-mem", ("status", "--db", "/proc/self/mem"), "invalid_path"),
    C("db-dev-null", ("search", "x", "--db", "/dev/null"), "invalid_path"),
    C("db-folder", ("status", "--db", "/tmp"), "invalid_path"),
    C("db-missing", ("status", "--db", "/nonexistent/x.db"), "not_found"),
    C("db-text-file", ("status", "--db", "a.md"), "invalid_path"),  # not an index: never "damaged"
    C("index-fifo-db", ("index", ".", "--db", "@fifo"), "invalid_path"),
    C("index-missing-path", ("index", "/nonexistent"), "not_found"),
    C("index-file-path", ("index", "a.md"), "invalid_path"),
    # -- a forged index: rows naming paths outside the root
    C("forged-search", ("search", "hello", "--search-type", "keywords", "-n", "50"), "ok",
      tree="forged", check=_has("real.md")),
    C("forged-hybrid", ("search", "hello", "-n", "50"), "ok", tree="forged"),
    C("forged-read-content", ("search", "hello", "--read-content", "-n", "50"), "ok", tree="forged"),
    C("forged-context", ("search", "hello", "--mode", "context"), "ok", tree="forged"),
    C("forged-find", ("find", "hello", "--read-content"), "ok", tree="forged"),
    C("forged-L0", ("search", "forged", "-L", "0,1"), "result", tree="forged"),
    C("forged-read-L2", ("read", ".", "-L", "2"), "ok", tree="forged", check=_no("passwd", "..")),
    C("forged-read-L1", ("read", ".", "-L", "1"), "ok", tree="forged", check=_no("passwd", "secret")),
    C("forged-read-row", ("read", "link/secret.md"), "not_found", tree="forged"),
    C("forged-tag-all", ("tag", ".", "k=v", "--recursive"), "ok", tree="forged", check=_no("passwd")),
    C("forged-status", ("status",), "ok", tree="forged"),
    C("forged-grep", ("grep", "hello"), "ok", tree="forged", check=_has("real.md")),
    C("forged-grep-tags", ("grep", "hello", "--tags", "k=v"), "result", tree="forged"),
    C("forged-glob-tags", ("glob", "**", "--tags", "k=v"), "result", tree="forged"),
    # -- control files that are not small regular files
    C("control-grep", ("grep", "-l", "hello"), "ok", tree="control", check=_has("a.md")),
    C("control-glob", ("glob", "**"), "ok", tree="control"),
    C("control-index", ("index", "."), "ok", tree="control"),
    C("control-search", ("search", "hello"), "result", tree="control"),
    C("control-status", ("status",), "result", tree="control"),
    # -- a tree 600 folders deep
    C("deep-read-L1", ("read", ".", "-L", "1"), "ok", tree="deep"),
    C("deep-read-L0", ("read", ".", "-L", "0"), "ok", tree="deep"),
    C("deep-read-L2", ("read", ".", "-L", "2"), "ok", tree="deep", check=_has("bottom.md")),
    C("deep-grep", ("grep", "-c", "hello", "--level-limit", "1000"), "ok", tree="deep",
      check=_has("bottom.md")),
    C("deep-glob", ("glob", "**/bottom.md", "--level-limit", "1000"), "ok", tree="deep"),
    C("deep-search", ("search", "bottom"), "ok", tree="deep"),
    C("deep-tag", ("tag", ".", "k=v", "--recursive"), "ok", tree="deep"),
]


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    out = {"hostile": build_hostile(base), "forged": build_forged(base),
           "control": build_control(base), "deep": build_deep(base)}
    os.mkfifo(base / "fifo.db")
    out["fifo"] = base / "fifo.db"
    return out


def _cpu() -> float:
    import resource

    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))


def within_limit(took: float, cpu: float) -> bool:
    """Under 10 s of wall time; on a machine loaded past twice its cores (where a second
    of work takes several of wall), under 10 s of CPU time instead."""
    return took < LIMIT_S or (os.getloadavg()[0] > 2 * (os.cpu_count() or 1) and cpu < LIMIT_S)


def run_case(case: Case, trees: dict[str, Path], fmt: str) -> tuple[str, float, object]:
    """(outcome, seconds, result): outcome is "error", "result", "internal" or "wrong";
    seconds is wall time, and the result carries the CPU seconds as `cpu`."""
    args = [str(trees["fifo"]) if a == "@fifo" else a for a in case.args]
    t0, c0 = time.monotonic(), _cpu()
    r = run_inprocess([args[0], "-o", fmt, *args[1:]], cwd=trees[case.tree], env=ENV)
    took = time.monotonic() - t0
    r.cpu = _cpu() - c0
    text = r.out + r.err
    if "internal" in text or "Traceback" in text or r.code not in (0, 1, 2):
        return "internal", took, r
    if any(m in text for m in OUTSIDE):
        return "wrong", took, r
    if fmt == "text" and "\x1b" in r.out:
        return "wrong", took, r
    if case.expect == "unread":
        said = r.json["result"]["warnings"] if fmt == "json" else "ov: warning:" in r.err
        ok = r.code == 2 and said and (case.check is None or fmt != "text" or case.check(r))
        return ("result" if ok else "wrong"), took, r
    if case.expect in ("result", "ok"):
        ok = r.code == 0 if case.expect == "ok" else r.code in (0, 1)
        if ok and (case.check is None or fmt != "text" or case.check(r)):
            return "result", took, r
        return "wrong", took, r
    if r.code != 2:
        return "wrong", took, r
    if fmt == "json":
        code = r.json["error"]["code"]
        return ("error" if code == case.expect else "wrong"), took, r
    return ("error" if f"error[{case.expect}]" in r.err else "wrong"), took, r


def test_the_catalogue_has_over_a_hundred_cases():
    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_input(trees, case):
    for fmt in ("text", "json"):
        outcome, took, r = run_case(case, trees, fmt)
        assert outcome in ("error", "result"), (case.name, fmt, outcome, r.code, r.out[:2000], r.err[:2000])
        assert within_limit(took, r.cpu), (case.name, fmt, took, r.cpu)


def main() -> None:
    import tempfile

    class Factory:
        def mktemp(self, name):
            return Path(tempfile.mkdtemp(prefix=name))

    t = trees.__wrapped__(Factory())  # type: ignore[attr-defined]
    counts = {"error": 0, "result": 0, "internal": 0, "wrong": 0, "slow": 0}
    worst = 0.0
    for case in CASES:
        outcome, took, r = run_case(case, t, "json")
        counts[outcome] += 1
        counts["slow"] += took > LIMIT_S
        worst = max(worst, took)
        if took > LIMIT_S:
            print(f"{case.name}: {took:.1f} s wall, {r.cpu:.1f} s CPU")
        if outcome not in ("error", "result"):
            print(f"{case.name}: {outcome}")
    print(f"{len(CASES)} cases: {counts['error']} clear error, {counts['result']} correct result, "
          f"{counts['internal']} internal, {counts['wrong']} wrong, {counts['slow']} over {LIMIT_S:g} s "
          f"(slowest {worst:.2f} s)")


if __name__ == "__main__":
    main()
