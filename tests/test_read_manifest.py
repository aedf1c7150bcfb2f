"""`ov read` (tiers of files and folders), level-restricted search, and `ov manifest`."""

from __future__ import annotations

import sqlite3

import pytest


@pytest.fixture
def cli(ov):
    return lambda *args, **kw: ov([str(a) for a in args], **kw)


FILES = {
    "pkg/mod.py": '"""Tools for parsing request headers."""\n\n\nclass Parser:\n    """Parse one header block."""\n\n'
                  '    def feed(self, line: str) -> None:\n        """Add a line."""\n        self.lines.append(line)\n\n\n'
                  'def parse(text: str) -> dict:\n    """Parse a whole header block into a dict."""\n    return {}\n',
    "pkg/util.py": '"""Small helpers for strings."""\n\n\ndef strip_all(xs):\n    return [x.strip() for x in xs]\n',
    "docs/guide.md": "# Guide\n\nThis guide shows how headers are parsed.\n\n## Install\n\nRun the installer first.\n",
    "notes.txt": "Loose notes about parsing.\n\nSecond paragraph.\n",
}


@pytest.fixture
def indexed(tree, cli):
    root = tree(FILES)
    assert cli("index", root).code == 0
    return root


def _stored(root, path):
    con = sqlite3.connect(root / ".ov" / "index.db")
    try:
        return con.execute("SELECT abstract, overview FROM files WHERE path = ?", (path,)).fetchone()
    finally:
        con.close()


# ---- read: files -------------------------------------------------------------------------------


def test_read_file_levels(indexed, cli):
    a, o = _stored(indexed, "pkg/mod.py")
    assert a and o
    r = cli("read", "pkg/mod.py", "--json", cwd=indexed)
    assert r.code == 0
    assert r.json["result"] == {"path": "pkg/mod.py", "level": 2, "kind": "file",
                                "text": FILES["pkg/mod.py"], "warnings": []}
    assert cli("read", "pkg/mod.py", "-L", "0", "--json", cwd=indexed).json["result"]["text"] == a
    assert cli("read", "pkg/mod.py", "--level", "1", "--json", cwd=indexed).json["result"]["text"] == o
    # text mode prints the tier, newline-terminated
    assert cli("read", "pkg/mod.py", "-L", "0", cwd=indexed).out == a.rstrip("\n") + "\n"
    assert cli("read", "pkg/mod.py", cwd=indexed).out == FILES["pkg/mod.py"]
    # relative to the current folder
    assert cli("read", "mod.py", "-L", "0", "--json", cwd=indexed / "pkg").json["result"]["text"] == a


def test_read_is_current(indexed, cli):
    p = indexed / "pkg/util.py"
    p.write_text('"""Helpers for lists, rewritten."""\n\ndef first(xs):\n    return xs[0]\n')
    assert cli("read", "pkg/util.py", cwd=indexed).out == p.read_text()
    # the stored abstract is stale: the tier is rebuilt from today's text
    a = cli("read", "pkg/util.py", "-L", "0", "--json", cwd=indexed).json["result"]["text"]
    assert "rewritten" in a
    p.unlink()
    r = cli("read", "pkg/util.py", "--json", cwd=indexed)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"


def test_read_errors(indexed, cli, tmp_path):
    (indexed / "new.py").write_text("x = 1\n")
    r = cli("read", "new.py", "--json", cwd=indexed)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    r = cli("read", "missing.md", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "not_found"
    (tmp_path / "out.md").write_text("x\n")
    r = cli("read", str(tmp_path / "out.md"), "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_path"
    r = cli("read", "../../x", "--json", cwd=indexed / "pkg")
    assert r.json["error"]["code"] == "invalid_path"
    r = cli("read", "pkg/mod.py", "-L", "3", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_argument"
    r = cli("read", "pkg/mod.py", cwd=tmp_path)  # no index above
    assert r.code == 2 and "not_found" in r.err


# ---- read: folders -----------------------------------------------------------------------------


def test_read_folder(indexed, cli):
    r = cli("read", "pkg", "--json", cwd=indexed)
    assert r.code == 0
    res = r.json["result"]
    assert res["kind"] == "folder" and res["level"] == 1
    # the overview lists each child with its abstract
    for child in ("mod.py", "util.py"):
        assert child in res["text"]
    assert _stored(indexed, "pkg/mod.py")[0].splitlines()[0][:40] in res["text"]
    l0 = cli("read", "pkg", "-L", "0", "--json", cwd=indexed).json["result"]
    assert l0["kind"] == "folder" and l0["text"]
    l2 = cli("read", "pkg", "-L", "2", "--json", cwd=indexed).json["result"]
    assert l2["text"] == "pkg/mod.py\npkg/util.py\n"
    root = cli("read", ".", "-L", "2", cwd=indexed)
    assert root.out == "docs/guide.md\nnotes.txt\npkg/mod.py\npkg/util.py\n"
    r = cli("read", "empty", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "not_found"


# ---- level-restricted search -------------------------------------------------------------------


def test_search_levels_0_1(indexed, cli):
    r = cli("search", "header parsing", "-L", "0,1", "--json", "--search-type", "keywords", cwd=indexed)
    assert r.code == 0, r.out
    hits = r.json["result"]["hits"]
    assert hits and {h["level"] for h in hits} <= {0, 1}
    for h in hits:
        a, o = _stored(indexed, h["path"])
        assert h["abstract"] == a
        assert h["excerpt"] == {"text": "", "start": 0, "end": 0}
        if h["level"] == 1:
            assert h["overview"] == o
    # text mode shows the abstract's first line for a tier hit
    t = cli("search", "header parsing", "-L", "0,1", "--search-type", "keywords", cwd=indexed)
    first = hits[0]
    assert t.lines[0] == f"{first['path']}:1: {first['abstract'].strip().splitlines()[0].strip()}"
    only2 = cli("search", "header parsing", "-L", "2", "--json", cwd=indexed).json["result"]["hits"]
    assert {h["level"] for h in only2} == {2}


# ---- manifest ----------------------------------------------------------------------------------


def _manifest(cli, root):
    r = cli("manifest", "--json", cwd=root)
    assert r.code == 0, r.out + r.err
    return r.json["result"]


def test_manifest_shape(indexed, cli):
    import ov
    from ov.store import SCHEMA_VERSION

    m = _manifest(cli, indexed)
    assert m["ov_version"] == ov.__version__ and m["schema_version"] == SCHEMA_VERSION
    assert m["index"]["root"] == str(indexed.resolve()) and m["index"]["files"] == 4
    assert m["index"]["vectors"] is True
    assert m["search_types"] == ["hybrid", "keywords", "semantic"]
    assert m["modes"] == ["list", "context"]
    assert "find" in m["commands"] and "read" in m["commands"]
    assert m["levels"] == [0, 1, 2]
    assert m["model"]["max_tokens"] == 256 and m["model"]["dims"] == 384
    assert m["limits"]["max_limit"] == 50 and m["limits"]["max_query_chars"] == 8192
    assert m["limits"]["node_limit"] == 256 and m["limits"]["level_limit"] == 10
    for flag in ("-F", "-i", "-A", "-B", "-C", "--tags", "--exclude-uri", "--node-limit"):
        assert flag in m["grep_flags"]
    t = cli("manifest", cwd=indexed)
    assert "search types:  hybrid keywords semantic" in t.out


def _every_mode_answers(cli, root, m):
    for st in m["search_types"]:
        for mode in m["modes"]:
            r = cli("search", "parse headers", "--search-type", st, "--mode", mode, "--json", cwd=root)
            assert r.code in (0, 1), (st, mode, r.out)
            assert r.json["status"] == "ok"
        for lv in m["levels"]:
            r = cli("search", "parse headers", "--search-type", st, "-L", lv, "--json", cwd=root)
            assert r.json["status"] == "ok", (st, lv, r.out)
    if "find" in m["commands"]:
        assert cli("find", "parse headers", "--json", cwd=root).json["status"] == "ok"
    for flag in ("-F", "-i", "-w"):
        assert cli("grep", flag, "parse", "--json", cwd=root).json["status"] == "ok"


def test_every_advertised_mode_answers(indexed, cli):
    _every_mode_answers(cli, indexed, _manifest(cli, indexed))


def test_no_embed_index_stops_advertising_semantic(tree, cli):
    root = tree(FILES, name="lexical")
    assert cli("index", root, "--no-embed").code == 0
    m = _manifest(cli, root)
    assert m["search_types"] == ["keywords"]
    assert "find" not in m["commands"]
    assert m["index"]["vectors"] is False and m["model"]["available"] is False
    _every_mode_answers(cli, root, m)
    # and what it leaves out really is unsupported
    for args in (("search", "x", "--search-type", "semantic"), ("find", "x")):
        r = cli(*args, "--json", cwd=root)
        assert r.code == 2 and r.json["error"]["code"] == "unsupported"


def test_manifest_without_index(tmp_path, cli):
    m = _manifest(cli, tmp_path)
    assert m["index"] is None
    assert m["search_types"] == ["hybrid", "keywords", "semantic"]
    assert not (tmp_path / ".ov").exists()  # asking does not build anything
