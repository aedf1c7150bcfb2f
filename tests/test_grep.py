"""`ov grep`: every flag, each bad input, ordering, per-line semantics, output shapes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import imported_by, make_tree, run_inprocess
from ov.errors import OvError
from ov.search.matcher import binary_cutoff, compile_pattern, spans


@pytest.fixture
def ov():
    """The in-process CLI runner, called as ov("grep", "x", cwd=...)."""
    return lambda *args, cwd=None, env=None: run_inprocess(list(args), cwd=cwd, env=env)

FILES = {
    "a.py": "import os\ndef foo():\n    return 1\n",
    "b.txt": "hello world\nHello again\nbye\n",
    "sub/c.py": "foo = 1\nbar = foo\n",
    "sub/deep/d.md": "# Title\nfoo bar\n",
    ".hidden.txt": "foo hidden\n",
    ".gitignore": "ignored.txt\nbuild/\n",
    "ignored.txt": "foo ignored\n",
    "build/out.txt": "foo built\n",
}


@pytest.fixture
def t(tree):
    return tree(FILES)


def paths_lines(res):
    return [(m["path"], m["line"]) for m in res.json["result"]["matches"]]


# -- output shapes ------------------------------------------------------------------------
def test_text_output_is_path_line_content(ov, t):
    r = ov("grep", "foo", cwd=t)
    assert r.code == 0
    assert r.out == ("a.py:2:def foo():\n"
                     "sub/c.py:1:foo = 1\n"
                     "sub/c.py:2:bar = foo\n"
                     "sub/deep/d.md:2:foo bar\n")
    assert r.err == ""


def test_json_envelope_and_match_shape(ov, t):
    r = ov("grep", "-o", "json", "fo+", "b.txt", "a.py", cwd=t)
    d = r.json
    assert d["status"] == "ok" and isinstance(d["usage"]["elapsed_ms"], int)
    res = d["result"]
    assert res["count"] == 1 and res["files"] == 1 and res["truncated"] is False
    assert res["matches"] == [{"path": "a.py", "line": 2, "content": "def foo():",
                               "submatches": [{"start": 4, "end": 7, "text": "foo"}],
                               "before_context": [], "after_context": []}]
    # --json is -o json (elapsed_ms differs from run to run)
    d2 = ov("grep", "--json", "fo+", "a.py", cwd=t).json
    assert {**d2, "usage": None} == {**d, "usage": None}


def test_jsonl_one_match_a_line(ov, t):
    r = ov("grep", "-o", "jsonl", "foo", cwd=t)
    rows = r.jsonl
    assert [(x["path"], x["line"]) for x in rows] == [
        ("a.py", 2), ("sub/c.py", 1), ("sub/c.py", 2), ("sub/deep/d.md", 2)]
    assert "status" not in rows[0]


def test_submatch_columns_are_code_points(ov, tree):
    t = tree({"u.txt": "héllo wörld wörld\n"})
    m = ov("grep", "--json", "wörld", cwd=t).json["result"]["matches"][0]
    assert [(s["start"], s["end"]) for s in m["submatches"]] == [(6, 11), (12, 17)]
    assert m["content"][6:11] == "wörld"


def test_exit_one_when_nothing_matches(ov, t):
    r = ov("grep", "zzzqqq", cwd=t)
    assert r.code == 1 and r.out == ""
    r = ov("grep", "--json", "zzzqqq", cwd=t)
    assert r.code == 1 and r.json["result"]["matches"] == [] and r.json["result"]["count"] == 0


def test_order_is_path_then_line_and_stable(ov, tree):
    t = tree({"b/z.txt": "x\n", "a.txt": "x\nx\n", "a/y.txt": "x\n", "a-b.txt": "x\n", "B.txt": "x\n"})
    r1 = ov("grep", "--json", "x", cwd=t)
    got = paths_lines(r1)
    assert got == [("B.txt", 1), ("a/y.txt", 1), ("a-b.txt", 1), ("a.txt", 1), ("a.txt", 2),
                   ("b/z.txt", 1)]
    assert paths_lines(ov("grep", "--json", "x", "b", "a.txt", "a", cwd=t)) == [
        ("a/y.txt", 1), ("a.txt", 1), ("a.txt", 2), ("b/z.txt", 1)]
    assert ov("grep", "x", cwd=t).out == ov("grep", "x", cwd=t).out


# -- flags --------------------------------------------------------------------------------
def test_fixed_strings(ov, tree):
    t = tree({"f.txt": "a.b\naxb\n(x+\n"})
    assert paths_lines(ov("grep", "--json", "-F", "a.b", cwd=t)) == [("f.txt", 1)]
    assert paths_lines(ov("grep", "--json", "a.b", cwd=t)) == [("f.txt", 1), ("f.txt", 2)]
    assert paths_lines(ov("grep", "--json", "--fixed-strings", "(x+", cwd=t)) == [("f.txt", 3)]


def test_ignore_case_is_unicode_simple_folding(ov, tree):
    t = tree({"f.txt": "HELLO\nÉCOLE\nstrasse\nstraße\n"})
    assert paths_lines(ov("grep", "--json", "-i", "hello", cwd=t)) == [("f.txt", 1)]
    assert paths_lines(ov("grep", "--json", "--ignore-case", "école", cwd=t)) == [("f.txt", 2)]
    # simple folding, as ripgrep: ß does not match "ss"
    assert paths_lines(ov("grep", "--json", "-i", "STRASSE", cwd=t)) == [("f.txt", 3)]
    # KELVIN SIGN folds to k: the byte prefilter must not hide it
    t2 = tree({"k.txt": "\u212aelvin\n"}, name="k")
    assert paths_lines(ov("grep", "--json", "-i", "kelvin", cwd=t2)) == [("k.txt", 1)]


def test_word_regexp(ov, tree):
    t = tree({"w.txt": "foo bar foo\nxfoo foo-x\nfoobar\n-x y\n"})
    r = ov("grep", "--json", "-w", "foo", cwd=t)
    ms = r.json["result"]["matches"]
    assert [(m["line"], [(s["start"], s["end"]) for s in m["submatches"]]) for m in ms] == [
        (1, [(0, 3), (8, 11)]), (2, [(5, 8)])]
    # half boundaries: a pattern starting with a non-word character still works
    # ("foo-x" has a word character before "-", as ripgrep 14 sees it)
    assert paths_lines(ov("grep", "--json", "--word-regexp", "--", "-x", cwd=t)) == [("w.txt", 4)]


def test_unicode_classes(ov, tree):
    t = tree({"u.txt": "١٢٣\nabc\nnaïve café\n"})
    assert paths_lines(ov("grep", "--json", r"^\d+$", cwd=t)) == [("u.txt", 1)]
    assert paths_lines(ov("grep", "--json", r"\bcafé\b", cwd=t)) == [("u.txt", 3)]
    assert paths_lines(ov("grep", "--json", r"^\w+\s\w+$", cwd=t)) == [("u.txt", 3)]


def test_context_lines_and_separator(ov, tree):
    t = tree({"c.txt": "1\n2 m\n3\n4\n5\n6\n7 m\n8\n9 m\n"})
    r = ov("grep", "-C", "1", "m", cwd=t)
    assert r.out == ("c.txt-1-1\nc.txt:2:2 m\nc.txt-3-3\n--\n"
                     "c.txt-6-6\nc.txt:7:7 m\nc.txt-8-8\nc.txt:9:9 m\n")
    ms = ov("grep", "--json", "-B", "2", "m", cwd=t).json["result"]["matches"]
    assert [[c["line"] for c in m["before_context"]] for m in ms] == [[1], [5, 6], [8]]
    assert all(m["after_context"] == [] for m in ms)
    ms = ov("grep", "--json", "--after-context", "1", "m", cwd=t).json["result"]["matches"]
    assert [[(c["line"], c["content"]) for c in m["after_context"]] for m in ms] == [
        [(3, "3")], [(8, "8")], []]
    ms = ov("grep", "--json", "--before-context", "1", "--context", "3", "m", cwd=t).json
    first = ms["result"]["matches"][0]
    assert [c["line"] for c in first["before_context"]] == [1]
    assert [c["line"] for c in first["after_context"]] == [3, 4, 5]


def test_glob_filters(ov, t):
    assert paths_lines(ov("grep", "--json", "-g", "*.py", "foo", cwd=t)) == [
        ("a.py", 2), ("sub/c.py", 1), ("sub/c.py", 2)]
    assert paths_lines(ov("grep", "--json", "-g", "!*.py", "foo", cwd=t)) == [("sub/deep/d.md", 2)]
    assert paths_lines(ov("grep", "--json", "-g", "*.py", "-g", "!sub", "foo", cwd=t)) == [
        ("a.py", 2)]
    assert paths_lines(ov("grep", "--json", "--glob", "sub/**", "-g", "!*.md", "foo", cwd=t)) == [
        ("sub/c.py", 1), ("sub/c.py", 2)]


def test_type_filter(ov, t):
    assert paths_lines(ov("grep", "--json", "-t", "py", "foo", cwd=t)) == [
        ("a.py", 2), ("sub/c.py", 1), ("sub/c.py", 2)]
    assert paths_lines(ov("grep", "--json", "--type", "md", "foo", cwd=t)) == [("sub/deep/d.md", 2)]
    r = ov("grep", "--json", "-t", "nosuchtype", "foo", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


def test_exclude_uri(ov, t):
    assert paths_lines(ov("grep", "--json", "--exclude-uri", "sub", "foo", cwd=t)) == [("a.py", 2)]
    assert paths_lines(ov("grep", "--json", "--exclude-uri", "sub/c.py", "--exclude-uri", "a.py",
                          "foo", cwd=t)) == [("sub/deep/d.md", 2)]
    # relative to the current folder (here also the root: there is no index)
    r = ov("grep", "--json", "--exclude-uri", "deep", "foo", cwd=t / "sub")
    assert paths_lines(r) == [("c.py", 1), ("c.py", 2)]


def test_exclude_uri_names_with_whitespace_that_ignore_lines_cannot_hold(ov, tree):
    # a trailing tab or CR, or a newline, is lost in a gitignore line: still excluded
    names = ["tab\t", "cr\r", "nl\nx", "dir\t/f"]
    t = tree({**{n: "foo\n" for n in names}, "keep": "foo\n"})
    for n in names:
        top = n.split("/")[0]
        got = [p for p, _ in paths_lines(ov("grep", "--json", "--exclude-uri", top, "foo", cwd=t))]
        assert top not in [g.split("/")[0] for g in got] and "keep" in got, n


def test_hidden_and_ignore_rules(ov, t):
    base = {p for p, _ in paths_lines(ov("grep", "--json", "foo", cwd=t))}
    assert ".hidden.txt" not in base and "ignored.txt" not in base and "build/out.txt" not in base
    hid = {p for p, _ in paths_lines(ov("grep", "--json", "--hidden", "foo", cwd=t))}
    assert hid == base | {".hidden.txt"}
    noi = {p for p, _ in paths_lines(ov("grep", "--json", "--no-ignore", "foo", cwd=t))}
    assert noi == base | {"ignored.txt", "build/out.txt"}
    # a file named explicitly is searched whatever the ignore rules say (as ripgrep)
    assert paths_lines(ov("grep", "--json", "foo", "ignored.txt", cwd=t)) == [("ignored.txt", 1)]


def test_node_limit_and_truncated(ov, tree):
    t = tree({"a.txt": "x\n" * 5, "b.txt": "x\n" * 5})
    r = ov("grep", "--json", "--node-limit", "3", "x", cwd=t)
    assert paths_lines(r) == [("a.txt", 1), ("a.txt", 2), ("a.txt", 3)]
    assert r.json["result"]["truncated"] is True and r.json["result"]["count"] == 3
    r = ov("grep", "--json", "--node-limit", "5", "x", cwd=t)
    assert len(paths_lines(r)) == 5 and r.json["result"]["truncated"] is True
    r = ov("grep", "--json", "--node-limit", "10", "x", cwd=t)
    assert len(paths_lines(r)) == 10 and r.json["result"]["truncated"] is False
    r = ov("grep", "--node-limit", "2", "x", cwd=t)
    assert r.lines == ["a.txt:1:x", "a.txt:2:x"] and "node-limit 2" in r.err
    big = tree({f"f{i:03}.txt": "x\n" for i in range(300)}, name="big")
    r = ov("grep", "--json", "x", cwd=big)
    assert len(r.json["result"]["matches"]) == 256 and r.json["result"]["truncated"] is True


def test_level_limit(ov, t):
    got = {p for p, _ in paths_lines(ov("grep", "--json", "--level-limit", "1", "foo", cwd=t))}
    assert got == {"a.py"}
    got = {p for p, _ in paths_lines(ov("grep", "--json", "--max-depth", "2", "foo", cwd=t))}
    assert got == {"a.py", "sub/c.py"}
    got = {p for p, _ in paths_lines(ov("grep", "--json", "--level-limit", "1", "foo", "sub", cwd=t))}
    assert got == {"sub/c.py"}
    # 0 enters no folder, not even the start: an empty result that says it was cut
    for args in (["foo"], ["-l", "foo"], ["foo", "sub"]):
        r = ov("grep", "--json", "--level-limit", "0", *args, cwd=t)
        assert r.code == 1 and r.json["result"]["truncated"] is True, (args, r.out)
        assert r.json["result"]["truncated_reason"] == "level_limit"
        assert "--level-limit" in ov("grep", "--level-limit", "0", *args, cwd=t).err


def test_count_and_files_with_matches(ov, t):
    r = ov("grep", "-c", "foo", cwd=t)
    assert r.out == "a.py:1\nsub/c.py:2\nsub/deep/d.md:1\n"
    d = ov("grep", "--json", "--count", "foo", cwd=t).json["result"]
    assert d["counts"] == {"a.py": 1, "sub/c.py": 2, "sub/deep/d.md": 1} and d["count"] == 4
    assert d["files"] == 3
    r = ov("grep", "-l", "foo", cwd=t)
    assert r.out == "a.py\nsub/c.py\nsub/deep/d.md\n"
    assert ov("grep", "-o", "jsonl", "--files-with-matches", "foo", cwd=t).jsonl == [
        {"path": "a.py"}, {"path": "sub/c.py"}, {"path": "sub/deep/d.md"}]
    assert ov("grep", "-o", "jsonl", "-c", "foo", cwd=t).jsonl[1] == {"path": "sub/c.py", "count": 2}
    r = ov("grep", "--json", "-c", "-l", "foo", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


def test_max_columns(ov, tree):
    t = tree({"l.txt": "short foo\n" + "foo " * 20 + "\nctx\n"})
    r = ov("grep", "--max-columns", "20", "foo", cwd=t)
    assert r.out == "l.txt:1:short foo\nl.txt:2:[Omitted long line with 20 matches]\n"
    r = ov("grep", "--max-columns", "5", "-A", "1", "short", cwd=t)
    assert r.out == "l.txt:1:[Omitted long line with 1 matches]\nl.txt-2-[Omitted long context line]\n"


def test_color(ov, t):
    r = ov("grep", "--color", "always", "foo", "a.py", cwd=t)
    assert r.out == "\x1b[35ma.py\x1b[0m:\x1b[32m2\x1b[0m:def \x1b[1;31mfoo\x1b[0m():\n"
    assert "\x1b[" not in ov("grep", "--color", "never", "foo", cwd=t).out
    assert "\x1b[" not in ov("grep", "foo", cwd=t).out  # not a terminal
    r = ov("grep", "--color", "sometimes", "foo", cwd=t)
    assert r.code == 2 and "invalid_argument" in r.err


def test_multiline(ov, tree):
    t = tree({"m.txt": "start\nmiddle\nend\n"})
    assert ov("grep", "--json", r"start\s+middle", cwd=t).code == 1
    ms = ov("grep", "--json", "-U", r"start\s+middle", cwd=t).json["result"]["matches"]
    assert [(m["line"], m["content"]) for m in ms] == [(1, "start\nmiddle")]
    assert ms[0]["submatches"] == [{"start": 0, "end": 12, "text": "start\nmiddle"}]


# -- per-line semantics -------------------------------------------------------------------
def test_dollar_does_not_match_before_cr(ov, tree):
    t = tree({"crlf.txt": b"foo\r\nbar foo\r\nfoo\n", "lf.txt": b"foo\n"})
    assert paths_lines(ov("grep", "--json", "foo$", cwd=t)) == [("crlf.txt", 3), ("lf.txt", 1)]
    ms = ov("grep", "--json", r"foo\s", cwd=t).json["result"]["matches"]
    assert [(m["line"], m["submatches"][0]["text"]) for m in ms] == [(1, "foo\r"), (2, "foo\r")]
    assert ms[0]["content"] == "foo\r"


def test_whitespace_and_negated_classes_stay_on_the_line(ov, tree):
    t = tree({"s.txt": "a b\nc\n\nd\n"})
    assert ov("grep", "--json", r"b\s", cwd=t).code == 1
    ms = ov("grep", "--json", "[^x]+", cwd=t).json["result"]["matches"]
    assert [(m["line"], m["submatches"][0]["text"]) for m in ms] == [(1, "a b"), (2, "c"), (4, "d")]
    ms = ov("grep", "--json", r"b\s*", cwd=t).json["result"]["matches"]
    assert [s["text"] for s in ms[0]["submatches"]] == ["b"]
    # a match that would cross a newline gives way to the one later on the same line
    t2 = tree({"x.txt": "x\nxaz\n"}, name="x")
    ms = ov("grep", "--json", "x[^y]*z", cwd=t2).json["result"]["matches"]
    assert [(m["line"], m["submatches"][0]["text"]) for m in ms] == [(2, "xaz")]


def test_anchors_are_per_line(ov, tree):
    t = tree({"a.txt": "foo\n  foo\nfoo bar\n"})
    assert paths_lines(ov("grep", "--json", "^foo", cwd=t)) == [("a.txt", 1), ("a.txt", 3)]
    assert paths_lines(ov("grep", "--json", r"^\s*foo$", cwd=t)) == [("a.txt", 1), ("a.txt", 2)]


def test_literal_newline_in_pattern_is_refused(ov, t):
    r = ov("grep", "--json", r"a\nb", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_pattern"


# -- files --------------------------------------------------------------------------------
def test_binary_files_are_skipped(ov, tree):
    t = tree({"bin.dat": b"foo\x00bar\n", "text.txt": "foo\n"})
    assert paths_lines(ov("grep", "--json", "foo", cwd=t)) == [("text.txt", 1)]


def test_late_nul_stops_the_search_like_ripgrep(ov, tree):
    filler = (b"y" * 99 + b"\n") * 2000  # 200 KB: the NUL lies beyond the first buffer
    t = tree({"late.txt": b"foo 1\n" + filler + b"foo 2\x00\nfoo 3\n",
              "early.txt": b"foo 1\n" + b"y\n" * 100 + b"\x00foo\n"})
    assert paths_lines(ov("grep", "--json", "foo", cwd=t)) == [("late.txt", 1)]


def test_binary_cutoff_replays_ripgrep_buffers():
    data = b"a\n" + b"x" * 70000 + b"\n" + b"b\n\x00"
    assert binary_cutoff(data, data.index(b"\x00")) == 2  # the first 3-byte read held "a\n"
    data = b"abc" + b"x" * 100 + b"\n\x00"
    assert binary_cutoff(data, data.index(b"\x00")) == 0
    for data in (b"\x00", b"a\x00", b"\n\x00", b"ab\n\x00x", b"abc\n\x00", b"\xa7\r\r\n\x00\x00",
                 b"a\nb" + b"x" * 70_000 + b"\x00", b"abcd" + b"x" * 65_540 + b"\n\x00"):
        assert binary_cutoff(data, data.index(b"\x00")) == _cutoff_by_steps(data)


def _cutoff_by_steps(data: bytes) -> int:
    """ripgrep's schedule replayed byte range by byte range, slowly and plainly."""
    nul = data.index(b"\x00")
    cap, pos, end, want = 64 * 1024, 0, 0, 3
    while True:
        if end - pos >= cap:
            cap *= 3
        new_end = min(end + (want if want else cap - (end - pos)), len(data))
        want = 0
        if new_end <= end:
            return len(data)
        if nul < new_end:
            return pos
        lt = data.rfind(b"\n", end, new_end)
        end = new_end
        if lt >= 0:
            pos = lt + 1


def test_binary_files_are_read_only_to_their_first_buffer(tree):
    from ov.search.files import read_searched

    head = b"x\x00" + b"y" * 70_000
    big = b"z" * 65_536 + b"tail\n" * 30_000  # no NUL: read to the end, however long
    t = tree({"bin.dat": head + b"\x00more", "big.txt": big, "empty.txt": b"",
              "exact.txt": b"q" * 65_536})
    assert read_searched(str(t / "bin.dat")) == head[:65_536]
    assert read_searched(str(t / "big.txt")) == big
    assert read_searched(str(t / "empty.txt")) == b""
    assert read_searched(str(t / "exact.txt")) == b"q" * 65_536
    from ov import grams
    from ov.search import files as fsearch
    from ov.search import matcher

    assert fsearch.RG_BUFFER == matcher.RG_BUFFER == grams.HEAD


def test_work_bounded_patterns_run_without_timeout_and_others_with_it():
    bounded = ["def", r"\)$", "^$", r"[^a-z]{3}$", "foo|bar|baz", r"(?:TODO|FIXME)", r"\bfoo\b",
               r"(ab|cd){3}", r"(a)\1"]
    unbounded = [r"^\s*$", r"\w+Error", "(a+)+$", r"\p{Greek}+", "a{2,5}", r"(ab|cd){20}",
                 "x*", "a+?"]
    assert [p for p in bounded if not compile_pattern(p).bounded] == []
    assert [p for p in unbounded if compile_pattern(p).bounded] == []
    assert compile_pattern("a.b(", fixed=True).bounded and compile_pattern("self", word=True).bounded


def test_long_fixed_repeats_and_fuzzy_patterns_keep_the_timeout():
    # One way per position, but thousands of steps along it: `[ab]{20000}\d` over a
    # 300 KB line of `a` ran 40 s without the deadline.
    long_paths = [r"[ab]{20000}\d", r".{300}x", r"(?:.{1000}){20}\d", "(?:ab|cd){100}",
                  r"[ab]{100}(?=c{200})", r"(.{200})\1"]
    assert [p for p in long_paths if compile_pattern(p).bounded] == []
    # `regex` reads `{e<=1}` as a fuzzy constraint where `re` sees literal text: no
    # required literal, and the timeout stays
    p = compile_pattern("(?:hello){e<=1}")
    assert not p.bounded and p.literals == () and p.line_literal is None
    assert compile_pattern(r"\$\{id\}").literals == ("${id}",)
    assert compile_pattern(r"a\\{e}").literals == ()  # an escaped backslash, then fuzzy


def test_fuzzy_pattern_finds_its_approximate_matches(ov, tree):
    t = tree({"a.txt": "say hallo\nnothing\n"})
    assert paths_lines(ov("grep", "--json", "(?:hello){e<=1}", cwd=t)) == [("a.txt", 1)]


def test_long_fixed_repeat_hits_the_deadline(ov, tree):
    t = tree({"a.txt": "a" * 300_000 + "X9\n"})
    t0 = time.monotonic()
    r = ov("grep", "--json", r"[ab]{20000}\d", cwd=t)
    assert time.monotonic() - t0 < 30
    assert r.code == 2 and r.json["error"]["code"] == "deadline_exceeded"


def test_invalid_utf8_is_searched_with_replacement(ov, tree):
    t = tree({"bad.txt": b"caf\xe9 foo\nok\n"})
    ms = ov("grep", "--json", "foo", cwd=t).json["result"]["matches"]
    assert [(m["line"], m["content"], m["submatches"][0]["start"]) for m in ms] == [
        (1, "caf\ufffd foo", 5)]


def test_big_line_is_searched(ov, tree):
    t = tree({"big.txt": "a" * 3_000_000 + "needle\nnext\n"})
    ms = ov("grep", "--json", "needle", cwd=t).json["result"]["matches"]
    assert [(m["line"], m["submatches"][0]["start"]) for m in ms] == [(1, 3_000_000)]


def test_unreadable_files_are_counted_on_stderr(ov, t, monkeypatch):
    # grep opens files with os.open (root reads any file, so the refusal is simulated)
    real_open = os.open

    def fake_open(file, *a, **k):
        if str(file).endswith(os.sep + "c.py"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(os, "open", fake_open)
    r = ov("grep", "foo", cwd=t)
    assert "sub/c.py" not in r.out and "a.py:2:" in r.out
    assert r.err == "ov: warning: 1 file could not be read\n"
    r = ov("grep", "--json", "foo", cwd=t)
    assert "c.py" not in r.out.replace("could not", "")
    assert r.json["result"]["warnings"] == ["1 file could not be read"]


# -- bad input ----------------------------------------------------------------------------
def test_invalid_regex_names_the_position(ov, t):
    r = ov("grep", "--json", "foo(", cwd=t)
    assert r.code == 2
    e = r.json["error"]
    assert e["code"] == "invalid_pattern" and e["field"] == "pattern" and "position 4" in e["message"]
    r = ov("grep", "a[b", cwd=t)
    assert r.code == 2 and r.err.startswith("ov: error[invalid_pattern]:") and "position" in r.err


def test_catastrophic_pattern_hits_the_deadline(ov, tree):
    t = tree({"a.txt": "a" * 100_000 + "b\n"})
    t0 = time.monotonic()
    r = ov("grep", "--json", "(a+)+$", cwd=t)
    # regex's timeout runs on CPU time: on a busy machine the wall time stretches
    assert time.monotonic() - t0 < 90
    assert r.code == 2 and r.json["error"]["code"] == "deadline_exceeded"
    # the error names the file, and how to leave it out (the Go stdlib's one 2.6 MB line
    # of minified HTML among 8,000 files was not named)
    assert "(a.txt); leave it out with -g '!a.txt'" in r.json["error"]["message"], r.out


def test_path_outside_root_and_missing(ov, tree, tmp_path):
    t = tree({"a.txt": "x\n"})
    (tmp_path / "outside.txt").write_text("x\n")
    # any file or folder on disk can be searched; paths print relative to the current
    # folder, or, under a PATH given absolute, absolute (as rg)
    r = ov("grep", "--json", "x", "../outside.txt", cwd=t)
    assert r.code == 0 and paths_lines(r) == [("../outside.txt", 1)]
    r = ov("grep", "--json", "x", str(tmp_path / "outside.txt"), cwd=t)
    assert paths_lines(r) == [(str(tmp_path / "outside.txt"), 1)]
    r = ov("grep", "-l", "x", ".", str(tmp_path / "outside.txt"), cwd=t)
    assert r.out == f"a.txt\n{tmp_path}/outside.txt\n"
    r = ov("grep", "--json", "x", "nope.txt", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    r = ov("grep", "x", "nope", cwd=t)
    assert r.code == 2 and r.err.startswith("ov: error[not_found]")


def test_root_is_the_index_root(ov, tree):
    t = tree({"a.txt": "x\n", "sub/b.txt": "x\n", ".ov/index.db": b""})
    # an (empty) index file marks the root; printed paths are relative to the current
    # folder (as rg and git grep print them), and JSON names the root once
    r = ov("grep", "--json", "--no-index", "x", cwd=t / "sub")
    assert paths_lines(r) == [("b.txt", 1)] and r.json["result"]["root"] == str(t)
    r = ov("grep", "--json", "--no-index", "x", "..", cwd=t / "sub")
    assert paths_lines(r) == [("../a.txt", 1), ("b.txt", 1)]


def test_tags_without_index_is_unsupported(ov, t):
    r = ov("grep", "--json", "--tags", "k=v", "foo", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported"
    r = ov("grep", "--json", "--tags", "novalue", "foo", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


def test_bad_numbers(ov, t):
    assert ov("grep", "--json", "--node-limit", "0", "x", cwd=t).json["error"]["code"] == "invalid_argument"
    assert ov("grep", "--json", "--max-columns", "-1", "x", cwd=t).json["error"]["code"] == "invalid_argument"
    # 0 is no limit, as in rg
    assert ov("grep", "--max-columns", "0", "x", cwd=t).code in (0, 1)
    for flag, field in (("-A", "after"), ("-B", "before"), ("-C", "context")):
        r = ov("grep", "--json", flag, "-1", "x", cwd=t)
        assert r.json["error"]["field"] == field, (flag, r.out)
    assert ov("grep", "-o", "xml", "x", cwd=t).code == 2


# -- processes ----------------------------------------------------------------------------
def test_pipe_to_head_is_quick_and_quiet(tree):
    t = tree({f"d{i:02}/f{j:03}.txt": "foo line\n" * 50 for i in range(20) for j in range(50)})
    env = dict(os.environ, PYTHONUNBUFFERED="0")
    t0 = time.monotonic()
    p = subprocess.run(
        f"{sys.executable} -m ov grep -o jsonl --node-limit 1000000 foo | head -1",
        shell=True, cwd=t, env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.startswith('{"path":"d00/f000.txt","line":1,')
    assert p.stderr == ""
    # the same through the shell's own pipe status: ov must exit 0 on the closed pipe
    q = subprocess.Popen([sys.executable, "-m", "ov", "grep", "--node-limit", "1000000", "foo"],
                         cwd=t, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = q.stdout.readline()
    q.stdout.close()
    rc = q.wait(timeout=60)
    assert first == b"d00/f000.txt:1:foo line\n"
    assert rc == 0 and q.stderr.read() == b""
    assert time.monotonic() - t0 < 60


def test_plain_grep_imports_no_model_runtime(tree):
    t = tree({"a.txt": "foo\n"})
    r, modules = imported_by(["grep", "foo"], t)
    assert r.out == "a.txt:1:foo\n" and not {"numpy", "onnxruntime"} & modules


def test_plain_grep_leaves_glob_and_ignore_libraries_unloaded(tree):
    """wcmatch, pathspec and OpenSSL's hashes cost ~25 ms of imports: a grep over a tree
    without ignore files, --exclude-uri included, needs none of them."""
    t = tree({"a.txt": "foo\n", "sub/b.txt": "foo\n"})
    r, modules = imported_by(["grep", "--exclude-uri", "sub", "foo"], t)
    assert r.out == "a.txt:1:foo\n" and not {"wcmatch", "pathspec", "_hashlib"} & modules


# -- unit ---------------------------------------------------------------------------------
def test_required_literals():
    assert compile_pattern(r"\w+Error").line_literal == "Error"
    assert compile_pattern("a|b").byte_literals == ()
    assert compile_pattern("(?i)Hello").byte_literals == (b"hello",)
    assert compile_pattern("kelvins", ignore_case=True).byte_literals == (b"elv",)
    p = compile_pattern(r"x[^y]*z")
    assert list(spans(p, "x\nxaz")) == [(2, 5)]


def test_fast_json_equals_the_model_dump(tree):
    import json

    from ov.search import files as fsearch
    from ov.render import grep_envelope, to_data

    t = tree({"c.txt": "1\n2 m\n3\n4 m m\n", "d.txt": "m\n"})
    for kw in ({"before": 1, "after": 1}, {"mode": "count"}, {"mode": "files"}, {}):
        res = fsearch.grep("m", cwd=t, **kw)
        assert json.loads(grep_envelope(res, 0))["result"] == to_data(res)


def test_fast_envelope_equals_dumps(tree):
    """The envelope is written as text; it must be exactly what json.dumps gives."""
    from ov.search import files as fsearch
    import io

    from ov.render import Out, dumps, grep_envelope, match_json, to_data

    t = tree({"a b.txt": 'q "quoted" \\ back\tslash q\n\x01 ctl q\n',
              "ünï/日本.txt": "x\nq ümlaut Ω q q\ny\nz\nq\n", "e.txt": "none\n"})
    for kw in ({"before": 2, "after": 1}, {"mode": "count"}, {"mode": "files"}, {},
               {"node_limit": 2}, {"pattern": "zz"}, {"pattern": "ümlaut"}):
        pattern = kw.pop("pattern", "q")
        res = fsearch.grep(pattern, cwd=t, **kw)
        res.warnings.append('a "warning"')
        want = dumps({"status": "ok", "result": to_data(res),
                      "usage": {"elapsed_ms": 12}}) + "\n"
        assert grep_envelope(res, 12) == want
        # JSON Lines: one record a match, the same text as the generic path writes
        buf = io.StringIO()
        out = Out("jsonl", stdout=buf)
        for m in res.matches:
            out.raw(match_json(m))
        assert buf.getvalue() == "".join(dumps(to_data(m)) + "\n" for m in res.matches)


def test_one_pass_records_equal_lines_then_records():
    """line_matches (the no-context path) gives exactly build_matches(matched_lines)."""
    import random

    from ov.search.matcher import build_matches, line_matches, matched_lines

    rnd = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\r\n", "ab", "é", "\n\n"]
    texts = ["", "\n", "a", "a\n", "\n\na b\n", "ab\r\nab"]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60))) for _ in range(150)]
    pats = [("a", {}), ("^$", {}), ("b$", {}), (r"a\s+b", {}), (r"^\s*$", {}), ("a|ab", {}),
            ("(?:)", {}), ("b\\s*\\n?a", {"multiline": True}), ("[^x]+", {}), ("A", {"ignore_case": True}),
            (r"\bab\b", {}), ("a b", {"fixed": True})]
    for pat, kw in pats:
        p = compile_pattern(pat, **kw)
        for text in texts:
            for limit in (None, 1, 2):
                lines, more = matched_lines(p, text, limit)
                want = build_matches("f", text, lines)
                assert line_matches(p, "f", text, limit) == (want, more), (pat, text, limit)


def test_spans_are_the_per_line_search():
    """spans() over the whole text gives what searching each line alone gives (less an
    empty match where a non-empty one ended, which rg's regex does not find)."""
    import random

    rnd = random.Random(11)
    alphabet = ["a", "b", " ", "\n", "\r\n", "ab", "é", "\n\n", "  \n", "x", ")"]
    texts = ["", "\n", "a", "a\n", "\n\na b\n", "ab\r\nab", "  \n" * 40 + "x\n"]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 200))) for _ in range(300)]
    pats = [r"^\s*$", r"a\s+b", r"[^a-z]{3}$", r"[^x]+", r"\s", r"b\s*", r"^$", r"\)$", r"x\s+y",
            r"[^a]*b", r"(?:a|\s)+",
            # an empty match, then one across lines from the same place: reported once
            r"^$|\s+", r"x*|\s+", r"\s+\S|x*|\s+", r"\s(?=\s)", r"a\Z"]
    for pat in pats:
        p = compile_pattern(pat)
        for text in texts:
            n = len(text)
            phantom = n if n == 0 or text[-1] == "\n" else -1
            want, pos = [], 0
            while pos <= n:
                le = text.find("\n", pos)
                le = n if le < 0 else le
                after = -1
                for m in p.rx.finditer(text, pos, le):
                    s, e = m.span()
                    if s != phantom and not s == e == after:
                        want.append((s, e))
                    after = e if e > s else -1
                pos = le + 1
            assert [sp for sp in spans(p, text) if sp[0] != phantom] == want, (pat, text)


def test_a_line_matches_the_same_whatever_comes_before_it(ov, tree):
    # A lookahead or \Z sees the line alone, as in ripgrep (`a\z` matches at every line
    # end), not the text after the newline, and so the same in every part of a file:
    # " \n" matched `\s(?=\s)` at the top of a file but not after a match that ran
    # across lines (there the lines were searched one by one).
    t = tree({"top.txt": " \ny\n", "after.txt": "a\n \ny\n", "p.txt": "a \tb\n",
              "z.txt": "ba\nca\nda"})
    assert paths_lines(ov("grep", "--json", r"\s(?=\s)", cwd=t)) == [("p.txt", 1)]
    assert paths_lines(ov("grep", "--json", r"a\Z", cwd=t)) == [
        ("after.txt", 1), ("z.txt", 1), ("z.txt", 2), ("z.txt", 3)]
    assert paths_lines(ov("grep", "--json", r"\w(?!\s)", cwd=t)) == [
        ("after.txt", 1), ("after.txt", 3), ("p.txt", 1), ("top.txt", 2),
        ("z.txt", 1), ("z.txt", 2), ("z.txt", 3)]


def test_long_runs_of_blank_lines_stay_linear(ov, tree):
    # each search from a line start used to scan the whole run again: 12 s for 50,000 lines
    t = tree({"blank.txt": "  \n" * 200_000 + "x\n"})
    t0 = time.monotonic()
    r = ov("grep", "-c", r"^\s*$", cwd=t)
    assert r.out == "blank.txt:200000\n"
    assert time.monotonic() - t0 < 30


def test_a_grep_half_read_leaves_the_garbage_collector_on(tree, monkeypatch):
    """The collector is paused by those who read the records to the end (the CLI,
    fsearch.grep), never across the generator's yields: a caller holding a half-read
    iter_grep keeps a working collector."""
    import gc

    from ov.search import files as fsearch

    root = tree({f"f{i}.txt": "foo\nbar foo\n" for i in range(5)})
    monkeypatch.chdir(root)
    assert gc.isenabled()
    it = fsearch.iter_grep("foo", [])
    assert next(it).path == "f0.txt"
    assert gc.isenabled()
    it.close()
    assert len(fsearch.grep("foo", []).matches) == 10
    assert gc.isenabled()


@pytest.mark.parametrize("pattern, fixed", [
    ("needle", False), ("a b", False), ("é", False), ("ab", False), ("x-y=z", False),
    ("a.b(", True), ("[x]", True), ("\\d", True), ("aa", False)])
def test_a_plain_string_is_searched_without_regex_and_finds_the_same(pattern, fixed):
    """A plain string (or -F without -i/-w) goes to the stdlib `re`, never loading
    `regex`; its matches are those `regex` finds."""
    import regex

    from ov.search.matcher import _Plain

    p = compile_pattern(pattern, fixed=fixed)
    assert isinstance(p.rx, _Plain)
    text = f"{pattern}{pattern} x\n{pattern[::-1]}\nno\naaa {pattern}\r\n\u00e9{pattern}"
    ref = regex.compile(regex.escape(pattern), regex.V0 | regex.MULTILINE)
    assert list(spans(p, text)) == [m.span() for m in ref.finditer(text)]


@pytest.mark.parametrize("pattern, kw", [("a.b", {}), ("ab", {"ignore_case": True}),
                                         ("ab", {"word": True}), ("(?i)ab", {})])
def test_a_pattern_that_is_not_plain_goes_to_regex(pattern, kw):
    from ov.search.matcher import _Plain

    assert not isinstance(compile_pattern(pattern, **kw).rx, _Plain)


def test_a_literal_grep_does_not_import_regex(tree):
    t = tree({"a.txt": "foo\n"})
    r, modules = imported_by(["grep", "foo"], t)
    assert r.out == "a.txt:1:foo\n" and "regex" not in modules


def test_standard_input_is_refused_by_name(ov, t):
    """`-` is rg's standard input; ov reads files, and says so rather than 'no such file'."""
    r = ov("grep", "foo", "-", "-o", "json", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported", r.out
    assert "standard input" in r.json["error"]["message"]
    (t / "-").write_text("foo here\n")  # a file named so is searched
    try:
        r = ov("grep", "-l", "foo", "-", cwd=t)
        assert r.code == 0 and r.out == "-\n", r.out
    finally:
        (t / "-").unlink()


def test_counting_lines_visits_a_line_once_and_counts_as_the_matches_do():
    """`-c` searches each matching line once (`count_lines`) instead of visiting every
    match (`ov grep -ic e` over the kernel ran past the 60 s timeout): the same count as
    the lines `matched_lines` reports, for every kind of pattern (plain, candidate-line,
    per-line, across newlines, -i, -w, -x, -F, -U) and with -m."""
    import random

    from ov.search.matcher import compile_pattern, count_lines, matched_lines

    rnd = random.Random(7)
    pats = [r"^", r"$", r"^$", "e", r"a\s*b", r"\s+", "foo|bar", r"(?<=x)y", r"a(?=b)", r"\bab\b", "[a-c]+",
            r"x\n?y", r"^\s*$", "b$", r"\Z", r"(a)\1", ".", "a.*?c", "[^a]b", r"\d+", "ab", " \n", r"\s*",
            "E", "b e", "ks", "é"]
    flags = ({}, {"ignore_case": True}, {"word": True}, {"line": True}, {"fixed": True}, {"multiline": True})
    checked = 0
    for _ in range(300):
        # with letters that -i pairs outside ASCII (Kelvin sign, long s) and accented ones
        text = "".join(rnd.choice("abcxy \n\n\t e123ABEÉéksK\u212a\u017f") for _ in range(rnd.randint(0, 60)))
        for pat in pats:
            for kw in flags:
                try:
                    p = compile_pattern(pat, **kw)
                except OvError:
                    continue
                for limit in (None, 1, 2):
                    lines, more = matched_lines(p, text, limit)
                    assert count_lines(p, text, limit) == (len(lines), more), (pat, kw, limit, text)
                    checked += 1
    assert checked > 10_000


def test_a_fifo_named_as_a_path_is_said_not_searched(tmp_path):
    """`ov grep alpha fifo.txt` answered no match without a word (a fifo is not read: it
    would block until a writer came)."""
    root = make_tree(tmp_path / "t", {"a.txt": "alpha\n"})
    os.mkfifo(root / "pipe.txt")
    r = run_inprocess("grep", "alpha", "pipe.txt", "a.txt", "-o", "json", cwd=root)
    res = r.json["result"]
    assert r.code == 0 and [m["path"] for m in res["matches"]] == ["a.txt"], r.out
    assert res["warnings"] == ["pipe.txt: not a regular file (a fifo, socket or device); not searched"]
    assert "pipe.txt: not a regular file" not in run_inprocess("grep", "alpha", cwd=root).err  # walked: unsaid


def test_m_0_names_the_root_as_every_grep_result_does(tmp_path):
    root = make_tree(tmp_path / "t", {"a.txt": "alpha\n"})
    r = run_inprocess("grep", "alpha", "-m", "0", "-o", "json", cwd=root)
    assert r.code == 1 and r.json["result"]["root"] == str(root), r.out


def test_a_bad_e_pattern_is_named_at_its_own_position(tmp_path):
    """`-e bread -e '('` said "missing ) at position 15", a place in ov's own alternation."""
    root = make_tree(tmp_path / "t", {"a.txt": "bread\n"})
    r = run_inprocess("grep", "-e", "bread", "-e", "(", "-o", "json", cwd=root)
    err = r.json["error"]
    assert r.code == 2 and err["code"] == "invalid_pattern" and err["field"] == "pattern", err
    assert err["message"] == "-e '(': invalid regex: missing ) at position 1", err


def test_several_e_patterns_with_U_are_checked_as_multiline(tmp_path):
    """The check that names a bad -e compiled each one without -U: `-U -e 'foo\\nbar' -e
    qux` was refused (review of this change)."""
    root = make_tree(tmp_path / "t", {"a.txt": "foo\nbar\n"})
    r = run_inprocess("grep", "-U", "-e", "foo\\nbar", "-e", "qux", "-c", cwd=root)
    assert r.code == 0 and r.out == "a.txt:1\n", (r.out, r.err)  # as rg -U -c counts it


def test_a_start_of_text_anchor_is_each_lines_start_and_h_is_refused_as_rg_does():
    """rg searches each line alone, so `\\A` is a line's start (ov read the file's: `\\A#
    frozen` found 2,312 lines of a Ruby tree where rg found 2,447); with -U it is the
    file's. `\\h`, which rg refuses and dialects read differently (hex in Ruby, horizontal
    space in PCRE), matched 223,493 lines of spaces for `\\h{8}`: refused."""
    text = "foo bar\nbar foo\nfoo\n"
    assert [s[0] for s in spans(compile_pattern(r"\Afoo"), text)] == [0, 16]
    assert [s[0] for s in spans(compile_pattern(r"\Afoo", multiline=True), text)] == [0]
    for bad in (r"\h{8}", r"[\h]", r"\H"):
        with pytest.raises(OvError) as e:
            compile_pattern(bad)
        assert e.value.code == "invalid_pattern" and "unrecognized escape sequence" in str(e.value)
    assert [s[0] for s in spans(compile_pattern(r"\\h"), "a \\h")] == [2]  # (an escaped backslash, then h)
