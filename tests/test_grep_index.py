"""`ov grep` with a fresh, a stale and no index gives the same answer.

The index only tells grep which files cannot hold the pattern's required literals (the
FTS5 trigram table); files changed since indexing are always read.
"""

from __future__ import annotations

import os
import random

import pytest

from conftest import spy_reads

WORDS = ["alpha", "beta", "gamma", "delta", "Needle", "needle", "NEEDLE", "snake_case", "camelCase",
         "über", "日本語", "x = 1", "def f(a, b):", "return a + b"]


def _tree(tree):
    rnd = random.Random(3)
    files = {}
    for i in range(40):
        lines = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 8))) for _ in range(rnd.randint(1, 40))]
        files[f"d{i % 4}/f{i}.txt"] = "\n".join(lines) + "\n"
    # one line longer than any chunk, so the chunker must split it mid-line
    files["long.txt"] = "start " + "filler " * 3000 + "needle_at_the_far_end\n"
    files["crlf.txt"] = "first line\r\nNeedle here\r\n"
    return tree(files)


PATTERNS = [["needle"], ["Needle"], ["-i", "needle"], ["-F", "x = 1"], ["needle_at_the_far_end"],
            ["filler filler needle"], [r"gam+a\s+delta"], ["zzz_not_there"], ["-w", "beta"],
            ["日本語"], ["über"], [r"def f\(a, b\):"], ["-U", "alpha\nbeta"], ["(alpha|beta) gamma"],
            ["camelCase snake_case"]]


def _matches(ov, root, args):
    r = ov("grep", "-o", "json", "--node-limit", "100000", *args, cwd=root)
    assert r.code in (0, 1), r.out + r.err
    return [(m["path"], m["line"], m["content"]) for m in r.json["result"]["matches"]]


@pytest.mark.parametrize("args", PATTERNS, ids=lambda a: " ".join(a))
def test_same_answer_with_and_without_the_index(ov, tree, args):
    root = _tree(tree)
    without = _matches(ov, root, args)
    assert ov("index", root, "--no-embed").code == 0
    fresh = _matches(ov, root, args)
    assert fresh == without
    assert _matches(ov, root, ["--no-index", *args]) == without
    # change files after indexing: they must be read, not trusted to the index
    (root / "d0/f0.txt").write_text("needle and Needle and NEEDLE\nalpha\nbeta gamma\n")
    (root / "new.txt").write_text("x = 1 needle_at_the_far_end über 日本語\n")
    os.remove(root / "d1/f1.txt")
    assert _matches(ov, root, args) == _matches(ov, root, ["--no-index", *args])


def _level2_cuts(root):
    """(path, start, end) of every level-2 chunk, from the index."""
    from ov.store import Store

    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        return st.rows("SELECT f.path, c.start, c.end FROM chunks c JOIN files f ON f.id = c.file_id "
                       "WHERE c.level = 2 ORDER BY f.path, c.start")


@pytest.mark.parametrize("args", [(), ("--no-embed",)], ids=["model-cut", "keywords-only"])
def test_literal_across_a_cut_of_an_over_long_line(ov, tree, args):
    """A line with no whitespace, far over the chunk budget, is cut anywhere: a literal
    lying across a cut is in no single keyword row, and must still be found. In an index
    with vectors the passages are cut to the model's window; in a keywords-only one, by
    characters (ov.chunk.line_cut)."""
    from ov.chunk import DATA_PIECE_CHARS, LINE_CUT_CHARS

    rnd = random.Random(5)
    # random data: cut in pieces of DATA_PIECE_CHARS (minified code is cut by tokens, below)
    line = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789+/") for _ in range(6 * DATA_PIECE_CHARS))
    code = "".join(rnd.choice(["a=b", "(c)", "{d:e}", "f.g", "h||i", ";"]) for _ in range(8000))
    root = tree({"min.js": line + "\n", "app.min.js": code + "\n", "other.txt": "nothing here\n"})
    assert ov("index", root, *args).code == 0
    cuts = _level2_cuts(root)
    # encoded data in pieces of DATA_PIECE_CHARS, or of twice LINE_CUT_CHARS
    want = -(-len(line) // (2 * LINE_CUT_CHARS)) if args else 6
    assert len([e for p, _, e in cuts if p == "min.js"]) == want
    assert len([e for p, _, e in cuts if p == "app.min.js"]) > 10  # the line was cut into many pieces
    for path, text in (("min.js", line), ("app.min.js", code)):
        _literals_across_cuts(ov, root, text, [e for p, _, e in cuts if p == path][:-1])


def _literals_across_cuts(ov, root, line: str, ends: list[int]) -> None:
    for e in ends[:: max(1, len(ends) // 8)]:
        for lit in (line[e - 6:e + 6], line[e - 2:e + 9], line[e - 9:e + 1]):
            args = ["-F", lit]
            assert _matches(ov, root, args) == _matches(ov, root, ["--no-index", *args]) != [], lit


def test_multiline_literal_across_two_chunks(ov, tree):
    """With -U a literal may span the last line of one chunk and the first of the next."""
    import regex

    lines = [f"row {i} " + " ".join(WORDS[(i * 7 + k) % 9] for k in range(10)) for i in range(300)]
    text = "\n".join(lines) + "\n"
    root = tree({"many.txt": text})
    assert ov("index", root, "--no-embed").code == 0
    cuts = [(s, e) for p, s, e in _level2_cuts(root) if p == "many.txt"]
    assert len(cuts) > 3
    for (_, end), (start, _) in zip(cuts[:4], cuts[1:5]):
        before = text[:end].rsplit("\n", 1)[-1]
        after = text[start:].split("\n", 1)[0]
        pat = regex.escape(before[-12:]) + r"\n" + regex.escape(after[:12])
        args = ["-U", pat]
        got = _matches(ov, root, args)
        assert got == _matches(ov, root, ["--no-index", *args]) and got, pat


def test_a_fresh_index_reads_only_candidates_and_changed_files(ov, tree, monkeypatch):
    """With a fresh index grep opens only the files the trigram table names and those
    changed since indexing (issue 18): an edit in place (same folder mtime), a new file."""
    from ov.search import files as fsearch

    files = {f"d{i % 3}/f{i}.txt": f"plain text {i}\nnothing to see\n" for i in range(30)}
    files["d1/hit.txt"] = "the rare_identifier_q is here\n"
    root = tree(files)
    os.environ["OV_EMBEDDER"] = "hash"
    try:
        assert ov("index", "--no-embed", ".", cwd=root).code == 0
    finally:
        del os.environ["OV_EMBEDDER"]
    opened = spy_reads(monkeypatch, root)

    def grep() -> list[str]:
        opened.clear()
        res = fsearch.grep("rare_identifier_q", cwd=root, node_limit=1000)
        return [m.path for m in res.matches]

    assert grep() == ["d1/hit.txt"] and opened == ["d1/hit.txt"]
    edited = root / "d2" / "f2.txt"
    st = edited.stat()
    with open(edited, "a") as fh:  # in place: the folder's mtime does not move
        fh.write("now rare_identifier_q too\n")
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns))  # a restored mtime hides nothing
    (root / "d0" / "new.txt").write_text("rare_identifier_q new\n")
    assert grep() == ["d0/new.txt", "d1/hit.txt", "d2/f2.txt"]
    assert sorted(opened) == ["d0/new.txt", "d1/hit.txt", "d2/f2.txt"]


def test_grep_i_reads_only_candidates_and_misses_no_case_pair(ov, tree, monkeypatch):
    """`-i` uses the trigram prefilter too (it read every file before): the same answer
    as without the index, the letters `-i` pairs outside ASCII included (Kelvin sign,
    long s, dotted and dotless i), and only candidates and changed files are opened."""
    from ov.search import files as fsearch

    files = {f"d{i % 3}/f{i}.txt": f"plain text {i}\nnothing to see\n" for i in range(30)}
    files.update({"k.c": "\u212aASAN_POISON(x)\n", "s.txt": "Po\u017fition\n",
                  "i1.txt": "\u0130NIT_TABLE\n", "i2.txt": "M\u0131XED_CASE\n",
                  "plain.txt": "kasan_poison position init_table mixed_case\n"})
    root = tree(files)
    patterns = [["-i", "kasan_poison"], ["-i", "POSITION"], ["-i", "init_table"], ["-i", "mixed_case"],
                ["-i", "-F", "kasan_POISON(x)"], ["-i", r"kasan_\w+\("], ["-S", "init_table"]]
    before = {tuple(a): _matches(ov, root, a) for a in patterns}
    assert ov("index", "--no-embed", ".", cwd=root).code == 0
    for a in patterns:
        assert _matches(ov, root, a) == before[tuple(a)] == _matches(ov, root, ["--no-index", *a]), a
    assert {p for p, _, _ in before[("-i", "init_table")]} == {"i1.txt", "plain.txt"}
    opened = spy_reads(monkeypatch, root)
    res = fsearch.grep("KASAN_poison", cwd=root, node_limit=1000, ignore_case=True)
    assert [m.path for m in res.matches] == ["k.c", "plain.txt"]
    assert sorted(opened) == ["k.c", "plain.txt"]


def test_g_globs_with_an_index_answer_as_without_and_use_the_listing(ov, tree, monkeypatch):
    """`-g` with an index: the same answer as `--no-index` (a glob keeps an ignored or a
    hidden file it names, as rg's overrides do), and the walk listing serves a glob that
    keeps no left-out name (it walked afresh for every `-g` before)."""
    from ov import walk
    from ov.search import files as fsearch
    from ov.search import scope

    root = tree({".gitignore": "*.log\nbuild/\n", "a.c": "needle\n", "b.log": "needle\n",
                 "sub/c.c": "needle\n", "sub/.gitignore": "gen.c\n", "sub/gen.c": "needle\n",
                 "build/o.c": "needle\n", ".hidden/e.c": "needle\n", "x.txt": "needle\n"})
    assert ov("index", "--no-embed", ".", cwd=root).code == 0
    for globs in (["*.c"], ["*.txt"], ["!*.c"], ["*.log"], ["build"], [".hidden"], ["sub/**"], ["*.c", "!sub"]):
        args = [a for g in globs for a in ("-g", g)] + ["needle"]
        assert _matches(ov, root, args) == _matches(ov, root, ["--no-index", *args]), globs
    assert [p for p, _, _ in _matches(ov, root, ["-g", "*.c", "needle"])] == ["a.c", "sub/c.c", "sub/gen.c"]
    walks = []
    real = walk.walk_paths
    monkeypatch.setattr(scope, "walk_paths", lambda *a, **k: walks.append(1) or real(*a, **k))
    got = fsearch.grep("needle", cwd=root, globs=["*.txt"], node_limit=100)
    assert [m.path for m in got.matches] == ["x.txt"] and walks == []
    got = fsearch.grep("needle", cwd=root, globs=["*.c"], node_limit=100)
    assert [m.path for m in got.matches] == ["a.c", "sub/c.c", "sub/gen.c"] and walks == [1]


def test_an_index_grep_cannot_read_is_said_and_every_file_read(ov, tree):
    """An index from an older ov (or a damaged one) gives grep no prefilter: the answer is
    the same, and a warning says why the run read every file (not a silent slowdown)."""
    import sqlite3

    from ov.store.db import READABLE_FROM

    root = _tree(tree)
    assert ov("index", root, "--no-embed").code == 0
    fresh = ov("grep", "-o", "json", "needle", cwd=root)
    assert fresh.json["result"]["warnings"] == []
    conn = sqlite3.connect(root / ".ov" / "index.db")
    conn.execute(f"PRAGMA user_version = {READABLE_FROM - 1}")  # older than a read-only open reads
    conn.commit()
    conn.close()
    old = ov("grep", "-o", "json", "needle", cwd=root)
    assert old.code == 0 and old.json["result"]["matches"] == fresh.json["result"]["matches"]
    (warning,) = old.json["result"]["warnings"]
    assert "index was not used" in warning and "run `ov index` to upgrade it" in warning
    text = ov("grep", "needle", cwd=root)
    assert text.code == 0 and "index was not used" in text.err and text.out == ov(
        "grep", "--no-index", "needle", cwd=root).out
    assert ov("grep", "--no-index", "-o", "json", "needle", cwd=root).json["result"]["warnings"] == []
