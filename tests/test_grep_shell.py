"""grep and glob as a shell user meets them (issue 18): no silent limits, paths relative
to the current folder, rg's flags checked against rg itself on the same fixture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="rg (ripgrep) is not installed")

DEEP = "/".join(f"d{i}" for i in range(12))  # twelve folders down: past the old cut of 10
FILES = {
    "a.txt": "alpha needle\nbeta\nNeedle gamma\n",
    "b.txt": "needle one\nneedle two\nneedle three\nplain\n",
    "sub/c.txt": "no match here\nneedle in sub\n",
    "sub/deeper/d.txt": "needle deep\n",
    f"{DEEP}/deepest.txt": "DEEPEST_MARKER needle\n",
    "bin.dat": b"needle\x00binary\nneedle again\n",
    ".gitignore": "ignored.txt\n",
    "ignored.txt": "needle ignored\n",
}


@pytest.fixture
def t(tree):
    root = tree(FILES)
    (root / ".git").mkdir(exist_ok=True)  # rg reads .gitignore only in a git tree
    return root


def rg(root, *args) -> subprocess.CompletedProcess:
    return subprocess.run([RG, "--no-config", *args], cwd=root, capture_output=True, text=True)


# -- no silent limits ----------------------------------------------------------------------
def test_no_depth_cut_by_default(ov, t):
    r = ov("grep", "-l", "DEEPEST_MARKER", cwd=t)
    assert r.code == 0 and r.out == f"{DEEP}/deepest.txt\n"
    assert ov("glob", "**/deepest.txt", cwd=t).out == f"{DEEP}/deepest.txt\n"


def test_level_limit_cut_is_reported_in_every_format(ov, t):
    r = ov("grep", "--json", "--level-limit", "3", "DEEPEST_MARKER", cwd=t)
    res = r.json["result"]
    assert r.code == 1 and res["truncated"] is True and res["truncated_reason"] == "level_limit"
    r = ov("grep", "-o", "jsonl", "--level-limit", "3", "needle", cwd=t)
    last = r.jsonl[-1]
    assert last["type"] == "summary" and last["truncated_reason"] == "level_limit"
    assert all("type" not in rec for rec in r.jsonl[:-1])
    r = ov("grep", "--level-limit", "3", "needle", cwd=t)
    assert "--level-limit left deeper folders unsearched" in r.err
    assert r.out.count("\n") == 6  # the data itself is whole down to the cut
    r = ov("glob", "--json", "--level-limit", "2", "**/*.txt", cwd=t)
    assert r.json["result"]["truncated_reason"] == "level_limit"
    r = ov("glob", "--level-limit", "2", "**/*.txt", cwd=t)
    assert "--level-limit left deeper folders" in r.err


def test_a_pattern_depth_is_no_cut(ov, t):
    # `*.txt` needs one level only: the walk's bound is the pattern's, not a cut
    r = ov("glob", "--json", "*.txt", cwd=t)
    assert r.json["result"]["truncated"] is False
    assert "truncated_reason" not in r.json["result"]


def test_node_limit_cut_is_reported_in_every_format(ov, t):
    r = ov("grep", "--json", "--node-limit", "2", "needle", cwd=t)
    res = r.json["result"]
    assert res["truncated"] is True and res["truncated_reason"] == "node_limit"
    assert len(res["matches"]) == 2
    r = ov("grep", "-o", "jsonl", "--node-limit", "2", "needle", cwd=t)
    assert len(r.jsonl) == 3 and r.jsonl[-1]["type"] == "summary"
    assert r.jsonl[-1]["truncated_reason"] == "node_limit" and r.jsonl[-1]["count"] == 2
    r = ov("grep", "--node-limit", "2", "needle", cwd=t)
    assert len(r.lines) == 2 and "stopped at --node-limit 2" in r.err and "--node-limit N" in r.err
    r = ov("glob", "-o", "jsonl", "--node-limit", "1", "**/*.txt", cwd=t)
    assert r.jsonl[-1]["type"] == "summary" and r.jsonl[-1]["truncated_reason"] == "node_limit"
    # no cut and no warning: no summary record, no note
    r = ov("grep", "-o", "jsonl", "beta", cwd=t)
    assert [rec.get("type") for rec in r.jsonl] == [None] and r.err == ""
    # a warning (a PATH that does not exist) reached stderr alone: JSON Lines ends with a
    # summary that carries it, as JSON carries it among its warnings
    r = ov("grep", "-o", "jsonl", "beta", "a.txt", "nowhere.txt", cwd=t)
    assert r.code == 2 and r.jsonl[-1]["type"] == "summary" and r.jsonl[-1]["truncated"] is False, r.out
    assert r.jsonl[-1]["warnings"] and "nowhere.txt" in r.jsonl[-1]["warnings"][0]
    assert r.jsonl[0]["path"] == "a.txt"


# -- paths relative to the current folder ---------------------------------------------------
def test_paths_from_a_subfolder_feed_xargs(t):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    sub = t / "sub"
    p = subprocess.run(f"{sys.executable} -m ov grep -l needle | xargs ls", shell=True, cwd=sub,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.split() == ["c.txt", "deeper/d.txt"]
    p = subprocess.run(f"{sys.executable} -m ov grep -l -0 needle .. | xargs -0 ls", shell=True,
                       cwd=sub, capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "../a.txt" in p.stdout.split() and "c.txt" in p.stdout.split()


def test_json_names_the_root_once_and_paths_are_relative(ov, t):
    r = ov("grep", "--json", "needle in sub", "..", cwd=t / "sub" / "deeper")
    res = r.json["result"]
    assert res["root"] == str(t) and [m["path"] for m in res["matches"]] == ["../c.txt"]


def test_a_folder_outside_the_tree_gets_the_same_answer(ov, t, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "x.txt").write_text("needle far away\n")
    (t / ".ov").mkdir()
    (t / ".ov" / "index.db").write_bytes(b"")  # an index root at t
    r = ov("grep", "--json", "--no-index", "needle", str(other), cwd=t)  # absolute, as given (rg, fd)
    assert [(m["path"], m["line"]) for m in r.json["result"]["matches"]] == [(f"{other}/x.txt", 1)]
    assert ov("glob", "*.txt", str(other), cwd=t).out == f"{other}/x.txt\n"
    r = ov("grep", "--json", "--no-index", "needle", "../elsewhere", cwd=t)
    assert [(m["path"], m["line"]) for m in r.json["result"]["matches"]] == [("../elsewhere/x.txt", 1)]
    assert ov("glob", "*.txt", "../elsewhere", cwd=t).out == "../elsewhere/x.txt\n"


# -- rg's flags, against rg ----------------------------------------------------------------
def _lines(text: str) -> list[str]:
    return sorted(text.splitlines())


@needs_rg
@pytest.mark.parametrize("flags", [
    ["-v", "needle"], ["-e", "alpha", "-e", "plain"], ["-m", "1", "needle"],
    ["-S", "needle"], ["-S", "Needle"], ["-i", "-s", "needle"], ["-F", "-e", "a.b", "-e", "one"],
    ["-c", "-v", "needle"], ["-m", "2", "-c", "needle"], ["-m", "0", "needle"], ["-c", "-m", "0", "needle"],
    ["-q", "-m", "0", "needle"], ["-q", "-m", "1", "needle"],
    # inverted, by patterns matching many times a line (each line's first match is enough:
    # `-v .` visited every character's match), and matching empty
    ["-v", "."], ["-v", "-c", "."], ["-v", "e"], ["-v", "e+"], ["-v", "^\\s*$"], ["-v", "x*"],
])
def test_flag_lines_as_rg(ov, t, flags):
    ours = ov("grep", *flags, cwd=t)
    theirs = rg(t, "-n", "--with-filename", *flags)
    assert ours.code == theirs.returncode
    assert _lines(ours.out) == _lines(theirs.stdout)


@needs_rg
def test_files_sort_null_quiet_and_filename_as_rg(ov, t):
    assert ov("grep", "--files", cwd=t).out == rg(t, "--files", "--sort", "path").stdout
    assert ov("grep", "--files", "sub", cwd=t).out == rg(t, "--files", "--sort", "path", "sub").stdout
    assert ov("grep", "-l", "-0", "--sort", "path", "needle", cwd=t).out == \
        rg(t, "-l", "-0", "--sort", "path", "needle").stdout
    for pat in ("needle", "nothing-at-all"):
        q = ov("grep", "-q", pat, cwd=t)
        assert (q.code, q.out) == (rg(t, "-q", pat).returncode, "")
    # --no-filename: rg numbers lines only on a terminal; ov always does (README table)
    ours = [ln.split(":", 1)[1] for ln in ov("grep", "--no-filename", "needle", "b.txt", cwd=t).lines]
    assert ours == rg(t, "--no-filename", "needle", "b.txt").stdout.splitlines()
    assert ov("grep", "-H", "plain", "b.txt", cwd=t).out == rg(t, "-H", "-n", "plain", "b.txt").stdout
    r = ov("grep", "--sort", "modified", "x", cwd=t)
    assert r.code == 2 and "only `path`" in r.err


@needs_rg
def test_binary_file_named_explicitly_as_rg(ov, t):
    theirs = rg(t, "needle", "bin.dat", "a.txt")
    ours = ov("grep", "needle", "bin.dat", "a.txt", cwd=t)
    assert ours.code == theirs.returncode == 0
    note = [ln for ln in theirs.stdout.splitlines() if "binary file matches" in ln]
    assert note and note[0] in ours.out.splitlines()
    # found by the walk, a binary file is skipped as rg skips it
    assert "bin.dat" not in ov("grep", "-l", "needle", cwd=t).out


@needs_rg
def test_follow_and_type_list(ov, t):
    os.symlink(t / "sub", t / "link")
    assert ov("grep", "-l", "needle in sub", cwd=t).out == "sub/c.txt\n"
    got = ov("grep", "-L", "-l", "needle in sub", cwd=t).out
    assert _lines(got) == _lines(rg(t, "-L", "-l", "needle in sub").stdout)
    r = ov("grep", "--type-list", cwd=t)
    assert r.code == 0 and any(ln.startswith("py: ") for ln in r.lines)
    # with -o json / jsonl it is data, not the text listing (which no JSON reader takes)
    r = ov("grep", "--type-list", "-o", "json", cwd=t)
    assert r.code == 0 and "*.py" in r.json["result"]["types"]["py"]
    recs = [json.loads(ln) for ln in ov("grep", "--type-list", "-o", "jsonl", cwd=t).out.splitlines()]
    assert {"type": "py", "globs": r.json["result"]["types"]["py"]} in recs


# ripgrep 13's default type names (`rg --type-list`): each is a `-t` name ov takes too
RG13_TYPES = """agda aidl amake asciidoc asm asp ats avro awk bazel bitbake brotli buildstream bzip2 c cabal cbor
ceylon clojure cmake coffeescript config coq cpp creole crystal cs csharp cshtml css csv cython d dart dhall diff
docker dvc ebuild edn elisp elixir elm erb erlang fidl fish flatbuffers fortran fsharp fut gap gn go gradle groovy
gzip h haml haskell hbs hs html idris java jinja jl js json jsonl julia jupyter k kotlin less license lisp lock log
lua lz4 lzma m4 make mako man markdown matlab md meson minified mint mk ml msbuild nim nix objc objcpp ocaml org
pascal pdf perl php po pod postscript protobuf ps puppet purs py qmake qml r racket rdoc readme red robot rst ruby
rust sass scala sh slim smarty sml soy spark spec sql stylus sv svg swift swig systemd taskpaper tcl tex textile tf
thrift toml ts twig txt typoscript vala vb vcl verilog vhdl vim vimscript webidl wiki xml xz yacc yaml yang z zig
zsh zstd""".split()


def test_every_rg_type_name_is_an_ov_type():
    from ov.kinds import TYPES

    assert [n for n in RG13_TYPES if n not in TYPES] == []


@needs_rg
def test_types_ov_took_from_rg_select_the_files_rg_selects(ov, tree):
    """The names ov took from rg, and rg's globs ov's older names had lacked (`*.PL`,
    `*.csh`, `*.h.in`, `GPL-*`): `ov grep -l -t` selects what `rg -l -t` does."""
    names = ["build.gradle", "settings.gradle.kts", "Cargo.lock", "yarn.lock", "package-lock.json", "init.vim",
             "x.groovy", "Foo.m", "README", "xREADME", "README.md", "ls.1", "x.8p", "x.min.js", "x.js", "x.tsx",
             # rg's globs of ov's older types that ov had lacked
             "Makefile.PL", "x.plx", "login.csh", "bashrc", "config.h.in", "x.hpp.in", "x.H", "GPL-3.0", "x.hsc"]
    root = tree({n: "needle\n" for n in names})
    (root / ".git").mkdir(exist_ok=True)
    known = {ln.split(":", 1)[0] for ln in rg(root, "--type-list").stdout.splitlines()}
    for name in ("gradle", "lock", "vim", "groovy", "objc", "readme", "man", "minified", "perl", "sh", "c", "cpp",
                 "license", "haskell"):
        if name not in known:  # (a ripgrep without it)
            continue
        ours = ov("grep", "-l", "-t", name, "needle", cwd=root)
        assert _lines(ours.out) == _lines(rg(root, "-l", "-t", name, "needle").stdout), name
        assert ours.out, name  # every name here has a file in the tree


@needs_rg
@pytest.mark.parametrize("flags", [["-T", "js"], ["-t", "c", "-T", "h"], ["-T", "h", "-t", "c"],
                                   ["-t", "cpp", "-T", "h"], ["-T", "js", "-T", "txt"]])
def test_type_not_leaves_out_what_rg_leaves_out(ov, tree, flags):
    root = tree({n: "needle\n" for n in ("a.c", "b.h", "c.js", "d.hpp", "e.txt", "sub/f.js", "sub/g.py")})
    (root / ".git").mkdir(exist_ok=True)
    theirs = rg(root, "-l", *flags, "needle")
    ours = ov("grep", "-l", *flags, "needle", cwd=root)
    assert (ours.code, _lines(ours.out)) == (theirs.returncode, _lines(theirs.stdout)), flags
    files = ov("grep", "--files", *flags, "--json", cwd=root)
    assert sorted(files.json["result"]["paths"]) == _lines(rg(root, "--files", *flags).stdout)
    if ours.code == 2:  # rg: "No files were searched"; ov says which flags
        assert "-T" in ours.err


def test_type_not_takes_the_names_t_takes(ov, tree):
    root = tree({"a.py": "needle\n", "b.md": "needle\n"})
    assert ov("grep", "-l", "-T", "markdown", "needle", cwd=root).out == "a.py\n"
    assert ov("grep", "-l", "-T", ".md", "needle", cwd=root).out == "a.py\n"  # an extension, as -t takes one
    root = tree({n: "needle\n" for n in ("a.c", "b.h", "c.js")}, "second")
    assert ov("grep", "-l", "-t", "c", "-T", "h", "needle", cwd=root).out == "a.c\n"  # -T wins, in any order
    assert ov("grep", "-l", "-T", "h", "-t", "c", "needle", cwd=root).out == "a.c\n"
    r = ov("grep", "--json", "-T", "nosuchtype", "needle", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument" and "nosuchtype" in r.json["error"]["message"]
    assert r.json["error"]["field"] == "type_not"


def test_quiet_and_files_in_json(ov, t):
    r = ov("grep", "--json", "--files", "sub", cwd=t)
    assert r.json["result"]["paths"] == ["sub/c.txt", "sub/deeper/d.txt"]
    assert json.loads(r.out)["status"] == "ok"


# -- grouped headings (rg's habit on a terminal) ------------------------------------------
@needs_rg
@pytest.mark.parametrize("flags", [[], ["-C", "1"], ["-0"], ["--no-filename"], ["-c"], ["-l"],
                                   ["-v", "needle"]], ids=str)
def test_heading_as_rg(ov, t, flags):
    args = [*flags, "needle"] if "-v" not in flags else flags
    ours = ov("grep", "--heading", *args, cwd=t)
    theirs = rg(t, "--heading", "-n", "--sort", "path", *args)
    assert ours.code == theirs.returncode == 0
    assert ours.out == theirs.stdout


def test_no_heading_when_piped_and_no_heading_wins(ov, t):
    plain = ov("grep", "needle", "b.txt", "sub", cwd=t).out
    assert plain == ("b.txt:1:needle one\nb.txt:2:needle two\nb.txt:3:needle three\n"
                     "sub/c.txt:2:needle in sub\nsub/deeper/d.txt:1:needle deep\n")
    assert ov("grep", "--no-heading", "needle", "b.txt", "sub", cwd=t).out == plain
    assert ov("grep", "--heading", "needle", "b.txt", "sub", cwd=t).out == (
        "b.txt\n1:needle one\n2:needle two\n3:needle three\n\nsub/c.txt\n2:needle in sub\n\n"
        "sub/deeper/d.txt\n1:needle deep\n")
    # the heading is text output's: JSON stays one record per match
    r = ov("grep", "--heading", "--json", "needle", "b.txt", cwd=t)
    assert [m["path"] for m in r.json["result"]["matches"]] == ["b.txt"] * 3


# -- findings of a new user's review, each checked against rg ------------------------------
BINS = {"a.bin": b"needle one\n\x00binary\n", "b.bin": b"x\x00y needle\n",
        "c.bin": b"needle\nneedle\n\x00needle\x00needle\n", "d.bin": b"xa\x00by\n",
        "e.bin": b"nothing\x00here\n"}


@needs_rg
@pytest.mark.parametrize("flags", [[], ["-l"], ["-c"], ["-c", "-v"], ["-c", "-m", "1"]], ids=str)
def test_named_binary_files_count_with_l_and_c_as_rg(ov, tree, flags):
    t = tree(BINS)
    names = sorted(BINS)
    for pat in ("needle", "a.b", "a$"):  # a NUL is a character of its line, as in rg
        ours = ov("grep", *flags, pat, *names, cwd=t)
        theirs = rg(t, "--sort", "path", *flags, pat, *names)
        assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout), pat
        if flags:  # the notice is the line mode's alone
            assert "binary file matches" not in ours.out + ours.err


@needs_rg
def test_named_binary_file_json_lists_its_lines_as_rg_json(ov, tree):
    """Named explicitly, a matching binary file's lines are JSON records, as `rg --json`
    lists them (past the NUL too): `count` had said 0 of a file that matched, exit 0.
    Text output keeps rg's "binary file matches"."""
    t = tree(BINS)
    theirs = subprocess.run([RG, "--no-config", "--json", "needle", "c.bin", "a.bin"], cwd=t,
                            capture_output=True, text=True).stdout
    rg_lines = sorted((json.loads(ln)["data"]["path"]["text"], json.loads(ln)["data"]["line_number"])
                      for ln in theirs.splitlines() if json.loads(ln)["type"] == "match")
    res = ov("grep", "--json", "needle", "a.bin", "c.bin", cwd=t).json["result"]
    assert [(m["path"], m["line"]) for m in res["matches"]] == rg_lines == \
        [("a.bin", 1), ("c.bin", 1), ("c.bin", 2), ("c.bin", 3)]
    assert res["count"] == 4 and res["files"] == 2 and res["warnings"] == []
    assert res["matches"][-1]["content"] == "\x00needle\x00needle"
    counts = ov("grep", "-c", "--json", "needle", "a.bin", "c.bin", cwd=t).json["result"]["counts"]
    assert counts == {"a.bin": 1, "c.bin": 3}
    r = ov("grep", "-o", "jsonl", "needle", "a.bin", cwd=t)
    assert r.code == 0 and [rec["line"] for rec in r.jsonl] == [1]
    assert ov("grep", "--json", "needle", "e.bin", cwd=t).code == 1
    assert "binary file matches" in ov("grep", "needle", "a.bin", cwd=t).out


def test_named_binary_file_quiet_and_json_agree_with_the_exit_code(ov, tree):
    t = tree(BINS)
    assert ov("grep", "-q", "needle", "a.bin", cwd=t).code == 0
    assert ov("grep", "-q", "needle", "e.bin", cwd=t).code == 1
    r = ov("grep", "-l", "--json", "needle", "a.bin", "b.bin", "e.bin", cwd=t)
    res = r.json["result"]
    assert r.code == 0 and res["paths"] == ["a.bin", "b.bin"]
    assert res["count"] == res["files"] == 2 and res["warnings"] == []
    r = ov("grep", "-c", "--json", "needle", "c.bin", cwd=t)
    assert r.code == 0 and r.json["result"]["counts"] == {"c.bin": 3}
    # line mode keeps rg's notice in place of the lines
    r = ov("grep", "needle", "a.bin", cwd=t)
    assert (r.code, r.out) == (0, 'a.bin: binary file matches (found "\\0" byte around offset 11)\n')


def test_the_api_cuts_no_depth_by_default_as_the_cli(ov, t):
    import ov as api

    found, st = api.grep("DEEPEST_MARKER", cwd=t, mode="files")
    assert [r.path for r in found] == [f"{DEEP}/deepest.txt"]
    assert not st.truncated and not st.level_cut
    assert f"{DEEP}/deepest.txt" in list(api.files(cwd=t)[0])
    res = api.glob("**/deepest.txt", cwd=t)
    assert res.matches == [f"{DEEP}/deepest.txt"] and not res.truncated
    assert ov("grep", "-l", "DEEPEST_MARKER", cwd=t).out == f"{DEEP}/deepest.txt\n"
    # what the manifest says of the depth is what grep and glob do
    m = ov("manifest", "--json", cwd=t).json["result"]
    assert m["limits"]["level_limit"] is None
    assert "level limit none" in ov("manifest", cwd=t).out


def test_files_escapes_control_characters_in_text_and_its_json_counts(ov, tree):
    t = tree({"evil\x1b[31mred.txt": "hi\n", "new\nline.txt": "hi\n", "plain.txt": "hi\n"})
    escaped = "evil\\x1b[31mred.txt\nnew\\x0aline.txt\nplain.txt\n"
    assert ov("grep", "--files", cwd=t).out == escaped
    assert ov("grep", "-l", "hi", cwd=t).out == escaped  # as -l and glob print them
    assert ov("glob", "*", cwd=t).out == escaped
    # -0 is for xargs -0: the names as they are, as rg prints them
    assert ov("grep", "--files", "-0", cwd=t).out == \
        "evil\x1b[31mred.txt\0new\nline.txt\0plain.txt\0"
    # the JSON of --files has the shape of -l's: the same paths, counts and root
    files = ov("grep", "--files", "--json", cwd=t).json["result"]
    listed = ov("grep", "-l", "--json", "hi", cwd=t).json["result"]
    for key in ("paths", "count", "files", "root", "truncated"):
        assert files[key] == listed[key], key
    assert files["count"] == files["files"] == 3 and files["paths"][1] == "new\nline.txt"
    cut = ov("grep", "--files", "--json", "--node-limit", "1", cwd=t).json["result"]
    assert cut["truncated"] is True and cut["truncated_reason"] == "node_limit"
    assert cut["files"] == cut["count"] == 1


@needs_rg
@pytest.mark.parametrize("flags", [[], ["--heading"], ["-C", "1"], ["-0"]], ids=str)
def test_multiline_match_prefixes_each_of_its_lines_as_rg(ov, tree, flags):
    t = tree({"rep.txt": "foo\nbar\nfoo\nbaz\nx foo\nbar y foo\nbar\n", "s.txt": "a\nfoo\nbar\n"})
    for pat in (r"foo\nbar", r"o\n", r"foo\nbar\n\w"):
        ours = ov("grep", "-U", *flags, pat, cwd=t)
        theirs = rg(t, "-U", "-n", "-H", "--sort", "path", *flags, pat)
        assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout), pat


def test_multiline_match_highlights_each_lines_share(ov, tree):
    t = tree({"rep.txt": "x foo\nbar y\n"})
    r = ov("grep", "-U", "--color", "always", "--no-heading", r"foo\nbar", cwd=t)
    bold, reset = "\x1b[1;31m", "\x1b[0m"
    lines = r.out.splitlines()
    assert len(lines) == 2 and lines[0].endswith(f":x {bold}foo{reset}")
    assert lines[1].endswith(f":{bold}bar{reset} y") and "\x1b[32m2\x1b[0m" in lines[1]


IGNORED = {".gitignore": "*.log\nbuild/\n", "x.log": "foo log\n", "y.txt": "foo txt\n",
           "build/b.txt": "foo b\n", "build/b.log": "foo blog\n", "docs/.gitignore": "ignored.md\n",
           "docs/ignored.md": "foo md\n", "docs/ok.md": "foo ok\n", "sub/s.log": "foo sublog\n",
           ".hid.log": "foo hidden\n"}


@needs_rg
@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed"])
def test_an_include_glob_overrides_ignore_files_as_rg(ov, tree, indexed):
    t = tree(IGNORED)
    (t / ".git").mkdir(exist_ok=True)
    if indexed:  # the listing kept beside an index holds only what the ignore files keep
        assert ov("index", "--no-embed", cwd=t).code == 0
    for globs in (["*.log"], ["docs/ignored.md"], ["*.md"], ["*"], ["build/**"], ["build/*"],
                  ["*.log", "!x.log"], ["!y.txt"], ["sub"]):
        flags = [a for g in globs for a in ("-g", g)]
        theirs = rg(t, "--sort", "path", "-l", *flags, "foo")
        ours = ov("grep", "-l", *flags, "foo", cwd=t)
        # both exit 2 when no file was searched at all (`build/**`); ov never lists its own .ov/
        assert (ours.code, ours.out) == (theirs.returncode, _own(theirs.stdout)), globs
        files = ov("grep", "--files", *flags, cwd=t).out
        assert files == _own(rg(t, "--sort", "path", "--files", *flags).stdout), globs
    # without -g the ignore files hold
    assert ov("grep", "-l", "foo", cwd=t).out == "docs/ok.md\ny.txt\n"


@needs_rg
@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed"])
def test_gitignore_outside_git_is_not_read_as_rg(ov, tree, indexed):
    """A tree that is not a git work tree (a tarball, a copied folder): rg reads no
    `.gitignore` there and `.ignore` everywhere; ov the same, walked or indexed."""
    t = tree({**IGNORED, ".ignore": "sub/\n"})
    (t / ".git").rmdir()
    if indexed:
        assert ov("index", "--no-embed", cwd=t).code == 0
    theirs = rg(t, "--sort", "path", "-l", "foo")
    ours = ov("grep", "-l", "foo", cwd=t)
    assert (ours.code, ours.out) == (theirs.returncode, _own(theirs.stdout))
    assert "x.log" in ours.out and "build/b.txt" in ours.out and "sub/s.log" not in ours.out
    assert ov("grep", "--files", cwd=t).out == _own(rg(t, "--sort", "path", "--files").stdout)


def _own(listing: str) -> str:
    return "".join(ln for ln in listing.splitlines(keepends=True) if not ln.startswith(".ov/"))


def test_help_says_a_path_may_lie_outside_the_search_root(ov, t, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "o.txt").write_text("needle outside\n")
    for cmd in ("grep", "glob"):
        text = " ".join(ov(cmd, "--help", cwd=t).out.split())
        assert "must lie inside" not in text and "A PATH may lie anywhere" in text
        assert "Output paths are relative to the current folder" in text
        assert "under a PATH given absolute, absolute" in text
    # what the help says: a PATH above the current folder, or outside the tree, is searched
    assert ov("grep", "-l", "needle", "../a.txt", cwd=t / "sub").out == "../a.txt\n"
    r = ov("grep", "-l", "needle", str(outside), cwd=t)
    assert r.code == 0 and r.out == f"{outside}/o.txt\n"
    assert ov("glob", "*.txt", "..", cwd=t / "sub").out == "../a.txt\n../b.txt\n"


@needs_rg
@pytest.mark.parametrize("pattern", [
    "[a-z&&[^aeiou]]{9}", "^[a[bc]]+$", "[a-z--[aeiou]]+", "[a~~b]", "[[:alpha:]&&[^b]]+",
    "[x[|]]", "[]a]", "[^]a]", "[[:alpha:]]+", "[[a]-z]", "[[:^alpha:]]", "^[[:alnum:]_]+$",
    "[[:word:]&&[^a-z]]+", "[[:punct:]]", "[[:upper:]]", "[[:space:]]x",
    # `-`s first in a class are characters; an operator's empty operand is the empty set
    "[--a]", "[^--a]", "[--a-c]", "[---]", "[a--]", "[a~~]", "[a-z--]", "[~~a]", "[[:alpha:]--a]",
    # operators apply left to right; `]-` first is two characters; `[:` opening no POSIX
    # class is a nested class
    "[a-c~~b--b]", "[^a-c--b&&c]", "[a-d--b--c]", "[]-a]", "[^]-a]", "[[]-b]]", "[]-]",
    "[[:]]", "[[:alpha]]", "[[:foo:]]", "[:alpha:]", "[[:alpha:][:digit:]]",
    # a first `-`, `]` or `[:` belongs to the left operand of chained operators
    "[-ab&&b--x]", "[]ab&&a--x]", "[[:ab&&a--x]]", "[^-ab&&b--x]", "[^--&&\\[\\d--]",
    # a `[` that ends a range is the character, not a nested class
    "[!-[x]]", "[!-[]",
    # `[^^`: the second caret is the character, also as a nested left operand
    "[^^x&&a--b]", "[^^a~~b--c]", "[a[^^x&&a--b]]", "[^^a]"])
@pytest.mark.parametrize("case", [[], ["-i"]])
def test_nested_classes_and_set_operations_as_rg(ov, tree, pattern, case):
    """ripgrep's classes nest and take `&&`, `--` and `~~`; read as literal characters
    (regex V0) they matched other lines, or none, without an error. Its POSIX classes are
    ASCII only (regex's took é and Δ for letters)."""
    t = tree({"t.txt": "bcdfghjklm\nabc\nb]\nA|\nxyz[\nk\n-\né\nΔelta\n_x\n9\n a x\n^\n:\n&\nd\n"})
    ours = ov("grep", *case, "-e", pattern, cwd=t)
    theirs = rg(t, "-n", "--with-filename", *case, "-e", pattern)
    assert (ours.code, _lines(ours.out)) == (theirs.returncode, _lines(theirs.stdout)), pattern


@pytest.mark.parametrize("pattern", ["[&&]", "[a&&b]", "[&&a]", "[a&&]", "[&&&]", "[a&&&&b]", "[-&&a]", "[b--b]"])
def test_a_class_that_holds_no_character_matches_nothing(ov, tree, pattern):
    """An intersection with nothing is the empty set (rg 14 matches nothing; rg 13 refuses
    the pattern). `[&&]` was read as the two characters and matched `&&`; `[a&&]` and
    `[&&&]` were refused as unterminated."""
    t = tree({"t.txt": "&&\na\nb\n-\n&\n"})
    r = ov("grep", "-e", pattern, cwd=t)
    assert (r.code, r.out, r.err) == (1, "", ""), pattern


@needs_rg
@pytest.mark.parametrize("flags", [["-n", "needle"], ["-c", "needle"], ["-n", "^needle"], ["-l", "wörld"]],
                         ids=str)
def test_utf16_with_a_bom_is_text_as_rg(ov, tree, flags):
    """rg reads a file that starts with a UTF-16 byte order mark as text (transcoded, the
    mark dropped); ov read it as binary (its NULs), and a 64 KiB head at most. With an
    index too: the index skips such a file, and grep must still search it."""
    t = tree({"u8bom.txt": "\ufeffneedle after a UTF-8 mark\n"})
    (t / "le.txt").write_bytes("\ufeffhello wörld\nsecond line needle\n".encode("utf-16-le"))
    (t / "be.txt").write_bytes("\ufeffneedle in big-endian\n".encode("utf-16-be"))
    (t / "nobom.txt").write_bytes("needle without a mark\n".encode("utf-16-le"))  # binary, as rg
    (t / "long.txt").write_bytes(("\ufeff" + "filler line\n" * 20000 + "needle far down\n").encode("utf-16-le"))
    theirs = rg(t, "--with-filename", *flags)
    for index in (False, True):
        if index:
            assert ov("index", ".", "--no-embed", cwd=t).code == 0
        ours = ov("grep", *flags, cwd=t)
        assert (ours.code, _lines(ours.out)) == (theirs.returncode, _lines(theirs.stdout)), index


@needs_rg
@pytest.mark.parametrize("io", ["utf-8:strict", "utf-8:surrogateescape"])
def test_a_name_that_is_not_utf8_is_printed_as_rg_prints_it(tree, io):
    """On a UTF-8 locale (a strict stdout) one such name made grep and glob exit 2 with
    nothing printed; in the C locale their JSON held raw bytes no JSON reader takes. Text
    now carries the name's bytes as rg prints them; JSON is valid UTF-8, the bytes as
    \\udcXX escapes that Python's json reads back."""
    t = tree({"ok.txt": "needle\n"})
    (t / os.fsdecode(b"bad\xffname.txt")).write_bytes(b"needle\n")
    env = {**os.environ, "PYTHONIOENCODING": io, "OV_EMBEDDER": "hash"}

    def ov(*args):
        return subprocess.run([sys.executable, "-m", "ov", *args], cwd=t, env=env, capture_output=True)

    r = ov("grep", "needle")
    theirs = subprocess.run([RG, "--sort", "path", "--with-filename", "-n", "needle"], cwd=t,
                            capture_output=True)
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, sorted(theirs.stdout.splitlines())), r.stderr
    r = ov("glob", "*.txt")
    assert r.returncode == 0 and sorted(r.stdout.splitlines()) == [b"bad\xffname.txt", b"ok.txt"], r.stderr
    for args, key in ((["grep", "needle", "-o", "json"], "matches"), (["glob", "*.txt", "-o", "json"], "matches"),
                      (["grep", "-l", "needle", "-o", "json"], "paths")):
        r = ov(*args)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout.decode("utf-8"))["result"][key]  # strict: valid UTF-8
        names = sorted(os.fsencode(g if isinstance(g, str) else g["path"]) for g in got)
        assert names == [b"bad\xffname.txt", b"ok.txt"], args
    r = ov("grep", "needle", "-o", "jsonl")
    lines = [json.loads(ln.decode("utf-8")) for ln in r.stdout.splitlines()]
    assert sorted(os.fsencode(d["path"]) for d in lines if "path" in d) == [b"bad\xffname.txt", b"ok.txt"]


@needs_rg
def test_an_index_in_a_subfolder_of_a_repository_keeps_the_repositorys_ignore_rules(tmp_path):
    """`ov index` in a subfolder of a git repository makes its index there; grep
    and glob then took that folder for the top and dropped the ignore files above it (git's
    .gitignore, .git/info/exclude), listing git-ignored files, and the index held them. The
    ignore files above the root, up to the work tree's top, apply as rg applies them."""
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    (repo / ".git" / "info" / "exclude").write_text("*.tmp\n")
    (repo / ".gitignore").write_text("*.log\nsub/gen/\n")
    files = {"sub/debug.log": "needle in log\n", "sub/a.md": "needle in md\n", "sub/gen/g.txt": "needle gen\n",
             "sub/x.tmp": "needle tmp\n", "sub/deep/b.md": "needle deep\n", "sub/deep/c.log": "needle\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    sub = repo / "sub"
    env = {**os.environ, "OV_EMBEDDER": "hash"}

    def ov(*args):
        return subprocess.run([sys.executable, "-m", "ov", *args], cwd=sub, env=env, capture_output=True, text=True)

    want = sorted(rg(sub, "-l", "needle").stdout.splitlines())
    assert want == ["a.md", "deep/b.md"]
    assert sorted(ov("grep", "-l", "needle").stdout.splitlines()) == want
    assert ov("index", "--no-embed").returncode == 0
    assert (sub / ".ov").is_dir()
    for args in (["grep", "-l", "needle"], ["grep", "--no-index", "-l", "needle"]):
        assert sorted(ov(*args).stdout.splitlines()) == want, args
    assert sorted(ov("glob", "**/*.*").stdout.splitlines()) == want
    r = ov("status", "-o", "json")
    assert json.loads(r.stdout)["result"]["files"] == 2, r.stdout  # the index holds no ignored file
    (repo / ".gitignore").write_text("*.log\n")  # a change above the root is seen
    assert sorted(ov("grep", "-l", "needle").stdout.splitlines()) == ["a.md", "deep/b.md", "gen/g.txt"]


@needs_rg
def test_a_repository_inside_the_tree_keeps_its_own_git_exclude(tmp_path):
    """rg reads the .git/info/exclude of a repository nested in the tree for its files;
    ov read only the root's (or its work tree top's). The listing cache watches it too."""
    inner = tmp_path / "n" / "inner"
    (inner / ".git" / "info").mkdir(parents=True)
    (inner / ".git" / "info" / "exclude").write_text("q.txt\n")
    for name in ("q.txt", "k.txt"):
        (inner / name).write_text("hello\n")
    root = tmp_path / "n"
    env = {**os.environ, "OV_EMBEDDER": "hash"}

    def ov(*args):
        return subprocess.run([sys.executable, "-m", "ov", *args], cwd=root, env=env, capture_output=True, text=True)

    want = sorted(rg(root, "-l", "hello").stdout.splitlines())
    assert want == ["inner/k.txt"]
    assert sorted(ov("grep", "-l", "hello").stdout.splitlines()) == want
    assert ov("index", ".", "--no-embed").returncode == 0
    assert sorted(ov("grep", "-l", "hello").stdout.splitlines()) == want
    assert json.loads(ov("status", "-o", "json").stdout)["result"]["files"] == 1
    (inner / ".git" / "info" / "exclude").write_text("")
    assert sorted(ov("grep", "-l", "hello").stdout.splitlines()) == ["inner/k.txt", "inner/q.txt"]


@needs_rg
def test_ignore_files_of_every_parent_folder_apply_as_rg_reads_them(tmp_path):
    """rg reads `.ignore` in every folder above the search root, and `.gitignore` only up
    to the git work tree's top; ov read none above a work tree's top, nor any outside git."""
    outer = tmp_path / "t"
    (outer / "repo" / "sub").mkdir(parents=True)
    (outer / ".ignore").write_text("r.txt\n")
    (outer / ".gitignore").write_text("q.txt\n")  # above the work tree: not read (rg neither)
    (outer / "repo" / ".git").mkdir(exist_ok=True)
    for name in ("q.txt", "r.txt", "s.txt"):
        (outer / "repo" / "sub" / name).write_text("hello\n")
    plain = tmp_path / "p" / "sub"  # no git anywhere
    plain.mkdir(parents=True)
    (plain.parent / ".ignore").write_text("x.txt\n")
    (plain.parent / ".gitignore").write_text("y.txt\n")
    for name in ("x.txt", "y.txt", "z.txt"):
        (plain / name).write_text("hello\n")
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    for where in (outer / "repo", plain):
        ours = subprocess.run([sys.executable, "-m", "ov", "grep", "-l", "hello"], cwd=where, env=env,
                              capture_output=True, text=True)
        theirs = rg(where, "-l", "hello")
        assert sorted(ours.stdout.splitlines()) == sorted(theirs.stdout.splitlines()), where
    assert sorted(rg(outer / "repo", "-l", "hello").stdout.splitlines()) == ["sub/q.txt", "sub/s.txt"]


def test_quiet_checks_its_options_and_glob_jsonl_carries_warnings(tmp_path):
    """`ov grep -q -C -1` exited 0 (rg: an error); `ov glob -o jsonl` dropped a run's
    warnings that grep's JSON Lines and glob's JSON carry; `-g` with no value named no
    field and suggested `--`."""
    from conftest import run_inprocess

    t = tmp_path / "t"
    t.mkdir()
    (t / "a.txt").write_text("alpha\n")
    (tmp_path / "outside.txt").write_text("alpha\n")
    (t / "out.txt").symlink_to(tmp_path / "outside.txt")
    assert run_inprocess("grep", "-q", "-C", "-1", "alpha", cwd=t).code == 2
    assert run_inprocess("grep", "-q", "--max-columns", "-1", "alpha", cwd=t).code == 2
    assert run_inprocess("grep", "-q", "alpha", cwd=t).code == 0
    r = run_inprocess("glob", "*.txt", "out.txt", "-o", "jsonl", cwd=t)
    last = json.loads(r.out.splitlines()[-1])
    assert last["type"] == "summary" and "leading outside the tree" in last["warnings"][0], r.out
    # a glob counts paths, not files searched: its record said "files": 0 after its paths
    (t / "b.txt").write_text("beta\n")
    r = run_inprocess("glob", "*.txt", "-o", "jsonl", "--node-limit", "1", cwd=t)
    last = json.loads(r.out.splitlines()[-1])
    assert last["type"] == "summary" and last["count"] == 1 and "files" not in last, r.out
    r = run_inprocess("grep", "x", "-o", "json", "-g", cwd=t)
    assert r.json["error"]["field"] == "globs" and "--" not in r.json["error"]["message"].split("argument")[-1], r.out


# -- a NUL past rg's first buffer in a file found by the walk ------------------------------
LATE = (b"needle one\nneedle two\n" + (b"y" * 99 + b"\n") * 3000
        + b"needle three\n\x00bin\nneedle four\n")  # 300 KB: the NUL is not in the first buffer


@needs_rg
@pytest.mark.parametrize("flags", [[], ["-m", "1"], ["-m", "5"], ["-c"], ["-c", "-m", "1"],
                                   ["-c", "-m", "3"], ["-l"], ["-v", "-c"]], ids=str)
def test_walked_file_stopped_at_a_late_nul_as_rg(ov, tree, flags):
    # rg prints the matches before the buffer that holds the NUL, then says it stopped;
    # -c counts no line of such a file unless -m ended its search first
    t = tree({"a.txt": "needle a\n", "z.txt": LATE})
    args = [*flags, "needle"] if "-v" not in flags else [*flags, "nothing-like-it"]
    ours = ov("grep", *args, cwd=t)
    theirs = rg(t, "--sort", "path", "-n", *args)
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout)


def test_walked_file_stopped_at_a_late_nul_is_said_in_json(ov, tree):
    t = tree({"a.txt": "needle a\n", "z.txt": LATE})
    note = 'z.txt: WARNING: stopped searching binary file after match (found "\\0" byte around offset 300035)'
    r = ov("grep", "--json", "needle", cwd=t)
    res = r.json["result"]
    assert r.code == 0 and [(m["path"], m["line"]) for m in res["matches"]] == [
        ("a.txt", 1), ("z.txt", 1), ("z.txt", 2)]
    assert res["warnings"] == [note]
    r = ov("grep", "-o", "jsonl", "needle", cwd=t)
    assert r.jsonl[-1]["type"] == "summary" and r.jsonl[-1]["warnings"] == [note]
    # -m that ends the search before the NUL: nothing to say
    assert ov("grep", "--json", "-m", "2", "needle", cwd=t).json["result"]["warnings"] == []


@needs_rg
@pytest.mark.parametrize("args", [["-g", "deep/*.py", "hit"], ["-g", "/top.py", "hit"],
                                  ["-g", "!deep/*.py", "hit"], ["--files", "-g", "!deep/*.py"],
                                  ["-g", "**/n.py", "hit"], ["-g", "*.py", "hit"]], ids=str)
def test_globs_are_read_from_the_current_folder_as_rg(ov, tree, args):
    # in a subfolder of a repository the root is the repository's top; rg reads -g from
    # the current folder (a glob with a '/' found nothing, a '!' one excluded nothing)
    t = tree({"src/deep/n.py": "hit\n", "src/top.py": "hit\n", "top.py": "hit\n"})
    subprocess.run(["git", "init", "-q", str(t)], check=True)
    ours = ov("grep", *args, cwd=t / "src")
    theirs = rg(t / "src", "--sort", "path", "-n", *args)
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout)


@needs_rg
@pytest.mark.parametrize("args", [["hit"], ["--files"], ["-l", "hit", "inner"]], ids=str)
def test_an_inner_repository_is_not_ignored_by_the_outer_gitignore_as_rg(ov, tree, args):
    # git and rg stop a repository's .gitignore at a repository inside it; .ignore goes on
    t = tree({".gitignore": "*.log\n", ".ignore": "x.txt\n", "a.log": "hit\n", "b.txt": "hit\n",
              "inner/b.log": "hit\n", "inner/x.txt": "hit\n", "inner/c.txt": "hit\n"})
    subprocess.run(["git", "init", "-q", str(t)], check=True)
    subprocess.run(["git", "init", "-q", str(t / "inner")], check=True)
    ours = ov("grep", *args, cwd=t)
    theirs = rg(t, "--sort", "path", "-n", *args)
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout)
    assert "inner/b.log" in ours.out and "inner/x.txt" not in ours.out
    assert ov("glob", "**/*.log", cwd=t).out == "inner/b.log\n"


@needs_rg
def test_rgignore_is_read_as_rg_reads_it(ov, tree):
    # above .ignore and .gitignore: what a user hid from rg stays hidden, a '!' re-includes
    t = tree({".rgignore": "secret.txt\n", ".gitignore": "*.txt\n", "secret.txt": "hit\n",
              "ok.md": "hit\n", "sub2/.rgignore": "!*.txt\n", "sub2/a.txt": "hit\n"})
    subprocess.run(["git", "init", "-q", str(t)], check=True)
    ours = ov("grep", "hit", cwd=t)
    theirs = rg(t, "--sort", "path", "-n", "hit")
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout) == (0, "ok.md:1:hit\nsub2/a.txt:1:hit\n")
    assert "secret.txt" not in ov("glob", "**", cwd=t).out


@needs_rg
@pytest.mark.parametrize("args", [["-g", "*.py", "hit", "a.txt", "src"], ["-t", "py", "hit", "a.txt"],
                                  ["-g", "!a.txt", "hit", "a.txt"], ["--files", "-t", "py", "a.txt"]], ids=str)
def test_a_file_named_is_searched_whatever_g_and_t_say_as_rg(ov, tree, args):
    t = tree({"a.txt": "hit\n", "src/n.py": "hit\n", "src/m.txt": "hit\n"})
    ours = ov("grep", *args, cwd=t)
    theirs = rg(t, "--sort", "path", "-n", "-H", *args)  # ov names a file named alone (README)
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout)
    assert "a.txt" in ours.out


@needs_rg
@pytest.mark.parametrize("args", [["-x", "foo"], ["-x", "-F", "foo bar"], ["-x", "-i", "FOO"], ["-x", "fo+|bar"],
                                  ["-x", "-v", "foo"], ["-x", "-c", "foo"], ["-x", ".*"], ["-x", "-e", "foo", "-e", "a.c"]],
                         ids=str)
def test_line_regexp_as_rg(ov, tree, args):
    t = tree({"a.txt": "foo\nfoo bar\nabc\nfoo\r\nxfoo\n\nbar\n"})  # "foo\r" is no whole-line foo
    ours = ov("grep", *args, cwd=t)
    theirs = rg(t, "--sort", "path", "-n", "-H", *args)
    # (rg's output is read as text here, which turns its "\r\n" into "\n")
    assert (ours.code, ours.out.replace("\r\n", "\n")) == (theirs.returncode, theirs.stdout)


def test_line_regexp_wins_over_word_and_reaches_the_library(ov, tree):
    t = tree({"a.txt": "foo\nfoo bar\n"})
    assert ov("grep", "-x", "-w", "fo+", cwd=t).out == "a.txt:1:foo\n"  # -x wins (rg 13: the last given)
    import ov as api

    found, _ = api.grep("fo+", cwd=t, line=True)
    assert [(m.path, m.line) for m in found] == [("a.txt", 1)]


@needs_rg
@pytest.mark.parametrize("pat", [r"\x{41}", r"[\x{41}-\x{43}]", r"\u{200B}", r"\U{1F600}", r"\x41"])
def test_code_point_escapes_as_rg(ov, tree, pat):
    # rg's braced escapes were refused ("incomplete escape \x")
    t = tree({"a.txt": "A\nB\n\u200b\n\U0001F600 smile\nnone\n"})
    ours = ov("grep", pat, cwd=t)
    theirs = rg(t, "--sort", "path", "-n", "-H", pat)
    assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout) and ours.code == 0


def test_word_edges_as_rg_14(ov, tree):
    t = tree({"a.txt": "word here\nsword\nwordy\n"})
    assert ov("grep", r"\<word", cwd=t).out == "a.txt:1:word here\na.txt:3:wordy\n"
    assert ov("grep", r"word\>", cwd=t).out == "a.txt:1:word here\na.txt:2:sword\n"
    assert ov("grep", r"[\<]", cwd=t).code == 1  # in a class, the character
    r = ov("grep", "--json", r"\x{D800}", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_pattern"


@needs_rg
@pytest.mark.parametrize("order", [[".", "../../other"], ["../../other", "."]], ids=str)
def test_globs_from_the_current_folder_with_several_roots_as_rg(ov, tree, order):
    # the first root's folder prefix was kept for the next root: the order of PATHs changed
    # what -g selected
    t = tree({"repo/src/x/a.py": "hit\n", "repo/src/b.py": "hit\n", "other/src/x/c.py": "hit\n",
              "other/x/d.py": "hit\n"})
    subprocess.run(["git", "init", "-q", str(t / "repo")], check=True)
    for glob in ("x/*.py", "!x/*.py"):
        ours = ov("grep", "-l", "-g", glob, "hit", *order, cwd=t / "repo" / "src")
        theirs = rg(t / "repo" / "src", "--sort", "path", "-l", "-g", glob, "hit", *order)
        # (rg prints `./x` for a file under the PATH `.`; ov prints paths from the current folder)
        assert sorted(ours.out.split()) == sorted(p.removeprefix("./") for p in theirs.stdout.split()), glob


@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed"])
def test_no_file_searched_is_an_error_as_rg_says(ov, tree, indexed, tmp_path):
    """`-t rust` in a tree with no Rust file searched nothing: rg exits 2 and says why, and
    so does ov, in text, JSON and with -q. A pattern the index rules out of every file is
    a search that found nothing (1), not this error."""
    t = tree({"a.py": "fn main\n", "b.md": "main\n"})
    if indexed:
        assert ov("index", "--no-embed", cwd=t).code == 0
    r = ov("grep", "-t", "rust", "main", cwd=t)
    assert (r.code, r.out) == (2, "")
    assert r.err.startswith("ov: error[not_found]: no files were searched: the filters") and "--files" in r.err
    j = ov("grep", "-t", "rust", "main", "--json", cwd=t)
    assert j.code == 2 and j.json["error"]["code"] == "not_found"
    assert ov("grep", "-q", "-t", "rust", "main", cwd=t).code == 2
    assert ov("grep", "-c", "-g", "*.rs", "main", cwd=t).code == 2
    assert ov("grep", "-t", "py", "main", cwd=t).out == "a.py:1:fn main\n"
    none = ov("grep", "zqxvnothinghere", cwd=t)
    assert (none.code, none.out, none.err) == (1, "", "")
    assert ov("grep", "-q", "zqxvnothinghere", cwd=t).code == 1
    (tmp_path / "empty").mkdir()  # no file at all: nothing searched either, as rg says it
    e = ov("grep", "main", cwd=tmp_path / "empty")
    assert e.code == 2 and "no files were searched: there is none here" in e.err
    assert ov("grep", "-g", "*.rs", "main", cwd=tmp_path / "empty").code == 2


@needs_rg
def test_no_file_searched_exits_as_rg_exits(ov, tree):
    t = tree({"a.py": "fn main\n"})
    for flags in (["-t", "rust"], ["-g", "*.rs"], ["-t", "py"], []):
        assert ov("grep", *flags, "main", cwd=t).code == rg(t, *flags, "main").returncode, flags


@needs_rg
@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed"])
def test_ignore_files_that_leave_no_file_are_said_as_rg_says(ov, tree, indexed):
    """A cloned tree's `.ignore` of `*` left `ov grep` nothing to search: it exited 1 with
    nothing said, so `ov grep -q SECRET` passed a CI check on nothing read. rg exits 2, "No
    files were searched"; ov too, naming the ignore files and the flags that take them in."""
    t = tree({"a.txt": "needle\n", ".ignore": "*\n"})
    if indexed:
        assert ov("index", "--no-embed", cwd=t).code == 0
    for flags in ([], ["-q"], ["-c"]):
        r = ov("grep", *flags, "needle", cwd=t)
        assert r.code == rg(t, *flags, "needle").returncode == 2, flags
        assert "no files were searched: ignore files" in r.err and "--no-ignore" in r.err
    assert ov("grep", "--no-ignore", "needle", cwd=t).out == "a.txt:1:needle\n"


def test_a_config_ignore_that_leaves_no_file_is_named(ov, tree):
    """The config's `ignore` lines left every file out, and the error said "there is none
    here" (a review)."""
    t = tree({"a.txt": "needle\n", ".ov/config.toml": 'ignore = ["*.txt"]\n'})
    r = ov("grep", "needle", cwd=t)
    assert r.code == 2 and "no files were searched: the config's `ignore` setting left out every file" in r.err


@needs_rg
def test_links_out_that_l_asked_to_follow_are_said_and_exit_2(ov, tree, tmp_path):
    """rg -L follows a link anywhere; ov never follows one out of the tree, and under -L had
    left them out without a word (exit 1 when nothing else matched). Each is now said, and
    the run exits 2 as for any part not read; without -L they are passed over silently, as
    rg passes them."""
    outside = tmp_path / "outside.txt"
    outside.write_text("outside_marker\n")
    t = tree({"in.txt": "inside\n"})
    (t / "out_file").symlink_to(outside)
    r = ov("grep", "-L", "outside_marker", "-o", "json", cwd=t)
    assert r.code == 2 and r.json["result"]["matches"] == []
    assert r.json["result"]["warnings"] == ["out_file: a symbolic link leading outside the tree, not followed"]
    assert rg(t, "-L", "outside_marker").returncode == 0  # rg reads it: ov cannot say "no match"
    assert ov("grep", "-L", "-q", "inside", cwd=t).code == 0
    plain = ov("grep", "outside_marker", cwd=t)
    assert (plain.code, plain.err) == (1, "") and rg(t, "outside_marker").returncode == 1


@needs_rg
@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed"])
def test_links_out_that_rules_or_filters_leave_out_are_not_said(ov, tree, tmp_path, indexed):
    """A `venv` link out of the tree listed in `.gitignore`, or a `.txt` link under `-t py`,
    is never looked at by rg -L: ov had said it and exited 2 (a review), failing CI runs
    over trees with an ignored virtualenv link."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("needle\n")
    t = tree({"a.py": "needle = 1\n", ".gitignore": "venv\n"})  # (the tree fixture is a git work tree)
    (t / "venv").symlink_to(tmp_path / "outside")
    (t / "sub").mkdir()
    (t / "sub" / "out.txt").symlink_to(tmp_path / "outside" / "o.txt")
    if indexed:
        assert ov("index", "--no-embed", cwd=t).code == 0
    for flags, rg_flags in ((["-t", "py"],) * 2, (["-g", "*.py"],) * 2, (["--exclude-uri", "sub"], ["-g", "!sub"])):
        r = ov("grep", "-L", *flags, "needle", cwd=t)
        assert (r.code, r.out, r.err) == (0, "a.py:1:needle = 1\n", "") and rg(t, "-L", *rg_flags, "needle").returncode == 0, flags
        q = ov("grep", "-L", "-q", *flags, "zzz", cwd=t)
        assert q.code == rg(t, "-L", "-q", *rg_flags, "zzz").returncode == 1, flags
    said = ov("grep", "-L", "needle", cwd=t)  # the one the rules keep is said: rg would read it
    assert said.code == 2 and said.err == "ov: warning: sub/out.txt: a symbolic link leading outside the tree, not followed\n"


def test_a_missing_path_among_others_is_said_and_the_rest_searched(ov, tree):
    """rg searches the PATHs that exist, says which does not, and exits 2: `ov grep kmalloc
    good.rst nosuch` had printed nothing of good.rst."""
    t = tree({"a.py": "fn main\n", "b.txt": "main here\n"})
    r = ov("grep", "main", "a.py", "nosuch", "b.txt", cwd=t)
    assert (r.code, r.out) == (2, "a.py:1:fn main\nb.txt:1:main here\n")
    assert "nosuch: no such file or folder" in r.err
    lines = ov("grep", "main", "a.py", "nosuch", "-o", "jsonl", cwd=t)
    recs = [json.loads(x) for x in lines.out.splitlines()]
    assert lines.code == 2 and recs[0]["path"] == "a.py"
    assert recs[-1]["type"] == "summary" and "nosuch: no such file or folder" in recs[-1]["warnings"]
    # JSON and -q as text: one behaviour in every mode (a review found three), as for a
    # part of the tree that could not be read
    j = ov("grep", "main", "a.py", "nosuch", "--json", cwd=t)
    assert j.code == 2 and j.json["status"] == "ok" and j.json["result"]["count"] == 1
    assert j.json["result"]["warnings"] == ["nosuch: no such file or folder"]
    assert ov("grep", "-q", "main", "a.py", "nosuch", cwd=t).code == 0  # rg -q: a match is 0
    q = ov("grep", "-q", "zzz", "a.py", "nosuch", cwd=t)
    assert q.code == 2 and "nosuch: no such file or folder" in q.err
    f = ov("grep", "--files", "a.py", "nosuch", cwd=t)
    assert (f.code, f.out) == (2, "a.py\n")
    assert ov("grep", "zzz", "a.py", "nosuch", cwd=t).code == 2  # nothing found, still an error
    only = ov("grep", "main", "nosuch", "gone", cwd=t)
    assert (only.code, only.out) == (2, "") and "error[not_found]: nosuch" in only.err


@needs_rg
def test_literal_path_lines_ignore_what_rg_ignores(ov, tree):
    """Ignore lines naming one path (`src/gen/x.c`, `build/out/`, `/top`) skip pathspec (a
    30,000-line .ignore of them took 1.5 s a grep): a '/' inside anchors the line at its
    folder, one at the end asks for a folder, as git and rg read them."""
    files = {f: "needle\n" for f in ("src/gen/x.c", "a/src/gen/x.c", "build/out/y.txt", "a/build/out/z.txt",
                                     "build/out2", "top", "a/top", "docs/sub/n.md", "docs/a/sub/n.md",
                                     "keep.txt")}
    t = tree({**files, ".ignore": "src/gen/x.c\nbuild/out/\nbuild/out2/\n/top\n",
              "docs/.ignore": "sub/n.md\n"})
    want = rg(t, "-l", "--sort", "path", "needle").stdout
    assert "a/src/gen/x.c" in want and "build/out2" in want and "src/gen/x.c\n" not in want.replace("a/src", "")
    assert ov("grep", "-l", "needle", cwd=t).out == want
    assert ov("glob", "**", cwd=t).out == rg(t, "--files", "--sort", "path").stdout


@needs_rg
def test_an_allow_list_gitignore_re_includes_what_rg_does(ov, tree):
    """`*`, then `!*/` and `!NAME`: ignore all but NAME, wherever it lies. pathspec reads
    `*/` as a regex with no start, which the walk tested from the path's start: `!*/`
    re-included no folder, and `b/keep.txt` was hidden where rg and git list it."""
    t = tree({".gitignore": "*\n!*/\n!keep.txt\n", "keep.txt": "needle\n", "b/keep.txt": "needle\n",
              "b/c/keep.txt": "needle\n", "b/other.txt": "needle\n", "other.txt": "needle\n"})
    (t / ".git").mkdir(exist_ok=True)
    want = rg(t, "-l", "--sort", "path", "needle").stdout
    assert want == "b/c/keep.txt\nb/keep.txt\nkeep.txt\n"
    assert ov("grep", "-l", "needle", cwd=t).out == want
    assert ov("glob", "**", cwd=t).out == rg(t, "--files", "--sort", "path").stdout


@needs_rg
@pytest.mark.parametrize("rules", ["b/**/\n", "*\n!b/**/\n!*.txt\n"])
def test_a_folder_rule_ending_in_globstar_leaves_the_folder_itself_as_rg_does(ov, tree, rules):
    """`b/**/` names the folders below `b`, not `b`: ov had ignored `b/keep.txt`, which
    git and rg list (and re-included `b`'s own files in the allow-list form)."""
    t = tree({".gitignore": rules, "b/keep.txt": "needle\n", "b/sub/deep.txt": "needle\n",
              "b/sub/x/e.txt": "needle\n", "a/x.txt": "needle\n", "top.txt": "needle\n"})
    (t / ".git").mkdir(exist_ok=True)
    assert ov("glob", "**", cwd=t).out == rg(t, "--files", "--sort", "path").stdout
    assert ov("grep", "-l", "needle", cwd=t).out == rg(t, "-l", "--sort", "path", "needle").stdout


# -- --column and --vimgrep (an editor's quickfix list), checked against rg ----------------
COLUMNS = {"a.txt": "bar baz\nfoo bar food fed\nbar baz\nnaïve foo\n",
           "b.txt": "x\n", "c.txt": "日本 foo\tfoo\n" + "z\n" * 3 + "foo\n",
           "rep.txt": "foo\nbar\nfoo\nbaz\nx foo\nbar y foo\nbar\n"}


@needs_rg
@pytest.mark.parametrize("flags", [["--column"], ["--vimgrep"], ["--vimgrep", "-C", "1"],
                                   ["--column", "-C", "1"], ["--vimgrep", "--heading"],
                                   ["--column", "--heading"], ["--vimgrep", "-m", "1"],
                                   ["--vimgrep", "-0"],
                                   ["--column", "--no-filename"], ["--vimgrep", "-c"], ["--vimgrep", "-l"],
                                   ["--vimgrep", "-i"], ["--vimgrep", "-w"]], ids=str)
def test_column_and_vimgrep_as_rg(ov, tree, flags):
    t = tree(COLUMNS)
    for pat in ("foo", "o", "o$", "fo+d?"):
        ours = ov("grep", *flags, pat, cwd=t)
        theirs = rg(t, "-n", "-H", "--sort", "path", *flags, pat)
        assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout), pat
    if "-C" in flags:
        return  # ov's -v takes no context lines (README)
    # -v lines have no match, so no column (rg 13)
    ours = ov("grep", *flags, "-v", "foo", cwd=t)
    assert ours.out == rg(t, "-n", "-H", "--sort", "path", *flags, "-v", "foo").stdout


@needs_rg
@pytest.mark.parametrize("flags", [["--vimgrep"], ["--vimgrep", "-C", "1"], ["--column", "-C", "2"]], ids=str)
def test_multiline_vimgrep_names_the_line_a_match_starts_on_as_rg(ov, tree, flags):
    t = tree(COLUMNS)
    for pat in (r"fed\nbar", r"foo\nbar", r"foo\nbar\n\w", r"o\n"):
        if "--column" in flags and pat == r"o\n":
            continue  # rg repeats a merged record's first column on later matches' lines
        ours = ov("grep", "-U", *flags, pat, cwd=t)
        theirs = rg(t, "-U", "-n", "-H", "--sort", "path", *flags, pat)
        assert (ours.code, ours.out) == (theirs.returncode, theirs.stdout), pat


@needs_rg
def test_columns_count_the_files_own_bytes_as_rg(ov, tree):
    """A Latin-1 byte shows as U+FFFD (3 bytes in UTF-8) but is one byte of the file: the
    column counts it once, as rg; a real U+FFFD counts 3, a BOM none, UTF-16 its UTF-8."""
    import re

    t = tree({"latin.txt": b"caf\xe9 foo\n\xff\xfe foo foo\n", "two.txt": b"a\xe9\xa9b foo\n",
              "lead.txt": b"x\xe9foo\xe2\x82foo\xf0foo\n",  # a match right after a byte that is not UTF-8
              "fffd.txt": "real \ufffd foo\n", "bom.txt": b"\xef\xbb\xbfbom foo\n",
              "u16.txt": "ü foo\n".encode("utf-16")})
    cols = re.compile(r"^([^:]+:\d+:\d+):", re.M)
    ours = ov("grep", "--vimgrep", "foo", cwd=t)
    theirs = subprocess.run([RG, "--no-config", "--vimgrep", "--sort", "path", "foo"], cwd=t,
                            capture_output=True).stdout.decode("utf-8", "replace")
    assert ours.code == 0 and cols.findall(ours.out) == cols.findall(theirs)
    assert "latin.txt:2:8:" in ours.out and "fffd.txt:1:10:" in ours.out and "bom.txt:1:5:" in ours.out
    assert [ln.split(":")[2] for ln in ours.out.splitlines() if ln.startswith("lead.txt")] == ["3", "8", "12"]


def test_column_and_vimgrep_leave_json_as_it_is(ov, tree):
    t = tree(COLUMNS)
    plain = ov("grep", "--json", "foo", cwd=t).json["result"]["matches"]
    for flag in ("--column", "--vimgrep"):
        assert ov("grep", "--json", flag, "foo", cwd=t).json["result"]["matches"] == plain
    r = ov("grep", "--vimgrep", "foo", "c.txt", cwd=t)
    assert r.out == "c.txt:1:8:日本 foo\tfoo\nc.txt:1:12:日本 foo\tfoo\nc.txt:5:1:foo\n"
    # --max-columns (characters, the newline not counted): each match says it was omitted
    r = ov("grep", "--vimgrep", "--max-columns", "5", "foo", "c.txt", cwd=t)
    assert r.out == ("c.txt:1:8:[Omitted long line with 2 matches]\n"
                     "c.txt:1:12:[Omitted long line with 2 matches]\nc.txt:5:1:foo\n")


def test_the_walks_warnings_name_paths_from_the_current_folder(ov, tree):
    """Results are shown from the current folder; the walk's warnings named paths from the
    search root (`broken` for `../broken`, where rg says `../broken`)."""
    t = tree({"real/r.txt": "alpha\n", "real/deep/d.txt": "alpha\n"})
    (t / ".git").mkdir()
    os.symlink("nowhere", t / "broken")
    os.symlink("nowhere", t / "real" / "deep" / "gone")
    r = ov("grep", "-l", "-L", "alpha", "..", cwd=t / "real")
    assert r.code == 2 and r.out == "deep/d.txt\nr.txt\n"
    assert "warning: ../broken: broken symbolic link" in r.err
    assert "warning: deep/gone: broken symbolic link" in r.err
    w = ov("grep", "-l", "-L", "--json", "alpha", "..", cwd=t / "real").json["result"]["warnings"]
    assert sorted(w) == ["../broken: broken symbolic link", "deep/gone: broken symbolic link"]
    # from the root, as they were
    assert "warning: real/deep/gone: broken symbolic link" in ov("grep", "-l", "-L", "alpha", cwd=t).err


@needs_rg
@pytest.mark.parametrize("pat", ["o*", "x*", "o?", "f*o*", "a|", r"\w*", r"\b"])
def test_an_empty_match_where_a_match_ended_is_none_as_rg(ov, tree, pat):
    """Python's regex finds an empty match right where a non-empty one ended (`o*` on
    `Some foo`: at 2 after `o`), rg's does not: --vimgrep listed extra matches, and JSON
    extra submatches (a review in vim)."""
    t = tree({"e.txt": "Some foo here.\nbar baz\nfoo bar food fed\n"})
    ours = ov("grep", "--vimgrep", pat, "e.txt", cwd=t)
    assert (ours.code, ours.out) == (0, rg(t, "--vimgrep", pat, "e.txt").stdout)
    subs = ov("grep", "--json", pat, "e.txt", cwd=t).json["result"]["matches"][0]["submatches"]
    cols = [int(ln.split(":")[2]) - 1 for ln in ours.out.splitlines() if ln.split(":")[1] == "1"]
    assert [s["start"] for s in subs] == cols


@needs_rg
def test_quiet_says_a_missing_path_even_with_a_match_as_rg(ov, t):
    """`-q` with a match exits 0, and a PATH that is not there is still said on stderr, as
    rg says it: a typo in a script's list of paths went unnoticed."""
    r = ov("grep", "-q", "needle", "b.txt", "nosuch.txt", cwd=t)
    theirs = rg(t, "-q", "needle", "b.txt", "nosuch.txt")
    assert (r.code, r.out) == (theirs.returncode, "") == (0, "")
    assert "nosuch.txt" in r.err and "nosuch.txt" in theirs.stderr
    r = ov("grep", "-q", "zzz", "b.txt", "nosuch.txt", cwd=t)
    assert r.code == rg(t, "-q", "zzz", "b.txt", "nosuch.txt").returncode == 2 and "nosuch.txt" in r.err
    assert ov("grep", "-q", "needle", "b.txt", cwd=t).err == ""


@needs_rg
def test_a_path_given_absolute_is_printed_absolute_as_rg_and_fd(ov, tree):
    """An editor calls `rg --vimgrep PATTERN /home/me/proj`; ov printed `../proj/x` and
    scripts that strip the folder they gave lost the path (a review)."""
    t = tree({"proj/src/a.py": "needle\n", "proj/b.py": "needle\n", "other/x.txt": ""})
    proj, other = t / "proj", t / "other"
    for args in ([str(proj / "src")], [str(proj)], ["../proj"], [str(proj / "src" / "a.py")],
                 [str(proj / "src"), "../proj/b.py"]):
        ours = ov("grep", "--vimgrep", "needle", *args, cwd=other)
        assert ours.out == rg(other, "--vimgrep", "--sort", "path", "needle", *args).stdout, args
    r = ov("grep", "-l", "--json", "needle", str(proj), cwd=other)
    assert r.json["result"]["paths"] == [f"{proj}/b.py", f"{proj}/src/a.py"]
    assert ov("glob", "**/*.py", str(proj), cwd=other).out == f"{proj}/b.py\n{proj}/src/a.py\n"
    assert ov("glob", "**/*.py", "../proj", cwd=other).out == "../proj/b.py\n../proj/src/a.py\n"
    assert ov("grep", "-l", "needle", cwd=proj).out == "b.py\nsrc/a.py\n"
    # a file named absolute beside its folder named relative: only it is shown absolute
    (proj / "src" / "c.py").write_text("needle\n")
    r = ov("grep", "-l", "needle", str(proj / "src" / "a.py"), "../proj/src", cwd=other)
    assert r.out == f"{proj}/src/a.py\n../proj/src/c.py\n"
    (proj / "src" / "c.py").unlink()
    # a PATH that is a link inside the tree: its files under the link's name, the target's
    # under its own (as rg)
    (t / ".git").mkdir()
    os.symlink("proj/src", t / "link")
    r = ov("grep", "-l", "needle", str(t / "link"), str(proj / "src"), cwd=other)
    assert r.out == rg(other, "-l", "--sort", "path", "needle", str(t / "link"), str(proj / "src")).stdout \
        == f"{t}/link/a.py\n{proj}/src/a.py\n"
    assert ov("glob", "*", str(t / "link"), cwd=other).out == f"{t}/link/a.py\n"


def test_one_wording_for_every_timeout_out_of_range(ov, t):
    """0, -1 and nan read "more than 0 seconds", inf and 1e9 "--timeout must be more than 0
    and at most 1000000 seconds": one limit, said one way (a review)."""
    for v in ("0", "-1", "nan", "inf", "1e9"):
        r = ov("grep", "--json", "--timeout", v, "x", cwd=t)
        assert r.code == 2 and r.json["error"] == {
            "code": "invalid_argument", "field": "timeout", "retryable": False,
            "message": "timeout must be more than 0 and at most 1000000 seconds"}, (v, r.out)


def test_each_vimgrep_copy_of_a_line_highlights_its_own_match(ov, tree):
    t = tree({"a.txt": "foo bar foo\n"})
    bold, reset = "\x1b[1;31m", "\x1b[0m"
    lines = ov("grep", "--vimgrep", "--color", "always", "foo", "a.txt", cwd=t).out.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(f":1:{bold}foo{reset} bar foo") and lines[1].endswith(f":9:foo bar {bold}foo{reset}")


BRACED = {"lib/retry.ex": "RetryPolicy\n", "test/retry_test.exs": "RetryPolicy\n", "infra/sqs.tf": "RetryPolicy\n",
          "infra/lock.hcl": "RetryPolicy\n", "1..3.txt": "RetryPolicy\n", "ab.md": "RetryPolicy\n",
          "ac.md": "RetryPolicy\n", "!a.txt": "RetryPolicy\n", "#x.txt": "RetryPolicy\n", "b.txt": "RetryPolicy\n",
          "docs/r.md": "RetryPolicy\n", "src/a/b.txt": "RetryPolicy\n"}


@needs_rg
@pytest.mark.parametrize("glob", ["*.{ex,exs}", "!*.{ex,exs}", "*.{tf,hcl}", "{lib,infra}/*", "{1..3}.txt",
                                  "a{b}.md", "*.{}", "{ab,x}.md", "[{]*",
                                  # a form's leading `!` or `#` is a name; a `/` in any form anchors all
                                  "{!a,b}.txt", "{#x,b}.txt", "#x.txt", "#{a,b}.txt", "{docs/*.md,b.txt}",
                                  "{**/b.txt,r.md}", "src/{a,b}/*",
                                  "{" + ",".join(f"x{i}" for i in range(1500)) + ",b}.txt"])
def test_brace_globs_select_the_files_rg_selects(ov, tree, glob):
    """`-g '*.{ex,exs}'` was matched as literal text: no file searched, exit 2, where rg
    takes both kinds (a review of a polyglot repository). Braces are rg's alternations."""
    root = tree(BRACED)
    want = rg(root, "-l", "--sort", "path", "-g", glob, "RetryPolicy")
    got = ov("grep", "-l", "-g", glob, "RetryPolicy", cwd=root)
    assert got.out == want.stdout and (got.code == want.returncode or not want.stdout), (got.err, want.stderr)


@needs_rg
def test_a_nested_brace_group_is_refused_as_rg_refuses_it(ov, tree):
    root = tree(BRACED)
    assert "nested alternate groups are not allowed" in rg(root, "-l", "-g", "a{b,{c,d}}.md", "x").stderr
    r = ov("grep", "-l", "-g", "a{b,{c,d}}.md", "RetryPolicy", cwd=root)
    assert r.code == 2 and "error[invalid_pattern]" in r.err and "nested alternate groups" in r.err
