"""`ov read FILE:LINE` and `ov read FILE:START-END`: following a hit to its line.

A review on a Go tree: `ov read net/http/request.go:989`, copied from a hit, answered
`not_found: ... is not in the index`, and `-L 2` printed all 1,483 lines of the file.
"""

from __future__ import annotations

import sqlite3

import pytest

from conftest import make_tree, run_inprocess

ENV = {"OV_EMBEDDER": "hash"}
HEAD = '"""A pipeline of steps."""\n\n\n'
STEPS = "".join(f'def f{i}(x):\n    """Step {i} of the pipeline."""\n'
                + "".join(f"    x = x * {j} + {i}  # scale the value by {j}\n" for j in range(12))
                + "    return x\n\n\n" for i in range(4))
PIPE = HEAD + STEPS  # 71 lines; its passages are cut at each def (and inside each)


@pytest.fixture
def root(tmp_path):
    root = make_tree(tmp_path / "t", {"pkg/pipe.py": PIPE, "notes.txt": "one\ntwo\n",
                                      "crlf.txt": "alpha\r\nbeta\r\ngamma\r\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    return root


def ov(root, *args, cwd=None):
    return run_inprocess(*args, cwd=cwd or root, env=ENV)


def passages(root, path):
    """(start_line, end_line) of the file's passages as the index holds them."""
    con = sqlite3.connect(root / ".ov" / "index.db")
    try:
        return con.execute("SELECT c.start_line, c.end_line FROM chunks c JOIN files f ON f.id = c.file_id "
                           "WHERE f.path = ? AND c.level = 2 ORDER BY c.seq", (path,)).fetchall()
    finally:
        con.close()


def numbered(text, first, last, asked=None):
    """Lines first..last of `text` as `ov read` prints them."""
    lines = text.split("\n")
    return "".join(f"{n}{'-' if asked not in (None, n) else ':'}{lines[n - 1]}\n" for n in range(first, last + 1))


def test_a_line_prints_the_indexed_passage_that_holds_it(root):
    spans = passages(root, "pkg/pipe.py")
    a, b = next((a, b) for a, b in spans if a < b and a > 1)
    line = a + 2
    r = ov(root, "read", f"pkg/pipe.py:{line}")
    assert r.code == 0 and r.err == "", r.err
    assert r.out == numbered(PIPE, a, b, asked=line)
    assert f"\n{line}:" in r.out and f"\n{line + 1}-" in r.out
    j = ov(root, "read", f"pkg/pipe.py:{line}", "-o", "json")
    res = j.json["result"]
    # the read shape as before, the line range added
    assert res == {"path": "pkg/pipe.py", "level": 2, "kind": "file",
                   "text": "".join(ln + "\n" for ln in PIPE.split("\n")[a - 1:b]),
                   "start_line": a, "end_line": b, "line": line, "warnings": [], "root": str(root)}
    # -L 2 is the level a line reads; from a subfolder the path is relative to it
    assert ov(root, "read", f"pkg/pipe.py:{line}", "-L", "2").out == r.out
    # copied from `path:line: text` with its colon, or from rg's `path:line:column`
    assert ov(root, "read", f"pkg/pipe.py:{line}:").out == r.out
    assert ov(root, "read", f"pkg/pipe.py:{line}:7").out == r.out
    sub = ov(root, "read", f"pipe.py:{line}", "-o", "json", cwd=root / "pkg").json["result"]
    assert (sub["path"], sub["start_line"], sub["end_line"]) == ("pipe.py", a, b)


def test_a_line_between_passages_joins_the_next_one_or_the_last(root):
    spans = passages(root, "pkg/pipe.py")
    held = {n for a, b in spans for n in range(a, b + 1)}
    gap = next(n for n in range(2, 60) if n not in held)
    nxt = next((a, b) for a, b in spans if a > gap)
    res = ov(root, "read", f"pkg/pipe.py:{gap}", "-o", "json").json["result"]
    assert (res["start_line"], res["end_line"], res["line"]) == (gap, nxt[1], gap)
    end = PIPE.count("\n")  # the last line, blank, after the last passage
    assert end not in held
    res = ov(root, "read", f"pkg/pipe.py:{end}", "-o", "json").json["result"]
    assert (res["start_line"], res["end_line"]) == (spans[-1][0], end)


def test_a_range_prints_exactly_those_lines(root):
    r = ov(root, "read", "pkg/pipe.py:5-8")
    assert r.code == 0 and r.out == numbered(PIPE, 5, 8), r.out
    res = ov(root, "read", "pkg/pipe.py:5-8", "--json").json["result"]
    assert (res["start_line"], res["end_line"], "line" in res) == (5, 8, False)
    assert res["text"] == "".join(ln + "\n" for ln in PIPE.split("\n")[4:8])
    assert ov(root, "read", "notes.txt:2-2").out == "2:two\n"
    # CRLF: JSON has the file's exact text, the numbered lines no "\r"
    assert ov(root, "read", "crlf.txt:2-3").out == "2:beta\n3:gamma\n"
    assert ov(root, "read", "crlf.txt:2-3", "--json").json["result"]["text"] == "beta\r\ngamma\r\n"
    # a file whose own name ends like a line is read as that file
    (root / "notes:2").write_text("a file named notes:2\n")
    assert ov(root, "index", ".", "--no-embed").code == 0
    assert ov(root, "read", "notes:2").out == "a file named notes:2\n"
    # a name holding a newline (grep prints it escaped, `new\x0aline.txt:1:`; the name
    # itself is what `ov read` takes), read back with a line range
    (root / "new\nline.txt").write_text("first\nsecond\n")
    assert ov(root, "index", ".", "--no-embed").code == 0
    assert ov(root, "read", "new\nline.txt:2-2").out == "2:second\n"
    # ... and so is the name as text output prints it, copied from grep's line
    shown = ov(root, "grep", "-n", "second", "new\nline.txt").out
    assert shown == "new\\x0aline.txt:2:second\n", shown
    assert ov(root, "read", shown.split(":")[0] + ":2-2").out == "2:second\n"
    assert ov(root, "read", "new\\x0aline.txt", "-o", "json").json["result"]["path"] == "new\nline.txt"
    # a text-mode error shows a name as grep's line does: copied from it, `ov read` takes it
    r = ov(root, "read", "new\nline.txt:9")
    assert r.err == "ov: error[invalid_argument]: new\\x0aline.txt has 2 lines: line 9 is past its end\n", r.err
    assert ov(root, "read", r.err.split(": ")[2].split(" has ")[0]).out == "first\nsecond\n"
    # a file whose own name holds the four characters `\x0a` is that file, not the other
    (root / "new\\x0aline.txt").write_text("its own\n")
    assert ov(root, "index", ".", "--no-embed").code == 0
    assert ov(root, "read", "new\\x0aline.txt").out == "its own\n"
    # what is wrong with the file it stands for is said, and capitals read as well
    r = ov(root, "read", "new\\x0Aline.txt:9", "-o", "json")
    assert r.code == 2 and r.json["error"]["message"] == "new\nline.txt has 2 lines: line 9 is past its end", r.out
    r = ov(root, "read", "gone\\x0aline.txt", "-o", "json")  # neither name: the name asked for
    assert r.code == 2 and r.json["error"]["code"] == "not_found" and "gone\\x0aline.txt" in r.json["error"]["message"]


@pytest.mark.parametrize("arg, message", [
    ("pkg/pipe.py:72", "pkg/pipe.py has 71 lines: line 72 is past its end"),
    ("pkg/pipe.py:70-90", "pkg/pipe.py has 71 lines: line 90 is past its end"),
    ("notes.txt:3", "notes.txt has 2 lines: line 3 is past its end"),
    ("pkg/pipe.py:0", "pkg/pipe.py:0: lines are numbered from 1"),
    ("pkg/pipe.py:9-3", "pkg/pipe.py:9-3: the range ends before it starts"),
    ("pkg:3", "pkg is a folder: `:3` reads lines of a file"),
])
def test_a_line_that_is_not_there_is_invalid_argument(root, arg, message):
    r = ov(root, "read", arg, "-o", "json")
    assert r.code == 2 and r.json["error"] == {"code": "invalid_argument", "message": message,
                                               "retryable": False, "field": "path"}, r.out
    t = ov(root, "read", arg)
    assert t.code == 2 and t.out == "" and t.err == f"ov: error[invalid_argument]: {message}\n"


def test_a_tier_level_with_a_line_is_refused(root):
    for lv in ("0", "1"):
        r = ov(root, "read", "pkg/pipe.py:10", "-L", lv)
        assert r.code == 2 and r.out == "", r.out
        assert r.err == (f"ov: error[invalid_argument]: --level {lv} prints a tier of the whole file, "
                         "and `:10` asks for lines of its full text: leave out --level (or give 2)\n")
        assert ov(root, "read", "pkg/pipe.py:10", "-L", lv, "--json").json["error"]["field"] == "level"


def test_lines_of_a_file_not_in_the_index_are_read_from_it_and_say_why(root, tmp_path):
    """`ov grep` points at files the index lacks (new since `ov index`, over
    --max-filesize: `big.log:59510`); `ov read big.log:59509-59511` answered not_found. The
    lines are read from the file now, with a warning saying why the index lacks it; a file
    that is not there, binary, or reached through a link out of the tree is still refused."""
    (root / "new.py").write_text("x = 1\ny = 2\n")
    r = ov(root, "read", "new.py:2", "-o", "json")
    res = r.json["result"]
    assert r.code == 0 and res["text"] == "x = 1\ny = 2\n" and res["line"] == 2, r.out
    assert res["warnings"][0].startswith("new.py is not in the index: the file is new since"), res
    big = "".join(f"line {i} {'flamingoHandler' if i == 1500 else 'noise'}\n" for i in range(3000))
    (root / "big.log").write_text(big)
    assert run_inprocess("index", ".", "--no-embed", "--max-filesize", "10K", cwd=root, env=ENV).code == 0
    r = ov(root, "read", "big.log:1500-1502")
    assert r.code == 0 and r.out == "1500:line 1499 noise\n1501:line 1500 flamingoHandler\n1502:line 1501 noise\n", r
    assert "skipped it (over --max-filesize" in r.err and "these are its lines as they are now" in r.err, r.err
    # a line alone: a passage holding it, cut from the lines around it (not the whole file)
    r = ov(root, "read", "big.log:1501", "-o", "json")
    res = r.json["result"]
    assert r.code == 0 and res["start_line"] <= 1501 <= res["end_line"] and res["end_line"] - res["start_line"] < 60, res
    assert "the passage is cut from its lines 1301-1701 as they are now" in res["warnings"][0], res
    (root / "huge.log").write_text(big)  # new since the last run, and over the cap
    r = ov(root, "read", "huge.log:1501-1501")
    assert r.code == 0 and "huge.log is not in the index: it is over --max-filesize" in r.err, r.err
    r = ov(root, "read", "gone.py:1")
    assert r.code == 2 and r.err == "ov: error[not_found]: gone.py is not in the index\n"
    (root / "bin.dat").write_bytes(b"a\x00b\nc\n")
    assert ov(root, "read", "bin.dat:1").code == 2
    (tmp_path / "outside.txt").write_text("secret\n")
    (root / "out.txt").symlink_to(tmp_path / "outside.txt")
    r = ov(root, "read", "out.txt:1")
    assert r.code == 2 and "secret" not in r.out + r.err and "leading outside the tree" in r.err, r


def test_a_changed_file_is_read_as_it_is_now_and_says_so(root):
    from ov.indexer import passages as cut

    now = "# two new lines\n# above the steps\n" + PIPE
    (root / "pkg" / "pipe.py").write_text(now)
    line = passages(root, "pkg/pipe.py")[1][0] + 2 + 2  # the same code line, moved down two
    # (the index is keywords-only, `--no-embed`: its passages are cut by lines, and so is the file now)
    want = next((a, b) for a, b in ((c.start_line, c.end_line) for c in cut(now, "pkg/pipe.py", True))
                if a <= line <= b)
    r = ov(root, "read", f"pkg/pipe.py:{line}")
    assert r.code == 0 and r.out == numbered(now, *want, asked=line)
    assert r.err == ("ov: warning: the file changed since the last `ov index`: the passage is cut from "
                     "its text as it is now, as `ov index` would cut it; run `ov index` to refresh\n")
    res = ov(root, "read", f"pkg/pipe.py:{line}", "--json").json["result"]
    assert (res["start_line"], res["end_line"]) == want and "changed since" in res["warnings"][0]
    r = ov(root, "read", "pkg/pipe.py:1-2")
    assert r.out == "1:# two new lines\n2:# above the steps\n"
    assert "these are its lines as they are now" in r.err
    # one line fewer than before: the count is the file's now
    (root / "notes.txt").write_text("one\n")
    assert "notes.txt has 1 line: line 2 is past its end" in ov(root, "read", "notes.txt:2").err
    # re-indexed: no warning
    assert ov(root, "index", ".", "--no-embed").code == 0
    assert ov(root, "read", f"pkg/pipe.py:{line}").err == ""


@pytest.mark.parametrize("arg", ["pkg/pipe.py:abc", "pkg/pipe.py:", "notes.txt:1x"])
def test_a_files_path_with_no_line_after_its_colon_says_what_read_takes(root, arg):
    """`ov read core-api/memory-allocation.rst:abc` said the path `...:abc` was not in the
    index (a review of a docs tree): it names a file, and something that is no line."""
    r = ov(root, "read", arg)
    assert r.code == 2 and "error[invalid_argument]" in r.err and "is not a line number" in r.err, r.err
    assert "error[not_found]" in ov(root, "read", "nosuch.py:abc").err
