"""`ov glob`: pattern semantics, ignore and hidden rules, fields, limits, bad input."""

from __future__ import annotations

import os
import re

import pytest

from conftest import imported_by, run_inprocess

FILES = {
    "a.py": "x\n",
    "B.PY": "x\n",
    "README.md": "x\n",
    "src/m.py": "x\n",
    "src/pkg/n.py": "x\n",
    "src/pkg/n.c": "x\n",
    "src/pkg/n.h": "x\n",
    "docs/x y.md": "x\n",
    "docs/été.md": "x\n",
    ".env": "x\n",
    ".github/ci.yml": "x\n",
    ".gitignore": "build/\n*.log\n!keep.log\n",
    "build/gen.py": "x\n",
    "debug.log": "x\n",
    "keep.log": "x\n",
}


@pytest.fixture
def ov():
    return lambda *args, cwd=None, env=None: run_inprocess(list(args), cwd=cwd, env=env)


@pytest.fixture
def t(tree):
    return tree(FILES)


def paths(r):
    return r.json["result"]["matches"]


def test_star_does_not_cross_slash(ov, t):
    r = ov("glob", "*.py", cwd=t)
    assert r.code == 0 and r.out == "a.py\n"
    assert ov("glob", "src/*.py", cwd=t).out == "src/m.py\n"
    assert ov("glob", "s?c/*.py", cwd=t).out == "src/m.py\n"


def test_a_top_level_pattern_that_matches_only_deeper_says_so(ov, t):
    """`ov glob '*.ts'` in a project whose .ts files all lie in folders answered nothing,
    exit 1, without a word, where fd lists 333 (a review on a JS project): the empty
    answer now names the `**/` form; an answer, or a name found at no depth, says nothing."""
    r = ov("glob", "*.c", "-o", "json", cwd=t)
    assert r.code == 1 and paths(r) == []
    assert r.json["result"]["warnings"] == ["'*.c' matches names at the top of the folder searched only (a glob "
                                            "matches the whole path, as in a shell); '**/*.c' matches them at any depth"]
    assert "'**/*.c' matches them at any depth" in ov("glob", "*.c", cwd=t).err
    assert ov("glob", "**/*.c", cwd=t).out == "src/pkg/n.c\n"
    for quiet in ("*.zz", "*.py", "src/*.c"):
        assert ov("glob", quiet, "-o", "json", cwd=t).json["result"]["warnings"] == [], quiet


def test_a_pattern_that_matches_only_folders_says_how_to_list_their_files(ov, t):
    """`ov glob 'packages/*'` and `ov glob '**/dist'` answered nothing, exit 1, without a
    word (a review on a JS tree): a glob lists files, as rg --files does, and the empty
    answer now names the form that lists the files in those folders."""
    for pattern, inside, listed in (("src/p*", "src/p*/**", "src/pkg/n.c\n"), ("**/pkg", "**/pkg/**", "src/pkg/n.c\n")):
        r = ov("glob", pattern, "-o", "json", cwd=t)
        assert r.code == 1 and r.json["result"]["warnings"] == [
            f"{pattern!r} matches only folders here, and a glob lists files (as rg --files does); "
            f"{inside!r} lists the files in them"], r.out
        assert ov("glob", inside, cwd=t).out.startswith(listed)
    for quiet in ("nothere/*", "**/nothere", "**/pkg/**"):
        assert ov("glob", quiet, "-o", "json", cwd=t).json["result"]["warnings"] == [], quiet


def test_a_pattern_of_hidden_names_that_finds_nothing_says_why(ov, tmp_path):
    """`ov glob '.notes.md'` answered nothing, exit 1, without a word; fd says hidden files
    are filtered and names -H."""
    root = tmp_path / "h"
    (root / ".cfg").mkdir(parents=True)
    (root / ".notes.md").write_text("x\n")
    (root / ".cfg" / "a.toml").write_text("x\n")
    (root / "b.md").write_text("x\n")
    for pattern in (".notes.md", "**/.notes*"):  # (a hidden folder named as a path is entered)
        r = ov("glob", pattern, "-o", "json", cwd=root)
        assert r.code == 1 and r.json["result"]["warnings"] == [
            f"{pattern!r} names hidden files or folders (a leading dot), which are left out by default; "
            "--hidden includes them"], r.out
        assert ov("glob", pattern, "--hidden", cwd=root).code == 0
    assert ov("glob", "*.md", "-o", "json", cwd=root).json["result"]["warnings"] == []
    # not when --hidden would find nothing either (a name not there)
    assert ov("glob", ".nothere", "-o", "json", cwd=root).json["result"]["warnings"] == []


def test_globstar_brace_and_class(ov, t):
    assert ov("glob", "**/*.py", cwd=t).out == "a.py\nsrc/m.py\nsrc/pkg/n.py\n"
    assert ov("glob", "src/**/n.{c,h}", cwd=t).out == "src/pkg/n.c\nsrc/pkg/n.h\n"
    assert ov("glob", "src/pkg/n.[ch]", cwd=t).out == "src/pkg/n.c\nsrc/pkg/n.h\n"
    assert ov("glob", "src/pkg/n.[!ch]*", cwd=t).out == "src/pkg/n.py\n"
    assert ov("glob", "docs/*", cwd=t).out == "docs/x y.md\ndocs/été.md\n"


def test_case_sensitive_unless_i(ov, t):
    assert ov("glob", "*.py", cwd=t).out == "a.py\n"
    assert ov("glob", "-i", "*.py", cwd=t).out == "B.PY\na.py\n"
    assert ov("glob", "--ignore-case", "readme.MD", cwd=t).out == "README.md\n"


def test_ignore_and_hidden_rules(ov, t):
    assert ov("glob", "**/*.log", cwd=t).out == "keep.log\n"
    assert ov("glob", "--no-ignore", "**/*.log", cwd=t).out == "debug.log\nkeep.log\n"
    assert ov("glob", "**/gen.py", cwd=t).code == 1
    assert ov("glob", "--no-ignore", "**/gen.py", cwd=t).out == "build/gen.py\n"
    assert ov("glob", "**/*.yml", cwd=t).code == 1
    assert ov("glob", "--hidden", "**/*.yml", cwd=t).out == ".github/ci.yml\n"
    assert ov("glob", "--hidden", "*", cwd=t).lines == [
        ".env", ".gitignore", "B.PY", "README.md", "a.py", "keep.log"]


def test_path_argument_and_root(ov, t):
    # the pattern is matched against the path relative to the root, PATH limits the walk
    assert ov("glob", "**/*.py", "src/pkg", cwd=t).out == "src/pkg/n.py\n"
    assert ov("glob", "**/*.py", ".", cwd=t / "src").out == "m.py\npkg/n.py\n"  # no index: cwd is root


def test_symlinks_are_listed(ov, tree):
    t = tree({"real.txt": "x\n"})
    os.symlink("real.txt", t / "link.txt")
    r = ov("glob", "--json", "-f", "path,type", "*.txt", cwd=t)
    assert paths(r) == [{"path": "link.txt", "type": "symlink"}, {"path": "real.txt", "type": "file"}]


def test_fields(ov, t):
    os.chmod(t / "a.py", 0o640)
    os.utime(t / "a.py", ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_000))
    r = ov("glob", "--json", "-f", "name,path,type,size,mode,mtime,tags", "a.py", cwd=t)
    assert paths(r) == [{"path": "a.py", "name": "a.py", "type": "file", "size": 2, "mode": "640",
                         "mtime": "2023-11-14T22:13:20.123456Z", "tags": {}}]
    r = ov("glob", "--fields", "name,size", "src/*", cwd=t)
    assert r.out == "m.py\t2\n"
    r = ov("glob", "--json", "-f", "name,colour", "*", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


def test_simple_and_outputs(ov, t):
    assert ov("glob", "--simple", "-f", "size", "src/*", cwd=t).out == "src/m.py\n"
    assert ov("glob", "--simple", "--json", "src/*", cwd=t).out == "src/m.py\n"
    d = ov("glob", "--json", "src/**/*.py", cwd=t).json
    assert d["status"] == "ok" and d["result"] == {
        "matches": ["src/m.py", "src/pkg/n.py"], "count": 2, "truncated": False, "warnings": [],
        "root": str(t)}
    assert ov("glob", "-o", "jsonl", "src/**/*.py", cwd=t).jsonl == [
        {"path": "src/m.py"}, {"path": "src/pkg/n.py"}]
    assert ov("glob", "-o", "jsonl", "-f", "size", "src/*.py", cwd=t).jsonl == [
        {"path": "src/m.py", "size": 2}]


def test_node_limit(ov, tree):
    t = tree({f"f{i:03}.txt": "" for i in range(300)})
    d = ov("glob", "--json", "*.txt", cwd=t).json["result"]
    assert d["count"] == 256 and d["truncated"] is True and d["matches"][-1] == "f255.txt"
    r = ov("glob", "--node-limit", "2", "*.txt", cwd=t)
    assert r.out == "f000.txt\nf001.txt\n" and "node-limit 2" in r.err
    d = ov("glob", "--json", "--node-limit", "300", "*.txt", cwd=t).json["result"]
    assert d["count"] == 300 and d["truncated"] is False


def test_exclude_uri(ov, t):
    assert ov("glob", "--exclude-uri", "src/pkg", "**/*.py", cwd=t).out == "a.py\nsrc/m.py\n"
    assert ov("glob", "--exclude-uri", "a.py", "--exclude-uri", "src", "**/*.py", cwd=t).code == 1


def test_exclude_uri_names_with_whitespace_that_ignore_lines_cannot_hold(ov, tree):
    # a trailing tab or CR, or a newline, is lost in a gitignore line: still excluded
    names = ["tab\t", "cr\r", "nl\nx", "dir\t/f"]
    t = tree({**{n: "x\n" for n in names}, "keep": "x\n"})
    for n in names:
        top = n.split("/")[0]
        got = ov("glob", "-o", "json", "--exclude-uri", top, "**", cwd=t).json["result"]["matches"]
        assert top not in [g.split("/")[0] for g in got] and "keep" in got, n


def test_level_limit(ov, t):
    assert ov("glob", "--level-limit", "1", "**/*.py", cwd=t).out == "a.py\n"
    assert ov("glob", "--max-depth", "2", "**/*.py", cwd=t).out == "a.py\nsrc/m.py\n"
    for pattern in ("*", "**/*.py"):  # 0: nothing listed, and said
        r = ov("glob", "--level-limit", "0", pattern, "-o", "json", cwd=t)
        assert r.code == 1 and r.json["result"]["truncated_reason"] == "level_limit", r.out
        assert "--level-limit" in ov("glob", "--level-limit", "0", pattern, cwd=t).err


def test_no_match_and_bad_input(ov, t, tmp_path):
    assert ov("glob", "*.nothing", cwd=t).code == 1
    r = ov("glob", "--json", "src/[ab", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_pattern"
    assert "position 4" in r.json["error"]["message"]
    r = ov("glob", "--json", "{a,b", cwd=t)
    assert r.json["error"]["code"] == "invalid_pattern"
    # a range running backwards: `-g` and rg refuse it; as a glob it had matched nothing, exit 1
    for g in ("[z-a]", "src/[!9-0]*", "[\\z-a]"):
        r = ov("glob", "--json", g, cwd=t)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_pattern", g
        assert "invalid range" in r.json["error"]["message"], g
    assert ov("glob", "[-a]*", cwd=t).code in (0, 1) and ov("glob", "*.[a-z]*", cwd=t).code == 0
    # a folder outside the tree is searched too (as its own root), paths relative to here
    (t.parent / "outside.txt").write_text("x")
    r = ov("glob", "--json", "*.txt", "..", cwd=t)
    assert r.code == 0 and r.json["result"]["matches"] == ["../outside.txt"]
    r = ov("glob", "--json", "*", "missing", cwd=t)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    r = ov("glob", "*", "missing", cwd=t)
    assert re.match(r"ov: error\[not_found\]: missing", r.err)


def test_literal_folders_narrow_the_walk(ov, t):
    assert ov("glob", "src/pkg/*.py", cwd=t).out == "src/pkg/n.py\n"
    # with PATH, the pattern is relative to PATH (pathlib's Path(PATH).glob(pattern))
    assert ov("glob", "pkg/*.py", "src", cwd=t).out == "src/pkg/n.py\n"
    assert ov("glob", "src/pkg/*.py", "src", cwd=t).code == 1
    assert ov("glob", "pkg/*.py", "docs", cwd=t).code == 1
    assert ov("glob", "nope/*.py", cwd=t).code == 1
    assert ov("glob", "-i", "SRC/*.py", cwd=t).out == "src/m.py\n"
    assert ov("glob", "*/*.py", cwd=t).out == "src/m.py\n"
    assert ov("glob", "--level-limit", "1", "pkg/*.py", "src", cwd=t).code == 1
    assert ov("glob", "--level-limit", "2", "pkg/*.py", "src", cwd=t).out == "src/pkg/n.py\n"
    # from a subfolder the pattern is relative to it, and so are the printed paths
    assert ov("glob", "pkg/*.py", cwd=t / "src").out == "pkg/n.py\n"
    assert ov("glob", "*.py", "..", cwd=t / "src").out == "../a.py\n"


def test_compiled_glob_answers_as_wcmatch_does():
    """compile_glob matches wcmatch's translated regexes (with a literal-suffix test in
    front); the answers must be wcmatch's own, for every flag combination."""
    from wcmatch import glob as wc

    from ov.globs import compile_glob

    names = ["a.py", "b.PY", ".h.py", "x/.h.py", "src/m.py", "src/pkg/n.py", "src/pkg/n.pyc",
             "d/e/f/g.toml", "d/data/x/y.toml", "data/z.toml", "a b/c d.txt", "x\\y", "q.c",
             "r/q.h", "é/ü.py", "test_a.py", "t/test_b.py", "t/b_test.py", "py", "a/py", "K.txt",
             "f2.py", "x/f3.py", "a.", "x/a}b", "src/q.toml"]
    pats = ["*.py", "**/*.py", "**/test_*.py", "src/*.py", "src/**", "**/*.{c,h}", "**/[a-c]*.py",
            "**/[!a-z]*", "**/?.py", "**/data/**/*.toml", "**/*.PY", "**/*py", "*", "**", "**/.*",
            "**/c d.txt", "**/x\\\\y", "é/*", "{src,d}/**/*.py", "a/**/b", "**/k.txt",
            "**/*.{py,}", "{src,d}/*.{py,toml}", "**/*{1..3}.py", "**/*.{c,h}", "**/a}b"]
    for p in pats:
        for ic in (False, True):
            for hidden in (False, True):
                flags = wc.GLOBSTAR | wc.BRACE | wc.FORCEUNIX
                flags |= (wc.IGNORECASE if ic else 0) | (wc.DOTGLOB if hidden else 0)
                want = [n for n in names if wc.compile(p, flags=flags).match(n)]
                f = compile_glob(p, ignore_case=ic, hidden=hidden)
                assert [n for n in names if f(n)] == want, (p, ic, hidden)


def test_fields_that_need_stat_are_read_for_the_matches_only(ov, tree, monkeypatch):
    import ov.search.glob as fs

    t = tree({"a.py": "xx", "b.txt": "y", "d/c.py": "zzz"})
    seen = []
    real = os.lstat

    def lstat(p, *a, **k):
        seen.append(os.path.basename(str(p)))
        return real(p, *a, **k)

    monkeypatch.setattr(fs.os, "lstat", lstat)
    r = ov("glob", "--json", "-f", "size", "**/*.py", cwd=t)
    assert paths(r) == [{"path": "a.py", "size": 2}, {"path": "d/c.py", "size": 3}]
    assert sorted(n for n in seen if n in ("a.py", "b.txt", "c.py")) == ["a.py", "c.py"]


def test_glob_leaves_the_regex_engine_and_ignore_library_unloaded(tree):
    """`regex` and ov.search.matcher (~10 ms of imports) serve grep only; pathspec only trees with
    ignore files."""
    t = tree({"a.txt": "", "b.py": ""})
    r, modules = imported_by(["glob", "*.txt"], t)
    assert r.out == "a.txt\n" and not {"regex", "ov.search.matcher", "pathspec"} & modules


def test_common_globs_translate_as_wcmatch_does():
    """Globs of plain characters, *, ?, ** components, simple classes and flat braces are
    translated by ov.globs itself (no wcmatch import); on generated globs and paths its
    answers must be wcmatch's, for every combination of -i and --hidden."""
    import random

    from wcmatch import glob as wc

    from ov import globs

    tokens = ["a", "b", ".", "*", "?", "**", "[ab]", "[!a]", "[a-c]", "[.]", "{a,b}", "{x,.y}",
              "{,a}", "c", "-", "*.py", ".x"]
    names = ["a", "b", ".a", "ab", "a.py", ".x", "x", "c", "a-b", ".y", "A", "B.py", "a.b", "..a"]
    rng = random.Random(7)
    translated = diffs = 0
    for _ in range(1500):
        pattern = "/".join("**" if rng.random() < 0.3 else
                           "".join(rng.choice(tokens) for _ in range(rng.randint(1, 3)))
                           for _ in range(rng.randint(1, 3)))
        if globs._simple_forms(pattern) is None:
            continue
        translated += 1
        for hidden in (False, True):
            for fold in (False, True):
                ours = globs.compile_glob(pattern, ignore_case=fold, hidden=hidden)
                flags = (wc.GLOBSTAR | wc.BRACE | wc.FORCEUNIX | (wc.IGNORECASE if fold else 0)
                         | (wc.DOTGLOB if hidden else 0))
                for _ in range(10):
                    path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
                    diffs += ours(path) != wc.globmatch(path, pattern, flags=flags)
    assert translated > 1000 and diffs == 0


@pytest.mark.parametrize("pattern", ["a\\*b", "{a,{b,c}}", "{1..3}.txt", "[[:alpha:]]*", "/abs/*",
                                     "a//b", "***/x", "a/./b"])
def test_other_globs_go_to_wcmatch(pattern):
    from ov import globs

    assert globs._simple_forms(pattern) is None


def test_a_common_glob_does_not_import_wcmatch(tree):
    t = tree({"a.txt": "x\n", "s/b.py": "y\n"})
    r, modules = imported_by(["glob", "**/*.{py,txt}"], t)
    assert r.out == "a.txt\ns/b.py\n" and not {"wcmatch", "bracex"} & modules



@pytest.mark.parametrize("pattern, path", [
    ("a[+-0]b", "a/b"),  # a range that spans "/" still never matches it
    ("x[ -~]y", "x/y"),
    ("${a,b}", "$a"),  # `${` opens no brace group in wcmatch (bash's rule)
    ("${a,b}", "${a,b}"),
    ("**/${,x}", "d/$"),
])
def test_translated_globs_agree_with_wcmatch_on_these_edges(pattern, path):
    from wcmatch import glob as wc

    from ov import globs

    flags = wc.GLOBSTAR | wc.BRACE | wc.FORCEUNIX
    for hidden in (False, True):
        want = wc.globmatch(path, pattern, flags=flags | (wc.DOTGLOB if hidden else 0))
        assert globs.compile_glob(pattern, hidden=hidden)(path) == want


@pytest.mark.parametrize("pattern,hint", [("/etc/*.conf", "ov glob '*.conf' /etc"),
                                          ("../x/*.py", "ov glob 'x/*.py' .."),
                                          ("/usr/**/lib", "ov glob '**/lib' /usr")])
def test_a_glob_that_can_match_nothing_is_refused_with_the_form_that_works(ov, tmp_path, pattern, hint):
    """An absolute glob, or one that climbs out with `..`, matches paths under the folder
    searched, so never any: it used to answer nothing (exit 1), as if nothing matched."""
    r = ov("glob", "--json", pattern, cwd=tmp_path)
    err = r.json["error"]
    assert r.code == 2 and err["code"] == "invalid_pattern" and hint in err["message"], err


def test_a_glob_over_the_length_limit_is_refused_at_once(tmp_path):
    """Compiling a glob costs time in its length squared (a million characters: minutes);
    one past the limit a query has (8,192 characters) is invalid_pattern, at once."""
    import ov

    with pytest.raises(ov.OvError) as ei:
        ov.glob("a" * 200_000, cwd=tmp_path)
    assert ei.value.code == "invalid_pattern" and "8192" in ei.value.message
    assert ov.glob("a" * 8192, cwd=tmp_path).matches == []


def test_print0_writes_each_name_as_it_is_nul_ended(tmp_path):
    """A name holding a tab or a byte that is not UTF-8 was shown escaped (`a\\x09b.txt`),
    and `ov glob` had no -0: no script could use it. `-0` writes the names' bytes, each
    followed by a NUL, as fd's -0 and `ov grep --files -0` do, whatever -f or -o say."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    root = tmp_path / "t"
    root.mkdir()
    names = [b"a\tb.txt", b"caf\xe9.txt", b"plain.txt", b"new\nline.txt"]
    for n in names:
        (root / os.fsdecode(n)).write_text("x\n")
    (root / "skip.md").write_text("x\n")
    want = b"".join(n + b"\0" for n in sorted(names))
    for extra in ([], ["-f", "path,size"], ["--simple"], ["-o", "json", "--simple"]):
        r = subprocess.run([sys.executable, "-m", "ov", "glob", "*.txt", "-0", *extra], cwd=root,
                           capture_output=True, env={**os.environ, "OV_EMBEDDER": "hash"})
        assert r.returncode == 0 and r.stdout == want, (extra, r.stdout, r.stderr)
    r = subprocess.run([sys.executable, "-m", "ov", "glob", "*.txt"], cwd=root, capture_output=True)
    assert b"a\\x09b.txt\n" in r.stdout  # text output still escapes control characters
    r = subprocess.run([sys.executable, "-m", "ov", "glob", "*.txt", "-0", "-o", "json"], cwd=root,
                       capture_output=True)  # JSON is JSON, as `ov grep -0 -o json`
    assert r.returncode == 0 and r.stdout.startswith(b'{"status":"ok"') and b"\0" not in r.stdout
