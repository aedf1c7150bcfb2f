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
        return con.execute("SELECT coalesce((SELECT text FROM chunks WHERE file_id = f.id AND level = 0), ''), "
                           "coalesce((SELECT text FROM chunks WHERE file_id = f.id AND level = 1), '') "
                           "FROM files f WHERE path = ?", (path,)).fetchone()
    finally:
        con.close()


# ---- read: files -------------------------------------------------------------------------------


def test_read_file_levels(indexed, cli):
    a, o = _stored(indexed, "pkg/mod.py")
    assert a and o
    r = cli("read", "pkg/mod.py", "--json", cwd=indexed)
    assert r.code == 0
    assert r.json["result"] == {"path": "pkg/mod.py", "level": 2, "kind": "file",
                                "text": FILES["pkg/mod.py"], "warnings": [], "root": str(indexed)}
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
    # a file new since the last run is read as it is now, and said so (it was not_found
    # while `new.py:1` read it: a review of the Go tree)
    r = cli("read", "new.py", "--json", cwd=indexed)
    assert r.code == 0 and r.json["result"]["text"] == "x = 1\n", r.out
    assert "new since the last `ov index`" in r.json["result"]["warnings"][0]
    r = cli("read", "new.py", "-L", "0", "--json", cwd=indexed)  # its tiers are the index's
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    # ... but not a file the tree's rules leave out (`.env`, a secret in .ovignore): `ov mcp`
    # would hand it to an agent
    (indexed / ".env").write_text("TOKEN=hunter2\n")
    for path in (".env", ".env:1"):
        r = cli("read", path, "--json", cwd=indexed)
        assert r.code == 2 and r.json["error"]["code"] == "not_found" and "hunter2" not in r.out, r.out
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
    # a subfolder is listed by its own abstract
    assert "pkg/ — 2 entries: mod.py, util.py" in cli("read", ".", cwd=indexed).lines
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
    # text mode names a tier hit's tier (never a line the text is not on) and shows its text
    t = cli("search", "header parsing", "-L", "0,1", "--search-type", "keywords", cwd=indexed)
    first = hits[0]
    tier = "[abstract]" if first["level"] == 0 else "[overview]"
    assert t.lines[0].startswith(f"{first['path']}: {tier} "), t.lines[0]
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
    assert m["commands"][-2:] == ["doctor", "mcp"]  # every command this build has
    assert m["levels"] == [0, 1, 2]
    assert m["model"]["max_tokens"] == 256 and m["model"]["dims"] == 384
    assert m["limits"]["max_limit"] == 50 and m["limits"]["max_query_chars"] == 8192
    assert m["limits"]["node_limit"] == 256 and m["limits"]["level_limit"] is None
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
            if st == "semantic" and lv == 1:  # overviews have no vectors: said, not empty
                assert r.code == 2 and r.json["error"]["code"] == "unsupported", r.out
                continue
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


def test_manifest_says_how_many_vectors_an_index_has(tree, cli):
    """`ov manifest` said "with vectors" of an index whose worker had made 16 % of them (a
    review of the Go tree)."""
    root = tree(FILES, name="partial")
    assert cli("index", root).code == 0
    idx = _manifest(cli, root)["index"]
    assert idx["vectors"] and idx["embedded"] == idx["embeddable"] > 1, idx
    assert "files, with vectors)" in cli("manifest", cwd=root).out.splitlines()[1]
    from ov.store import Store

    with Store.open(root / ".ov" / "index.db") as s:  # half of them still to come, as a worker leaves them
        s.conn.execute("UPDATE chunks SET embedded = 0 WHERE embedded = 1 AND id % 2 = 0")
        s.conn.commit()
        done, of = s.coverage()
    assert 0 < done < of
    idx = _manifest(cli, root)["index"]
    assert (idx["embedded"], idx["embeddable"]) == (done, of)
    assert f"files, vectors for {done} of {of} rows ({100 * done // of}%))" in cli("manifest", cwd=root).out


def test_manifest_without_index(tmp_path, cli):
    m = _manifest(cli, tmp_path)
    assert m["index"] is None
    assert m["search_types"] == ["hybrid", "keywords", "semantic"]
    assert not (tmp_path / ".ov").exists()  # asking does not build anything


# ---- golden tiers through `ov read` -----------------------------------------------------------

GOLDEN_SOURCES = {
    "guide.md": (
        "---\n"
        "title: Deploy guide\n"
        "---\n"
        "# Deploying the service\n"
        "\n"
        "This guide walks through a first deployment. It assumes a Linux host.\n"
        "\n"
        "## Requirements\n"
        "\n"
        "You need Python 3.11 and a database. Nothing else is required.\n"
        "\n"
        "## Steps\n"
        "\n"
        "Copy the files to the host. Then start the service.\n"
        "\n"
        "### Rollback\n"
        "\n"
        "Stop the service and restore the previous release.\n"
    ),
    "cache.py": (
        '"""An in-memory LRU cache with a size limit.\n'
        "\n"
        "Entries are evicted oldest first.\n"
        '"""\n'
        "\n"
        "from collections import OrderedDict\n"
        "\n"
        "\n"
        "class LRUCache:\n"
        '    """A mapping that forgets its least recently used keys."""\n'
        "\n"
        "    def __init__(self, size: int = 128) -> None:\n"
        "        self.size = size\n"
        "        self.data = OrderedDict()\n"
        "\n"
        "    def get(self, key, default=None):\n"
        '        """Return the value for key and mark it as recently used."""\n'
        "        if key in self.data:\n"
        "            self.data.move_to_end(key)\n"
        "        return self.data.get(key, default)\n"
        "\n"
        "\n"
        "def make_cache(size: int) -> LRUCache:\n"
        '    """Build a cache of the given size."""\n'
        "    return LRUCache(size)\n"
    ),
    "server.go": (
        "// Package server runs the HTTP front end.\n"
        "package server\n"
        "\n"
        'import "net/http"\n'
        "\n"
        "// Server holds the listener settings.\n"
        "type Server struct {\n"
        "\tAddr string\n"
        "}\n"
        "\n"
        "// Start begins serving requests on Addr.\n"
        "func (s *Server) Start() error {\n"
        "\treturn http.ListenAndServe(s.Addr, nil)\n"
        "}\n"
        "\n"
        "// New returns a server for addr.\n"
        "func New(addr string) *Server {\n"
        "\treturn &Server{Addr: addr}\n"
        "}\n"
    ),
    "client.ts": (
        "/**\n"
        " * A small HTTP client with retries.\n"
        " */\n"
        "\n"
        "export interface Options {\n"
        "  retries: number;\n"
        "}\n"
        "\n"
        "/** Fetches JSON with retries. */\n"
        "export class Client {\n"
        "  constructor(private base: string, private opts: Options) {}\n"
        "\n"
        "  /** Get one resource. */\n"
        "  async get(path: string): Promise<unknown> {\n"
        "    return fetch(this.base + path).then((r) => r.json());\n"
        "  }\n"
        "}\n"
        "\n"
        "export function makeClient(base: string): Client {\n"
        "  return new Client(base, { retries: 3 });\n"
        "}\n"
    ),
}

GOLDEN = {
    ("guide.md", 0): "Deploy guide — This guide walks through a first deployment. It assumes a Linux host.",
    ("guide.md", 1): (
        "# Deploying the service — This guide walks through a first deployment.\n"
        "  ## Requirements — You need Python 3.11 and a database.\n"
        "  ## Steps — Copy the files to the host.\n"
        "    ### Rollback — Stop the service and restore the previous release."),
    ("cache.py", 0): "An in-memory LRU cache with a size limit.",
    ("cache.py", 1): (
        "class LRUCache — A mapping that forgets its least recently used keys.\n"
        "  def __init__(self, size: int=128) -> None\n"
        "  def get(self, key, default=None) — Return the value for key and mark it as recently used.\n"
        "def make_cache(size: int) -> LRUCache — Build a cache of the given size."),
    ("server.go", 0): "Package server runs the HTTP front end.",
    ("server.go", 1): (
        "type Server struct — Server holds the listener settings.\n"
        "func (s *Server) Start() error — Start begins serving requests on Addr.\n"
        "func New(addr string) *Server — New returns a server for addr."),
    ("client.ts", 0): "A small HTTP client with retries.",
    ("client.ts", 1): (
        "export interface Options\n"
        "export class Client — Fetches JSON with retries.\n"
        "  async get(path: string): Promise<unknown> — Get one resource.\n"
        "export function makeClient(base: string): Client"),
}


@pytest.fixture(scope="module")
def golden_root(tmp_path_factory):
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path_factory.mktemp("golden") / "tree", GOLDEN_SOURCES)
    assert run_inprocess(["index", str(root), "--no-embed"]).code == 0
    return root


@pytest.mark.parametrize("path, level", sorted(GOLDEN))
def test_golden_tiers(golden_root, cli, path, level):
    want = GOLDEN[(path, level)]
    r = cli("read", path, "-L", level, "--json", cwd=golden_root)
    assert r.code == 0, r.out
    assert r.json["result"] == {"path": path, "level": level, "kind": "file", "text": want,
                                "warnings": [], "root": str(golden_root)}
    assert cli("read", path, "-L", level, cwd=golden_root).out == want + "\n"


def test_golden_folder(golden_root, cli):
    r = cli("read", ".", cwd=golden_root)
    assert r.out == (
        "cache.py — An in-memory LRU cache with a size limit.\n"
        "client.ts — A small HTTP client with retries.\n"
        "guide.md — Deploy guide — This guide walks through a first deployment. It assumes a Linux host.\n"
        "server.go — Package server runs the HTTP front end.\n")
    r = cli("read", ".", "-L", "0", cwd=golden_root)
    assert r.out == "4 entries: cache.py, client.ts, guide.md, server.go\n"


def test_read_prints_paths_from_the_current_folder(tmp_path):
    """DESIGN: every printed path is relative to the current folder; `ov read` printed the
    root-relative one (`json/decoder.py` when run in json/)."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"json/decoder.py": "x = 1\n", "docs/a.md": "# A\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    r = run_inprocess("read", "../json/decoder.py", "-o", "json", cwd=root / "docs")
    assert r.code == 0 and r.json["result"]["path"] == "../json/decoder.py", r.out
    r = run_inprocess("read", "..", "-L", "2", cwd=root / "docs")
    assert r.code == 0 and r.out.splitlines() == ["a.md", "../json/decoder.py"], r.out
    r = run_inprocess("read", "docs/a.md", "-o", "json", cwd=root)  # from the root: as before
    assert r.json["result"]["path"] == "docs/a.md"
    # a folder is named as cd reaches it: `ov read .` in docs/ is ".", not "../docs"
    for where, arg, want in ((root / "docs", ".", "."), (root / "docs", "..", ".."), (root, "docs", "docs"),
                             (root / "json", "../docs", "../docs")):
        r = run_inprocess("read", arg, "-o", "json", cwd=where)
        assert r.code == 0 and r.json["result"]["path"] == want, (where, arg, r.out)


def test_tag_prints_paths_from_the_current_folder(tmp_path):
    """`ov tag decoder.py k=v` in json/ answered path 'json/decoder.py'."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"json/decoder.py": "x = 1\n", "docs/a.md": "# A\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    r = run_inprocess("tag", "decoder.py", "team=core", "-o", "json", cwd=root / "json")
    assert r.code == 0 and [f["path"] for f in r.json["result"]["files"]] == ["decoder.py"], r.out
    r = run_inprocess("tag", "..", "-r", "k=v", "-o", "json", cwd=root / "json")
    assert sorted(f["path"] for f in r.json["result"]["files"]) == ["../docs/a.md", "decoder.py"], r.out


def test_manifest_says_what_this_tree_and_build_will_do(tmp_path, monkeypatch):
    """The manifest gave the built-in defaults whatever the tree's config said, said the
    model was available when its files were missing (every semantic search then failed),
    and answered ok over a config every other command refuses."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {f"f{i}.txt": f"needle {i}\n" for i in range(3)})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    (root / ".ov" / "config.toml").write_text('limit = 2\nnode-limit = 3\nsearch-type = "keywords"\n')
    m = run_inprocess("manifest", "-o", "json", cwd=root, env=env).json["result"]
    assert (m["limits"]["default_limit"], m["limits"]["node_limit"], m["limits"]["default_search_type"]) == \
        (2, 3, "keywords")
    (root / ".ov" / "config.toml").write_text('limit = "x"\n')
    r = run_inprocess("manifest", "-o", "json", cwd=root, env=env)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    (root / ".ov" / "config.toml").unlink()
    monkeypatch.delenv("OV_EMBEDDER", raising=False)
    m = run_inprocess("manifest", "-o", "json", cwd=root, env={"OV_MODEL": str(tmp_path / "none.onnx")}).json["result"]
    assert m["model"]["files_found"] is False and m["model"]["available"] is False
    assert m["search_types"] == ["keywords"] and "find" not in m["commands"]


def test_read_of_a_skipped_file_says_why(ov, tree):
    """`ov read` of a file the index skipped said only 'not in the index'."""
    root = tree({"a.md": "# A\n", "big.txt": "x" * 5000 + "\n", "bin.dat": b"\x00\x01binary"})
    assert ov("index", ".", "--no-embed", "--max-filesize", "4K", cwd=root).code == 0
    r = ov("read", "big.txt", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    assert "skipped it (over --max-filesize" in r.json["error"]["message"]
    assert "skipped it (binary" in ov("read", "bin.dat", "-o", "json", cwd=root).json["error"]["message"]
    assert "skipped" not in ov("read", "none.md", "-o", "json", cwd=root).json["error"]["message"]
    # a file new (or renamed) since the last run: there on disk, not yet indexed
    (root / "renamed.md").write_text("# A, renamed\n")
    msg = ov("read", "renamed.md", "-L", "0", "-o", "json", cwd=root).json["error"]["message"]
    assert "new since the last `ov index`" in msg, msg
    r = ov("read", "renamed.md", "-o", "json", cwd=root)  # its text: read now, and said so
    assert r.code == 0 and "new since the last `ov index`" in r.json["result"]["warnings"][0], r.out
    assert "new since" not in ov("read", "none.md", "-o", "json", cwd=root).json["error"]["message"]
    # an ignored file: `ov index` would leave it out again, so it is not what the message
    # asks for (node_modules/express/index.js read "run `ov index`")
    (root / ".gitignore").write_text("vendor/\n")
    (root / ".git").mkdir()  # a work tree: .gitignore counts only in one
    (root / "vendor").mkdir()
    (root / "vendor" / "lib.js").write_text("x = 1\n")
    msg = ov("read", "vendor/lib.js", "-L", "1", "-o", "json", cwd=root).json["error"]["message"]
    assert "ignore rules" in msg and "`ov grep PATTERN` with its path" in msg and "run `ov index`" not in msg, msg
