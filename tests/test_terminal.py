"""Terminal manners: only data on stdout, colour only when wanted, quiet closed pipes.

- In json and jsonl mode, stdout of every command parses (one envelope / one object a
  line) even when the command also warns or reports progress: those go to stderr.
- `--color auto|always|never` on every command; NO_COLOR turns auto off; colour only on
  a terminal (checked on a real pseudo-terminal).
- `ov ... | head -c 1`: the reader goes away, ov ends with 0 and says nothing.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_tree

ANSI = "\x1b["


def index_with_hash(base: Path) -> None:
    """`ov index .` in `base` with the small test embedder (a module fixture cannot use the
    function-scoped one the suite sets)."""
    from conftest import run_inprocess

    os.environ["OV_EMBEDDER"] = "hash"
    try:
        r = run_inprocess("index", ".", cwd=base)
    finally:
        del os.environ["OV_EMBEDDER"]
    assert r.code == 0, r.err


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """An indexed tree; `changed.md` is rewritten after indexing, so hits on it are stale."""
    base = tmp_path_factory.mktemp("term")
    files = {f"src/m{i}.py": f'"""Module {i}."""\n\ndef needle_{i}():\n    return "needle {i}"\n'
             for i in range(12)}
    files["docs/guide.md"] = "# Guide\n\nThe needle is in the haystack.\n"
    files["changed.md"] = "# Changed\n\nneedle needle needle needle\n"
    make_tree(base / "t", files)
    make_tree(base / "fresh", {"a.md": "# A\n\nSome text.\n"})
    index_with_hash(base / "t")
    (base / "t" / "changed.md").write_text("nothing left of it\n")
    return base / "t"


# Every command, with arguments that make it warn where it can: stale hits (search,
# find), a node-limit cut (grep, glob), options context mode ignores, a failing check.
CASES = [
    ("index", ["index", "../fresh", "--full", "--progress"], None),  # not the tree: keep it stale
    ("status", ["status"], None),
    ("grep", ["grep", "needle", "--node-limit", "3"], "stopped at --node-limit 3"),
    ("grep -c", ["grep", "needle", "-c"], None),
    ("glob", ["glob", "**/*.py", "--node-limit", "2"], "stopped at --node-limit 2"),
    ("glob fields", ["glob", "**/*.md", "-f", "path,size,tags"], None),
    ("find", ["find", "needle", "-n", "50"], "changed or deleted since indexing"),
    ("search", ["search", "needle needle", "--search-type", "keywords"], "changed or deleted since indexing"),
    ("search context", ["search", "needle", "--mode", "context", "--explain"], "--explain has no effect"),
    ("read", ["read", "docs/guide.md"], None),
    ("tag", ["tag", "docs/guide.md", "team=docs"], None),
    ("manifest", ["manifest"], None),
    ("doctor", ["doctor"], None),
]


@pytest.mark.parametrize("name, args, warning", CASES, ids=[c[0] for c in CASES])
def test_json_stdout_is_only_data(ov, root, name, args, warning):
    env = {"OV_MODEL": "/nonexistent/model.onnx"} if name == "doctor" else None
    r = ov(*args, "-o", "json", cwd=root, env=env)
    assert r.code in (0, 1), r.out + r.err
    data = json.loads(r.out)  # the whole of stdout is one JSON document
    assert data["status"] == "ok" and "result" in data and r.out.count("\n") == 1
    if warning and name not in ("grep", "glob"):  # grep/glob JSON carries the cut in the result
        assert "ov: warning: " in r.err and warning in r.err


@pytest.mark.parametrize("name, args, warning", CASES, ids=[c[0] for c in CASES])
def test_jsonl_stdout_is_only_data(ov, root, name, args, warning):
    env = {"OV_MODEL": "/nonexistent/model.onnx"} if name == "doctor" else None
    r = ov(*args, "-o", "jsonl", cwd=root, env=env)
    assert r.code in (0, 1), r.out + r.err
    lines = r.out.splitlines()
    assert lines, name
    for line in lines:
        rec = json.loads(line)
        assert isinstance(rec, dict) and rec.get("status") != "error"
    if warning:
        assert warning in r.err and r.err.startswith("ov: warning: ")


def test_errors_in_json_are_json(ov, root):
    for args in (["grep", "("], ["glob", "a", "--node-limit", "0"], ["search", "x", "--after", "soon"],
                 ["read", "nope.md"], ["status", "--db", "/nonexistent.db"]):
        for fmt in ("json", "jsonl"):
            r = ov(*args, "-o", fmt, cwd=root)
            assert r.code == 2
            assert json.loads(r.out)["status"] == "error" and r.err == ""


def test_progress_goes_to_stderr(ov_proc, tmp_path):
    root = make_tree(tmp_path / "t", {f"f{i}.md": f"# Note {i}\n\nText {i}.\n" for i in range(60)})
    r = ov_proc(["index", ".", "--progress", "-o", "json"], cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.code == 0, r.err
    assert json.loads(r.out)["result"]["added"] == 60
    assert r.err  # the bar was drawn, on stderr
    r = ov_proc(["index", ".", "--full", "--progress"], cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.out == "" and "indexed" in r.err


def test_every_command_accepts_color(ov, root):
    import typer.main

    from ov.cli.app import app

    cmd = typer.main.get_command(app)
    for name, sub in cmd.commands.items():
        flags = {o for p in sub.params for o in getattr(p, "opts", ())}
        assert "--color" in flags, name
    r = ov("status", "--color", "never", cwd=root)
    assert r.code == 0
    r = ov("status", "--color", "rainbow", cwd=root)
    assert r.code == 2 and "unknown colour choice 'rainbow'" in r.err


# ---- colour on a real terminal ---------------------------------------------------------


def _on_tty(args: list[str], cwd, env: dict) -> str:
    """Run ov with stdout on a pseudo-terminal; return what it printed there."""
    master, slave = pty.openpty()
    e = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}  # only as the test sets it
    e.update({"OV_EMBEDDER": "hash", **env})
    p = subprocess.Popen([sys.executable, "-m", "ov", *args], cwd=cwd, env=e, stdout=slave,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            p.kill()
            raise AssertionError("no output from ov on the terminal")
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


@pytest.mark.parametrize("args", [["grep", "needle", "src/m1.py"], ["search", "needle", "-n", "2"],
                                  ["doctor"]], ids=["grep", "search", "doctor"])
def test_color_on_a_terminal_and_no_color(root, args):
    env = {"OV_MODEL": "/nonexistent"} if args[0] == "doctor" else {}
    assert ANSI in _on_tty(args, root, env)  # auto: a terminal gets colour
    assert ANSI not in _on_tty(args, root, {**env, "NO_COLOR": "1"})
    assert ANSI not in _on_tty([*args, "--color", "never"], root, env)
    assert ANSI in _on_tty([*args, "--color", "always"], root, {**env, "NO_COLOR": "1"})
    assert ANSI in _on_tty(args, root, {**env, "NO_COLOR": ""})  # empty NO_COLOR is unset


def test_grep_groups_lines_under_headings_on_a_terminal(root):
    """rg's habit: on a terminal each file's path heads its lines, a blank line between
    files; --no-heading (or a pipe, test_no_color_when_piped) gives path:line:text."""
    args = ["grep", "needle_1", "src", "--color", "never"]
    got = _on_tty(args, root, {}).replace("\r\n", "\n")
    assert got == "src/m1.py\n3:def needle_1():\n\nsrc/m10.py\n3:def needle_10():\n\n" \
                  "src/m11.py\n3:def needle_11():\n"
    got = _on_tty([*args, "--no-heading"], root, {}).replace("\r\n", "\n")
    assert got == "src/m1.py:3:def needle_1():\nsrc/m10.py:3:def needle_10():\n" \
                  "src/m11.py:3:def needle_11():\n"
    coloured = _on_tty(["grep", "needle_1", "src/m1.py"], root, {})
    assert "\x1b[35msrc/m1.py\x1b[0m\r\n" in coloured  # the path alone on its line


def test_no_color_when_piped(ov_proc, root):
    r = ov_proc(["grep", "needle", "src/m1.py"], cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.code == 0 and ANSI not in r.out
    r = ov_proc(["grep", "needle", "src/m1.py", "--color", "always"], cwd=root,
                env={"OV_EMBEDDER": "hash"})
    assert ANSI in r.out


# ---- a closed pipe ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A tree whose results are far larger than a pipe's buffer (64 KiB)."""
    base = tmp_path_factory.mktemp("pipe") / "t"
    files = {f"dir{i // 100}/file_with_a_long_name_{i}.txt": f"needle {i}\n" for i in range(3000)}
    files.update({f"big{i}.md": "needle in the haystack line\n" * 4000 for i in range(6)})
    make_tree(base, files)
    index_with_hash(base)
    return base


@pytest.mark.parametrize("args", [
    ["glob", "**", "--node-limit", "100000"],
    ["glob", "**", "--node-limit", "100000", "-o", "jsonl"],
    ["glob", "**", "--node-limit", "100000", "-o", "json", "-f", "path,size"],
    ["search", "haystack", "--read-content", "-o", "json"],
    ["search", "haystack", "--read-content", "-o", "jsonl"],
    ["search", "haystack", "--mode", "context", "--max-tokens", "100000"],
    ["find", "haystack", "-n", "50", "--read-content", "-o", "jsonl"],
    ["grep", "needle", "--node-limit", "100000"],
], ids=["glob", "glob-jsonl", "glob-json", "search-json", "search-jsonl", "search-context",
        "find-jsonl", "grep"])
def test_closed_pipe_is_quiet(big, tmp_path, args):
    err = tmp_path / "err"
    cmd = " ".join(["'" + a + "'" for a in [sys.executable, "-m", "ov", *args]])
    # ov's own exit status (head's is 0 anyway); ov's stderr goes to a file
    script = f'{cmd} 2>"{err}" | head -c 1 >/dev/null; echo "${{PIPESTATUS[0]}}"'
    full = subprocess.run([sys.executable, "-m", "ov", *args], cwd=big, capture_output=True,
                          env={**os.environ, "OV_EMBEDDER": "hash"}, timeout=120)
    assert full.returncode == 0 and len(full.stdout) > 100_000  # more than the pipe holds
    p = subprocess.run(["bash", "-c", script], cwd=big, capture_output=True, text=True,
                       env={**os.environ, "OV_EMBEDDER": "hash"}, timeout=120)
    assert p.stdout.strip() == "0", (p.stdout, err.read_text())
    assert err.read_text() == ""


# ---- ranked hits in text: the best-matching line, then the excerpt -----------------------

EVIDENCE = {
    "handlers.py": "\n".join([
        "@tempdir()",
        "def callback(event):",
        '    """The handler."""',
        "    x = 1",
        "    y = 2",
        "",
        "    # nothing to see here",
        "    dispatch(event, order=plugin_order)",
        "    return x",
        "",
        "",
        "z = 3",
    ]) + "\n",
    "minified.js": "var a=1;" + "b=2;" * 200 + "plugin.order(events);" + "c=3;" * 200 + "\n",
}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    base = make_tree(tmp_path_factory.mktemp("evidence") / "t", EVIDENCE)
    index_with_hash(base)
    return base


def _hit_block(out: str, path: str) -> list[str]:
    for block in out.split("\n\n"):
        if block.startswith(path + ":"):
            return block.splitlines()
    raise AssertionError(f"no hit on {path} in {out!r}")


def test_a_hit_shows_its_best_matching_line_then_the_excerpt(ov, evidence):
    r = ov("search", "plugin events order", "--search-type", "keywords", cwd=evidence)
    assert r.code == 0, r.err
    assert ANSI not in r.out  # piped: plain
    assert _hit_block(r.out, "handlers.py") == [
        "handlers.py:8: dispatch(event, order=plugin_order)",  # not line 1's "@tempdir()"
        "     6-",
        "     7-     # nothing to see here",
        "     8:     dispatch(event, order=plugin_order)",
        "     9-     return x",
        "    10-",
        "    [excerpt: lines 1-12, 5 shown]",
    ]


def test_matched_words_are_highlighted_on_a_terminal(ov, evidence):
    r = ov("search", "plugin events order", "--search-type", "keywords", "--color", "always",
           cwd=evidence)
    head = _hit_block(r.out.replace("\x1b[35m", "").replace("\x1b[0m:", ":", 1), "handlers.py")[0]
    assert head == ("handlers.py:\x1b[32m8\x1b[0m: dispatch(\x1b[1;31mevent\x1b[0m, "
                    "\x1b[1;31morder\x1b[0m=\x1b[1;31mplugin\x1b[0m_\x1b[1;31morder\x1b[0m)")


def test_a_long_line_is_cut_around_its_match(ov, evidence):
    r = ov("search", "plugin order", "--search-type", "keywords", cwd=evidence)
    head = _hit_block(r.out, "minified.js")[0]
    text = head.split(": ", 1)[1]
    assert "plugin.order(events);" in text and len(text) <= 202
    from ov.query import query_pattern
    from ov.render import LINE_CHARS, _cut

    line = "b=2;" * 200 + "plugin.order(events);" + "c=3;" * 200
    cut = _cut(line, query_pattern("plugin order"))
    assert cut.startswith("…") and cut.endswith("…") and len(cut) == LINE_CHARS + 2
    assert "plugin.order(events);" in cut and cut[1:-1] in line


def test_explain_shows_the_scores_in_text(ov, evidence):
    r = ov("search", "plugin events order", "--explain", cwd=evidence)
    last = _hit_block(r.out, "handlers.py")[-1]
    assert last.startswith("    score ") and "keywords raw=" in last and "semantic raw=" in last


def test_read_content_shows_the_whole_file_in_text(ov, evidence):
    r = ov("search", "plugin events order", "--read-content", "--search-type", "keywords",
           cwd=evidence)
    block = _hit_block(r.out, "handlers.py")
    assert block[0] == "handlers.py:8: dispatch(event, order=plugin_order)"
    assert block[1] == "     1- @tempdir()" and block[8] == "     8:     dispatch(event, order=plugin_order)"
    assert block[-1] == "    12- z = 3"


def test_a_hit_with_no_query_word_shows_its_first_line(ov, evidence):
    from ov.query import query_pattern
    from ov.query import best_line

    assert best_line(["", "  first", "second"], query_pattern("zzz unrelated")) == 1
    assert best_line(["a events", "order and plugin", "x"], query_pattern("the plugin events order")) == 1


def test_a_label_line_is_not_the_line_shown_when_another_holds_the_words(tree, ov):
    """click's docs: "how to implement a custom parameter type" was shown by
    `parameter-types.md:1: (parameter-types)=`, a MyST target naming the title below it (a
    review of a Python tree); rst's `.. _label:` was already passed over."""
    from ov.query import query_pattern
    from ov.query import best_line

    lines = ["(parameter-types)=", "", "# Parameter Types", "", "Click supports custom types."]
    assert best_line(lines, query_pattern("custom parameter types")) == 2
    assert best_line(["(parameter-types)=", "", "nothing else"], query_pattern("parameter types")) == 0
    root = tree({"docs/parameter-types.md": "\n".join(lines) + "\n", "docs/other.md": "# Other\n\nunrelated\n"})
    assert ov("index", root).code == 0
    r = ov("search", "parameter types", "--search-type", "keywords", "-n", "1", cwd=root)
    assert r.out.startswith("docs/parameter-types.md:3: # Parameter Types"), r.out


def test_crlf_lines_are_shown_without_their_cr(ov, tree):
    root = tree({"win.txt": "first line\r\nthe needle line\r\nlast line\r\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    r = ov("search", "needle", "--search-type", "keywords", cwd=root)
    assert r.code == 0 and "\r" not in r.out
    assert r.lines[0] == "win.txt:2: the needle line"
    assert r.lines[1:4] == ["    1- first line", "    2: the needle line", "    3- last line"]


def test_query_words_match_their_forms_not_any_prefix():
    from ov.query import query_pattern

    pats = query_pattern("files priorities matches events")
    found = lambda text: sorted(m.group(0) for p in pats for m in p.finditer(text))  # noqa: E731
    assert found("a file, the filler, one priority, a match, an event_id") == \
        ["event", "file", "match", "priority"]  # a word ends at "_" too


@pytest.mark.parametrize("fmt", ["json", "jsonl", "text"])
def test_output_that_cannot_be_written_is_an_error_not_an_answer(tmp_path, fmt):
    """A full disk under `-o json > out.json`, or stdout closed: exit 2 and one line on
    stderr. It was exit 1 with a traceback, which a CI gate reads as "no match found"."""
    (tmp_path / "a.txt").write_text("kiwi\n")
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    env.pop("OV_DEBUG", None)
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "ov", "grep", "-o", fmt, "kiwi"], cwd=tmp_path, env=env,
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "ov: error[" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "ov", "grep", "-o", fmt, "kiwi"], cwd=tmp_path, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                       preexec_fn=lambda: os.close(1))
    assert p.returncode == 2 and "standard output is closed" in p.stderr, p.stderr


def test_a_notebook_hit_with_no_query_word_is_shown_at_what_its_cell_says():
    """A notebook's passage that holds none of the query's words was shown at its first
    line, `"source": [`, for hit after hit (a research tree); its cell's first line now,
    and a line holding a query word still wins."""
    from ov.query import query_pattern, shown_line

    cell = ['   "source": [', '    "# Residual plot\\n",', '    "\\n",', '    "fig = sm.qqplot(res)"', '   ]']
    assert shown_line(cell, "nb/residuals.ipynb", query_pattern("owl")) == 1
    assert shown_line(cell, "nb/residuals.ipynb", query_pattern("qqplot")) == 3
    assert shown_line(['   "outputs": [],', '   "source": []', '  },'], "x.ipynb", query_pattern("owl")) == 0
    # other files keep their first line
    assert shown_line(['"source": [', "x"], "data.json", query_pattern("owl")) == 0
