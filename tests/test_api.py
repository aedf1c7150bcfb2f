"""The library is the product: `ov.Index`, `ov.grep` and `ov.glob` give a Python caller
the answers the command line gives (config merged, options checked, paths resolved)."""

from __future__ import annotations

import pytest

import ov as lib
from conftest import make_tree
from ov.render import to_data

FILES = {
    "src/chunker.py": '"""Split files into chunks."""\n\ndef split_chunks(text):\n    return text.split("\\n\\n")\n',
    "src/walker.py": "def walk(root):\n    # visit every folder\n    return []\n",
    "docs/guide.md": "# Guide\n\nHow files are split into chunks and indexed.\n",
    "build/out.py": "def split_chunks(): pass\n",
    ".gitignore": "build/\n",
    ".ov/config.toml": "limit = 2\n",
}


@pytest.fixture
def indexed(tree, ov):
    root = tree(FILES)
    assert ov("index", cwd=root).code == 0
    return root


def _hits(res) -> list[tuple[str, int, float]]:
    return [(h.path, h.start_line, h.score) for h in res.hits]


def test_search_matches_the_cli(indexed, ov):
    cli = ov("search", "split chunks", "--json", cwd=indexed).json["result"]
    with ov_index(indexed) as ix:
        res = ix.search("split chunks")
    assert [(h["path"], h["start_line"], h["score"]) for h in cli["hits"]] == _hits(res)
    assert len(res.hits) == 2  # the tree's config (limit = 2) applies to the library too
    assert res.search_type == cli["search_type"]


def test_find_and_keywords_match_the_cli(indexed, ov):
    for args, call in ((["find", "walk folders"], "find"),
                       (["search", "chunks", "--search-type", "keywords", "-n", "5"], "keywords")):
        cli = ov(*args, "--json", cwd=indexed).json["result"]
        with ov_index(indexed) as ix:
            res = (ix.find("walk folders") if call == "find"
                   else ix.search("chunks", search_type="keywords", limit=5))
        assert [(h["path"], h["start_line"], h["score"]) for h in cli["hits"]] == _hits(res)
        assert res.hits


def test_grep_matches_the_cli(indexed, ov):
    cli = ov("grep", "split", "--json", cwd=indexed).json["result"]
    records, stats = _grep("split", indexed)
    got = [to_data(r) for r in records]
    assert got == cli["matches"]
    assert stats.count == cli["count"] and stats.files == cli["files"]
    assert all(not m["path"].startswith("build/") for m in got)  # .gitignore honoured


def _grep(pattern, cwd):
    records, stats = lib.grep(pattern, cwd=cwd)
    return list(records), stats


def test_glob_matches_the_cli(indexed, ov):
    cli = ov("glob", "**/*.py", "--json", cwd=indexed).json["result"]
    res = lib.glob("**/*.py", cwd=indexed)
    assert res.matches == cli["matches"] == ["src/chunker.py", "src/walker.py"]


def test_options_are_checked_as_the_cli_checks_them(indexed):
    with ov_index(indexed) as ix:
        with pytest.raises(lib.OvError) as e:
            ix.search("x", limit=0)
        assert e.value.code == "invalid_argument"
        with pytest.raises(lib.OvError) as e:
            ix.read("../outside.txt")
        assert e.value.code == "invalid_path"
        assert ix.read("docs/guide.md", level=2).text.startswith("# Guide")
        assert ix.status().settings["limit"] == {"value": 2, "source": ".ov/config.toml"}


def test_open_without_an_index(tmp_path):
    with pytest.raises(lib.OvError) as e:
        lib.Index.open(tmp_path)
    assert e.value.code == "not_found"
    (tmp_path / "a.md").write_text("# A\n\nchunks of text\n")
    heard: list[str] = []
    with lib.Index.open(tmp_path, auto_index=True, notice=heard.append) as ix:
        assert [h.path for h in ix.search("chunks").hits] == ["a.md"]
    assert heard and "first use" in heard[0]


def ov_index(root):
    return lib.Index.open(root)


def test_grep_modes_and_files_match_the_cli(indexed, ov):
    """-c, -l, context lines and --files: the same records through the library."""
    cli = ov("grep", "-c", "split", "--json", cwd=indexed).json["result"]
    records, _ = lib.grep("split", cwd=indexed, mode="count")
    assert {r.path: r.count for r in records} == cli["counts"]
    cli = ov("grep", "-l", "-i", "CHUNKS", "--json", cwd=indexed).json["result"]
    records, _ = lib.grep("CHUNKS", cwd=indexed, mode="files", ignore_case=True)
    assert [r.path for r in records] == cli["paths"]
    cli = ov("grep", "-C", "1", "return", "src", "--json", cwd=indexed).json["result"]
    records, stats = lib.grep("return", ["src"], cwd=indexed, before=1, after=1)
    assert [to_data(r) for r in records] == cli["matches"] and stats.count == cli["count"]
    cli = ov("grep", "--files", "-t", "py", "--json", cwd=indexed).json["result"]
    found, _ = lib.files(cwd=indexed, types=["py"])
    assert list(found) == cli["paths"] == ["src/chunker.py", "src/walker.py"]


def test_glob_fields_and_search_filters_match_the_cli(indexed, ov):
    cli = ov("glob", "**/*", "-f", "name,type,size", "--json", cwd=indexed).json["result"]
    res = lib.glob("**/*", cwd=indexed, fields=("name", "type", "size"))
    assert [to_data(m) for m in res.matches] == cli["matches"]
    cli = ov("search", "chunks", "-t", "md", "-u", "docs", "--search-type", "keywords", "--json",
             cwd=indexed).json["result"]
    with ov_index(indexed) as ix:
        res = ix.search("chunks", types=["md"], uri=["docs"], search_type="keywords", cwd=indexed)
    assert [(h["path"], h["start_line"], h["score"]) for h in cli["hits"]] == _hits(res)
    assert [h.path for h in res.hits] == ["docs/guide.md"]


def test_the_readme_example_runs(tree, capsys):
    """The README's "Python API" example, as written, on a tree of its own."""
    from pathlib import Path  # noqa: PLC0415

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    root = tree({"README.md": "# A tree\n\nHow files are split into chunks.\n",
                 "src/chunks.py": "def split_chunks(text):\n    return text.split('\\n\\n')\n"})
    exec(compile(code.replace("path/to/tree", str(root)), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "README.md 1 " in out and "A tree" in out and "['src/chunks.py']" in out


def test_wrong_argument_types_are_invalid_argument_naming_the_argument(tmp_path, monkeypatch):
    """A program may hand anything: a wrong type is `invalid_argument` with its field,
    not an AttributeError from deep inside; a lone string where a list goes is one item
    (it was split into characters: `types="md"` asked for type 'm'); paths may be
    `pathlib.Path`s; a closed Index says so (it said the index was damaged)."""
    import pathlib
    import pickle

    import ov

    root = make_tree(tmp_path / "t", {"docs/a.md": "# Retry\n\nretry with backoff\n",
                                      "src/b.py": "def retry():\n    return 1\n"})
    monkeypatch.chdir(root)
    ov.index(".", embed=False)
    ix = ov.Index.open(".")
    bad = [(lambda: ix.search(123), "query"), (lambda: ix.search("retry", limit="5"), "limit"),
           (lambda: ix.search("retry", limit=2.5), "limit"), (lambda: ix.search("retry", threshold="1"), "threshold"),
           (lambda: ix.context("retry", max_tokens="500"), "max_tokens"),
           (lambda: ix.read("docs/a.md", level="1"), "level"), (lambda: ix.read(3), "path"),
           (lambda: ov.grep(None), "pattern"), (lambda: ov.grep("x", node_limit="5"), "node_limit"),
           (lambda: ov.grep("x", before=1.5), "before"), (lambda: ov.grep("x", timeout=-1), "timeout"),
           (lambda: ov.glob(None), "pattern"), (lambda: ov.grep("x", cwd=root / "docs" / "a.md"), "cwd"),
           (lambda: ix.find("retry", search_type="keywords"), "search_type"),
           (lambda: ix.tag("docs/a.md", [("a b", "c")]), "tags"), (lambda: ix.tag("docs/a.md", [("k\n", "v")]), "tags"),
           (lambda: ix.tag("docs/a.md", [(1, 2)]), "tags"),
           (lambda: ov.Index.open(root / "typo", auto_index=True), "path"),
           (lambda: ix.context("retry", detail=5), "detail"), (lambda: ix.context("retry", detail={"zzz": "full"}), "detail"),
           (lambda: ix.read("docs/a.md", cwd=5), "cwd"), (lambda: ix.tag("docs/a.md", 5), "tags"),
           (lambda: ov.glob("*", fields=5), "fields"), (lambda: ov.files(["nope"]), "path")]
    for call, field in bad:
        with pytest.raises(ov.OvError) as ei:
            call()
            pytest.fail(f"no error for {field}")
        assert ei.value.field == field, (field, ei.value.code, ei.value.message)
        assert ei.value.code in ("invalid_argument", "invalid_path", "not_found"), ei.value.message
    assert not (root / "typo").exists()  # a typo is not a new, empty tree
    # a lone string is one item; Path objects are paths; an integer level is a tier
    assert [h.path for h in ix.search("retry", search_type="keywords", types="md").hits] == ["docs/a.md"]
    assert [h.path for h in ix.search("retry", search_type="keywords", uri="src").hits] == ["src/b.py"]
    assert [h.path for h in ix.search("retry", search_type="keywords", uri=pathlib.Path("src")).hits] == ["src/b.py"]
    assert ix.search("retry", search_type="keywords", level=2).total == ix.search("retry", search_type="keywords").total
    assert ix.read(pathlib.Path("docs/a.md")).path == "docs/a.md"
    recs, _ = ov.grep("retry", exclude="docs")
    assert [r.path for r in recs] == ["src/b.py"]
    recs, _ = ov.grep("retry", pathlib.Path("docs"))
    assert [r.path for r in recs] == ["docs/a.md"]
    assert ix.tag("docs/a.md", "team=core").files[0].tags == {"team": "core"}
    with ov.Index.open(root, readonly=True) as ro:  # the caller's choice, said as such
        with pytest.raises(ov.OvError, match="readonly=True"):
            ro.tag("docs/a.md", "team=x")
    assert ix.tag("docs/a.md", ("owner", "me")).files[0].tags["owner"] == "me"  # one pair
    # errors cross a process pool whole, their class kept
    e = pickle.loads(pickle.dumps(ov.OvError("index_busy", "busy", field="db")))
    assert (e.code, e.message, e.retryable, e.field) == ("index_busy", "busy", True, "db")
    from ov.store.db import Superseded

    assert type(pickle.loads(pickle.dumps(Superseded(root / "x.db")))) is Superseded
    ix.close()
    with pytest.raises(ov.OvError) as ei:
        ix.status()
    assert "closed" in ei.value.message and "damaged" not in ei.value.message
    with pytest.raises(ov.OvError, match="closed"):
        ix.search("retry")
    with pytest.raises(ov.OvError, match="closed"):
        ix.keep_vectors()
