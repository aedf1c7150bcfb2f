"""The library is the product: `ov.Index`, `ov.grep` and `ov.glob` give a Python caller
the answers the command line gives (config merged, options checked, paths resolved)."""

from __future__ import annotations

import pytest

import ov as lib
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
