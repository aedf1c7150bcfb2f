"""A new user's first minutes: `-t` takes grep's type names in ranked search too,
`--version`, bare `ov`, a hint for a query that starts with `-`, and `ov status` saying
which files the index left out and why."""

from __future__ import annotations

import pytest

from ov import __version__
from ov.kinds import TYPES, type_filter

FILES = {f"src/{name}": f"widget frobnicate in {name}\n"
         for name in ("a.md", "b.markdown", "c.h", "d.c", "e.cpp", "f.vue", "g.js", "h.py",
                      "CMakeLists.txt", "notes.txt", "k.tf.json", "m.json", "build.gradle", "init.vim")}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from conftest import make_tree, run_inprocess

    base = make_tree(tmp_path_factory.mktemp("ux") / "t", {
        **FILES, "data.bin": b"\x00\x01binary", "big.txt": "x" * 5000})
    import os
    old = os.environ.get("OV_EMBEDDER")
    os.environ["OV_EMBEDDER"] = "hash"
    try:
        r = run_inprocess("index", ".", "--max-filesize", "4096", cwd=base)
    finally:
        if old is None:
            os.environ.pop("OV_EMBEDDER")
        else:
            os.environ["OV_EMBEDDER"] = old
    assert r.code == 0, r.err
    return base


def _paths(ov, root, *args) -> list[str]:
    r = ov("search", "widget frobnicate", "--json", "-n", "50", *args, cwd=root)
    assert r.code in (0, 1), r.out + r.err
    return sorted(h["path"] for h in r.json["result"]["hits"]) if r.code == 0 else []


# ---- -t: every name grep takes, the same files -----------------------------------------


@pytest.mark.parametrize("search_type", ["keywords", "semantic", "hybrid"])
@pytest.mark.parametrize("name", ["markdown", "md", "cpp", "c", "vue", "js", "cmake", "txt",
                                  "terraform", "json", "gradle", "vim"])
def test_type_selects_the_files_grep_selects(ov, root, name, search_type):
    grep = ov("grep", "-l", "widget", "-t", name, "src", cwd=root)
    assert grep.code == 0, grep.err
    want = sorted(grep.out.split())
    assert want  # every name here has a file in the tree
    assert _paths(ov, root, "-t", name, "--search-type", search_type) == want


def test_markdown_is_md(ov, root):
    assert _paths(ov, root, "-t", "markdown") == ["src/a.md", "src/b.markdown"]


def test_several_types_are_or_ed(ov, root):
    assert _paths(ov, root, "-t", "vue", "-t", "py") == ["src/f.vue", "src/h.py"]


def test_every_type_name_is_accepted(ov, root):
    names = sorted(TYPES)
    for part in (names[i:i + 40] for i in range(0, len(names), 40)):  # (OR-ed: any refused fails)
        r = ov("search", "widget", *(a for n in part for a in ("-t", n)), "--search-type", "keywords", "--json",
               cwd=root)
        assert r.code in (0, 1), (part, r.out)


def test_an_added_type_finds_its_files_in_an_index_written_before_it(ov, tmp_path):
    """rg's types that ov learnt later (`ov.kinds.ADDED_TYPES`): an index written before
    stored their files with no type; `-t` still finds them there, in every search type,
    without an `ov index` (an unchanged file is not stored again)."""
    from conftest import make_tree, run_inprocess

    from ov.store.db import connect

    base = make_tree(tmp_path / "t", {"build.gradle": "apply plugin widget frobnicate\n",
                                      "a.py": "widget frobnicate here\n", "n.txt": "widget frobnicate\n"})
    assert run_inprocess("index", ".", cwd=base).code == 0  # (the small embedder: conftest)
    conn = connect(base / ".ov" / "index.db")
    assert conn.execute("SELECT ftype FROM files WHERE path = 'build.gradle'").fetchone() == ("gradle",)
    with conn:  # as an ov that did not know the type wrote it
        conn.execute("UPDATE files SET ftype = '' WHERE path = 'build.gradle'")
        for (cid,) in conn.execute("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                                   "WHERE f.path = 'build.gradle'").fetchall():
            conn.execute("UPDATE chunks_vec SET ftype = '' WHERE chunk_id = ?", (cid,))
    conn.close()
    for search_type in ("keywords", "semantic", "hybrid"):
        assert _paths(ov, base, "-t", "gradle", "--search-type", search_type) == ["build.gradle"], search_type
    assert _paths(ov, base, "-t", "gradle", "-t", "py") == ["a.py", "build.gradle"]
    assert _paths(ov, base, "-t", ".gradle") == ["build.gradle"]  # its extension, as -t takes one
    assert _paths(ov, base, "-t", "txt") == ["n.txt"]  # a type ov knew: its stored files alone
    # the next `ov index` under this ov's table stores the type again, with no file changed
    conn = connect(base / ".ov" / "index.db")
    with conn:
        conn.execute("UPDATE meta SET value = 'an older table' WHERE key = 'types'")
    conn.close()
    r = run_inprocess("index", ".", "--json", cwd=base)
    assert r.code == 0 and r.json["result"]["updated"] == 0, r.out
    conn = connect(base / ".ov" / "index.db")
    assert conn.execute("SELECT ftype FROM files WHERE path = 'build.gradle'").fetchone() == ("gradle",)
    assert {t for (t,) in conn.execute("SELECT v.ftype FROM chunks_vec v JOIN chunks c ON c.id = v.chunk_id "
                                       "JOIN files f ON f.id = c.file_id WHERE f.path = 'build.gradle'")} == {"gradle"}
    conn.close()


def test_an_unknown_type_is_an_error(ov, root):
    r = ov("search", "widget", "-t", "nosuchtype", "--json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    # a bare extension is read as the type of ov's own that holds it (`yml`: yaml), never as
    # one taken from rg, which refuses such a name (`inc` would be bitbake's)
    r = ov("search", "widget", "-t", "inc", "--json", cwd=root)
    assert r.code == 2 and "files named *.inc: .inc" in r.json["error"]["message"]
    r = ov("search", "widget", "-t", "markdwon", "--json", cwd=root)
    assert r.code == 2 and "did you mean markdown?" in r.json["error"]["message"]


def test_an_added_type_reads_the_files_an_earlier_type_claims(ov, tmp_path):
    """`-t readme` is rg's `README*` and `*README`: README.md is stored as `md`, Cargo.lock
    (rg's `lock`) as `toml`, LICENSE.md (`license`) as `md`; a ranked search's `-t` selects
    them as grep does."""
    from conftest import make_tree, run_inprocess

    base = make_tree(tmp_path / "t", {n: f"widget frobnicate in {n}\n" for n in (  # (copies fold into one hit)
        "README", "docs/README.md", "guide.md", "Cargo.lock", "yarn.lock", "a.py", "LICENSE", "LICENSE.md")})
    assert run_inprocess("index", ".", cwd=base).code == 0  # (the small embedder: conftest)
    # (and one of ov's own: `license`'s `LICEN[CS]E.*` takes LICENSE.md, stored as `md`)
    for name, search_types in (("readme", ("keywords", "semantic", "hybrid")), ("lock", ("keywords",)),
                               ("license", ("keywords", "hybrid"))):
        grep = sorted(ov("grep", "-l", "-t", name, "widget", cwd=base).out.split())
        assert grep, name
        for search_type in search_types:
            assert _paths(ov, base, "-t", name, "--search-type", search_type) == grep, (name, search_type)
    import ov as api  # the vectors held in memory (`ov mcp`) filter alike

    with api.Index.open(base) as ix:
        ix.keep_vectors()
        res = ix.search("widget frobnicate", types=["readme"], search_type="semantic", limit=50)
    assert sorted(h.path for h in res.hits) == ["README", "docs/README.md"]


def test_type_filter_needs_names_only_where_a_stored_type_is_shared():
    assert type_filter(["markdown"]) == (("md",), ())
    # rg's `minified`: its files are stored as css, html or js (a type before it), and an
    # index written before ov knew the name stored none under it: any stored type (None),
    # its globs select them
    assert type_filter(["minified"]) == (None, ("*.min.css", "*.min.html", "*.min.js"))
    assert type_filter(["lisp"])[1] == ()  # elisp and julia files are all lisp files
    stored, globs = type_filter(["cpp"])
    assert set(stored) == {"cpp", "c"} and "*.h" in globs and "*.c" not in globs


# ---- --version, bare ov, a query starting with '-' --------------------------------------


def test_version(ov):
    for flag in ("--version", "-V"):
        r = ov(flag)
        assert (r.code, r.out, r.err) == (0, f"ov {__version__}\n", "")


def test_bare_ov_prints_the_help_on_stderr_and_exits_2(ov):
    r = ov()
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("Usage: ov [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nCommands:\n" in r.err and "  search " in r.err  # as written, not one flattened line


def test_an_unknown_option_hints_at_double_dash(ov, tmp_path):
    r = ov("search", "-x", cwd=tmp_path)
    assert r.code == 2
    assert r.err == ("ov: error[invalid_argument]: No such option: -x (`ov search --help` lists "
                     "its options; a query or pattern that starts with '-' goes after '--': ov "
                     "search -- -x)\n")
    r = ov("grep", "--json", "--no-such-flag", "x", cwd=tmp_path)
    assert r.code == 2 and "ov grep -- --no-such-flag" in r.json["error"]["message"]
    # an rg option ov grep lacks says what to do instead
    r = ov("grep", "-P", "(?<=a)b", cwd=tmp_path)
    assert r.code == 2
    assert r.err == ("ov: error[invalid_argument]: No such option: -P (ov grep's regex takes look-around "
                     "and back-references without -P; a pattern that starts with '-' goes after '--': "
                     "ov grep -- -P)\n")
    for flag, said in (("-r", "as grep -r does"), ("-E", "as grep -E"), ("--encoding", "byte order mark"),
                       ("-z", "compressed"), ("-uu", "--no-ignore")):
        assert said in ov("grep", flag, "x", cwd=tmp_path).err
    r = ov("status", "-x", cwd=tmp_path)  # no query to pass: no hint
    assert r.code == 2 and "--" not in r.err.split("-x", 1)[1]


def test_extra_arguments_say_what_put_them_there(ov, tmp_path):
    """`-g drivers/*` unquoted in the kernel's root: the shell hands ov 138 file names, and
    click listed them all in one line. The first few are named, with the likely cause."""
    names = [f"drivers/d{i}" for i in range(20)]
    r = ov("search", "inode cache", "-g", *names, cwd=tmp_path)
    assert r.code == 2
    assert r.err == ("ov: error[invalid_argument]: unexpected extra argument(s): drivers/d1 drivers/d2 "
                     "drivers/d3 and 16 more (the shell expanded the glob after -g into file names before "
                     "ov saw it: quote it, as -g 'drivers/*')\n")
    r = ov("find", "x", "--glob", "a.txt", "b.txt", "--json", cwd=tmp_path)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert r.json["error"]["message"].endswith("quote it, as --glob '*.txt')")
    r = ov("search", "x", "-g", "a.txt", "b.py", cwd=tmp_path)
    assert r.code == 2 and "as -g 'PATTERN')" in r.err
    r = ov("search", "x", "-u", "fs/a", "fs/b", cwd=tmp_path)
    assert r.code == 2 and "(-u takes one file or folder; repeat it for more: -u PATH -u PATH)" in r.err
    r = ov("search", "inode", "cache", "eviction", cwd=tmp_path)
    assert r.code == 2
    assert r.err == ("ov: error[invalid_argument]: unexpected extra argument(s): cache eviction (ov search "
                     "takes one query: quote a query of several words, as ov search \"how are files "
                     "split\"; -u PATH scopes it to a folder)\n")
    r = ov("search", "x", "--exclude-uri", "build/a", "build/b", cwd=tmp_path)  # it takes a glob too
    assert r.code == 2 and "quote it, as --exclude-uri 'build/*')" in r.err
    r = ov("glob", "a.py", "b.py", "c.py", cwd=tmp_path)  # `ov glob *.py`, unquoted
    assert r.code == 2 and r.err.endswith("before ov saw it: quote it, as ov glob '*.py')\n"), r.err
    r = ov("status", "a", "b", cwd=tmp_path)  # no query, no glob: named alone
    assert r.code == 2 and r.err.startswith("ov: error[invalid_argument]: unexpected extra argument(s): a")
    assert "(" not in r.err.split("argument(s)", 1)[1]


def test_an_unknown_option_suggests_only_close_spellings(ov, tmp_path):
    """Click offered `--tags` for `--bogus` and `--help` beside `--threshold`."""
    r = ov("grep", "--bogus", "foo", cwd=tmp_path)
    assert r.code == 2 and "No such option: --bogus (`ov grep --help`" in r.err and "--tags" not in r.err
    r = ov("search", "--thresold", "0.5", "foo", cwd=tmp_path)
    assert r.code == 2 and "No such option: --thresold (did you mean --threshold?)" in r.err
    assert "--help," not in r.err


def test_a_query_after_double_dash_is_searched(ov, root):
    r = ov("search", "--search-type", "keywords", "--", "-widget", cwd=root)
    assert r.code == 0


# ---- ov status: what was skipped and why ------------------------------------------------


def test_status_lists_the_skipped_files_and_why(ov, root):
    r = ov("status", "--json", cwd=root)
    res = r.json["result"]
    assert res["skipped"] == 2
    assert res["skipped_files"] == [{"path": "big.txt", "reason": "size"},
                                    {"path": "data.bin", "reason": "binary"}]
    text = ov("status", cwd=root).out
    assert "skipped:         2 files (1 binary, 1 over --max-filesize)\n" \
           "  big.txt  (over --max-filesize)\n  data.bin  (binary)\n" in text


def test_status_forgets_a_skip_once_the_file_is_indexed(ov, tree):
    root = tree({"a.md": "# A\n\nText.\n", "b.bin": b"\x00bin"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    assert ov("status", "--json", cwd=root).json["result"]["skipped"] == 1
    (root / "b.bin").write_text("now text\n")
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    res = ov("status", "--json", cwd=root).json["result"]
    assert (res["skipped"], res["skipped_files"]) == (0, [])
    assert "skipped:         0 files\n" in ov("status", cwd=root).out


def test_a_skipped_name_that_is_not_utf8_is_listed_escaped(ov, tmp_path):
    import os

    root = tmp_path / "t"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    with open(os.path.join(os.fsencode(root), b"big\xff.txt"), "wb") as f:
        f.write(b"x" * 5000)
    r = ov("index", ".", "--no-embed", "--max-filesize", "4096", cwd=root)
    assert r.code == 0, r.err
    res = ov("status", "--json", cwd=root).json["result"]
    assert res["skipped_files"] == [{"path": "big\\xff.txt", "reason": "size"}]  # the byte as it is


def test_index_stop_takes_no_flag_of_a_run(ov, tmp_path):
    """`ov index --full --stop` used to stop the worker and silently drop --full."""
    r = ov("index", "--full", "--stop", "--json", cwd=tmp_path)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument" and "--full" in r.json["error"]["message"]
    assert not (tmp_path / ".ov").exists()


def test_index_max_filesize_takes_a_size_as_rg(ov, tmp_path):
    """`ov index --max-filesize 20M` (rg's form) was refused as not an integer."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    (root / "big.txt").write_bytes(b"word\n" * 1000)  # 5,000 bytes
    assert ov("index", ".", "--no-embed", "--max-filesize", "4K", cwd=root).code == 0
    res = ov("status", "--json", cwd=root).json["result"]
    assert res["skipped_files"] == [{"path": "big.txt", "reason": "size"}]
    assert ov("index", ".", "--no-embed", "--max-filesize", "1M", cwd=root).code == 0
    assert ov("status", "--json", cwd=root).json["result"]["skipped_files"] == []
    r = ov("index", ".", "--no-embed", "--max-filesize", "1.5M", "--json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert r.json["error"]["field"] == "max_filesize" and "2M" in r.json["error"]["message"]


def test_type_takes_an_extension_no_type_holds_with_its_dot(ov, tmp_path):
    """README and DESIGN: -t takes a type name or an extension, in every command;
    `-t canvas` and `-t lock` were refused (a bare unknown name still is: a misspelt type
    would select nothing, so the error says how to ask for the extension)."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.canvas").write_text('{"idea": 1}\n')
    (root / "poetry.lock").write_text("idea\n")
    (root / "b.md").write_text("idea\n")
    (root / "c.yml").write_text("idea: 1\n")
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    for t, want in ((".canvas", ["a.canvas"]), (".lock", ["poetry.lock"]), ("yml", ["c.yml"]), (".yml", ["c.yml"])):
        assert ov("grep", "-l", "-t", t, "idea", cwd=root).out.split() == want, t
        r = ov("search", "idea", "--search-type", "keywords", "-t", t, "-o", "json", cwd=root)
        assert [h["path"] for h in r.json["result"]["hits"]] == want, t
    r = ov("search", "idea", "-t", "canvas", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument" and ".canvas" in r.json["error"]["message"]


def test_an_extension_with_its_dot_stands_for_itself(ov, tmp_path):
    """`-t .tsx` selected every TypeScript file and `-t d.ts` was read as `ts` (a review
    on a JS project); rg refuses both. `.tsx` and `.d.ts` now select those files alone,
    in grep and in the ranked searches, and a bare `d.ts` is refused as a misspelt type."""
    root = tmp_path / "t"
    root.mkdir()
    for name in ("App.tsx", "api.ts", "api.d.ts", "c.yaml", "d.yml"):
        (root / name).write_text("widget: 1\n")
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    for t, want in ((".tsx", ["App.tsx"]), (".d.ts", ["api.d.ts"]), ("ts", ["App.tsx", "api.d.ts", "api.ts"]),
                    (".ts", ["api.d.ts", "api.ts"]),  # `.ts` too: not the type's .tsx
                    (".yml", ["d.yml"]), ("yml", ["c.yaml", "d.yml"])):
        assert ov("grep", "-l", "-t", t, "widget", cwd=root).out.split() == want, t
        r = ov("search", "widget", "--search-type", "keywords", "-t", t, "-o", "json", "-n", "50", cwd=root)
        # (the files are word for word the same: one hit, the others its duplicates)
        assert sorted(p for h in r.json["result"]["hits"]
                      for p in (h["path"], *(d["path"] for d in h.get("duplicates", [])))) == want, t
    for cmd in (("grep", "widget"), ("search", "widget")):
        r = ov(*cmd, "-t", "d.ts", "-o", "json", cwd=root)
        assert r.code == 2 and r.json["error"]["field"] == "type" and "files named *.d.ts: .d.ts" in r.json["error"]["message"]


def test_a_huge_max_filesize_reads_files_as_they_are(ov, tmp_path):
    """`--max-filesize 100G` asked Python for a 100 GB buffer (MemoryError, exit 2)."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    r = ov("index", ".", "--no-embed", "--max-filesize", "100G", "-o", "json", cwd=root)
    assert r.code == 0, r.out + r.err
    r = ov("index", ".", "--no-embed", "--max-filesize", "999999999999999999G", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["field"] == "max_filesize"


def test_flags_easily_confused_say_which_was_meant(ov, tmp_path):
    """`--mode keywords` meant `--search-type keywords`; rg's `-o` (only-matching) is
    `--output` here (a review of a docs tree tripped on both)."""
    r = ov("search", "x", "--mode", "keywords", cwd=tmp_path)
    assert r.code == 2 and "--search-type keywords" in r.err
    g = ov("grep", "-o", "main", cwd=tmp_path)
    assert g.code == 2 and "--only-matching" in g.err and "unknown output format 'main'" in g.err
