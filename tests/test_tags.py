"""`ov tag`: set/append/remove, folders, strict k=v, persistence, and --tags filtering."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import make_tree, run_inprocess


@pytest.fixture
def cli(ov):
    return lambda *args, **kw: ov([str(a) for a in args], **kw)


FILES = {
    "a.py": "def alpha():\n    return 'ranking words'\n",
    "b.py": "def beta():\n    return 'other words'\n",
    "sub/c.md": "# C\n\nSome notes about ranking.\n",
    "sub/deep/d.md": "# D\n\nMore notes.\n",
    "outside.txt": "not indexed\n",
}


@pytest.fixture
def indexed(tree, cli):
    root = tree(FILES)
    (root / ".ovignore").write_text("outside.txt\n")
    assert cli("index", root).code == 0
    return root


def _tags(cli, root, path):
    """The tags stored in the index, read straight from the database."""
    con = sqlite3.connect(root / ".ov" / "index.db")
    try:
        (raw,) = con.execute("SELECT tags FROM files WHERE path = ?", (path,)).fetchone()
    finally:
        con.close()
    return json.loads(raw)


def test_append_set_remove(indexed, cli):
    r = cli("tag", "a.py", "team=search", "tier=gold", "--json", cwd=indexed)
    assert r.code == 0, r.out
    res = r.json["result"]
    assert res == {"mode": "append", "count": 1, "root": str(indexed),  # DESIGN: the root, once
                   "files": [{"path": "a.py", "tags": {"team": "search", "tier": "gold"}}]}
    # append overwrites a key and keeps the rest
    r = cli("tag", "a.py", "tier=silver", "x=1", "--json", cwd=indexed)
    assert r.json["result"]["files"][0]["tags"] == {"team": "search", "tier": "silver", "x": "1"}
    # remove: k= drops whatever the value, k=v only when it matches
    r = cli("tag", "a.py", "--mode", "remove", "x=", "tier=gold", "--json", cwd=indexed)
    assert r.json["result"]["files"][0]["tags"] == {"team": "search", "tier": "silver"}
    r = cli("tag", "a.py", "--mode", "remove", "tier=silver", "--json", cwd=indexed)
    assert r.json["result"]["files"][0]["tags"] == {"team": "search"}
    # set replaces everything; set with no tags clears
    r = cli("tag", "a.py", "--mode", "set", "only=this", "--json", cwd=indexed)
    assert r.json["result"]["files"][0]["tags"] == {"only": "this"}
    r = cli("tag", "a.py", "--mode", "set", "--json", cwd=indexed)
    assert r.json["result"]["files"][0]["tags"] == {}


def test_text_output(indexed, cli):
    r = cli("tag", "a.py", "b=2", "a=1", cwd=indexed)
    assert r.code == 0 and r.out == "a.py\ta=1,b=2\n"


def test_folder_needs_recursive(indexed, cli):
    r = cli("tag", "sub", "k=v", "--json", cwd=indexed)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert r.json["error"]["field"] == "recursive"
    r = cli("tag", "sub", "k=v", "--recursive", "--json", cwd=indexed)
    assert r.code == 0
    assert [f["path"] for f in r.json["result"]["files"]] == ["sub/c.md", "sub/deep/d.md"]
    assert _tags(cli, indexed, "sub/deep/d.md") == {"k": "v"}
    assert _tags(cli, indexed, "a.py") == {}
    # relative to the current folder, named and printed (DESIGN: every printed path is)
    r = cli("tag", "deep", "k=w", "-r", "--json", cwd=indexed / "sub")
    assert [f["path"] for f in r.json["result"]["files"]] == ["deep/d.md"]
    assert _tags(cli, indexed, "sub/c.md") == {"k": "v"}
    # the root itself
    r = cli("tag", ".", "all=yes", "-r", "--json", cwd=indexed)
    assert r.json["result"]["count"] == 4


@pytest.mark.parametrize("bad", ["bare", "=v", "sp ace=1", "a b"])
def test_invalid_tags_named(indexed, cli, bad):
    r = cli("tag", "a.py", "ok=1", bad, "--json", cwd=indexed)
    assert r.code == 2
    err = r.json["error"]
    assert err["code"] == "invalid_argument" and repr(bad) in err["message"]
    assert _tags(cli, indexed, "a.py") == {}  # nothing was written


def test_empty_value_and_missing_tags(indexed, cli):
    r = cli("tag", "a.py", "k=", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_argument" and "'k='" in r.json["error"]["message"]
    r = cli("tag", "a.py", "--mode", "remove", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_argument"
    r = cli("tag", "a.py", "k=v", "--mode", "merge", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_argument" and r.json["error"]["field"] == "mode"


def test_paths_not_found_and_outside(indexed, cli, tmp_path):
    r = cli("tag", "outside.txt", "k=v", "--json", cwd=indexed)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    r = cli("tag", "nope.py", "k=v", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "not_found"
    (tmp_path / "elsewhere.py").write_text("x\n")
    r = cli("tag", str(tmp_path / "elsewhere.py"), "k=v", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_path"
    r = cli("tag", "../elsewhere.py", "k=v", "--json", cwd=indexed)
    assert r.json["error"]["code"] == "invalid_path"


def test_tags_survive_reindex(indexed, cli):
    cli("tag", "a.py", "team=search", cwd=indexed)
    cli("tag", "b.py", "team=core", cwd=indexed)
    # a.py: same content, new mtime; b.py: changed content
    st = os.stat(indexed / "a.py")
    os.utime(indexed / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    (indexed / "b.py").write_text("def beta():\n    return 'changed words'\n")
    r = cli("index", indexed, "--json")
    assert r.json["result"]["updated"] == 1
    assert _tags(cli, indexed, "a.py") == {"team": "search"}
    assert _tags(cli, indexed, "b.py") == {"team": "core"}


def test_front_matter_tags(tree, cli):
    root = tree({"n.md": "---\ntitle: N\ntags: [team=docs, draft]\n---\n# N\n\nText.\n"})
    assert cli("index", root).code == 0
    assert _tags(cli, root, "n.md") == {"team": "docs"}
    # a tag set by `ov tag` wins over the front matter on re-index
    cli("tag", "n.md", "team=search", cwd=root)
    (root / "n.md").write_text("---\ntags: [team=docs]\n---\n# N\n\nText changed.\n")
    cli("index", root)
    assert _tags(cli, root, "n.md") == {"team": "search"}


# ---- --tags filters, AND, before the limit --------------------------------------------------------


@pytest.fixture
def many(tree, cli):
    files = {f"f{i:02d}.txt": ("ranking " * (20 - i)) + f"document number {i}\n" for i in range(16)}
    root = tree(files, name="many")
    assert cli("index", root).code == 0
    return root


def _paths(r):
    return [h["path"] for h in r.json["result"]["hits"]]


@pytest.mark.parametrize("cmd", [("search", "--search-type", "keywords"), ("search",), ("find",)])
def test_tags_filter_and_before_limit(many, cli, cmd):
    full = cli(*cmd, "ranking document", "-n", "50", "--json", cwd=many)
    ranked = _paths(full)
    assert len(ranked) == 16
    low = ranked[-2:]  # the two worst-ranked files carry both tags
    for p in low:
        cli("tag", p, "team=a", "kind=x", cwd=many)
    cli("tag", ranked[0], "team=a", cwd=many)  # one tag only: left out by AND
    cli("tag", ranked[1], "kind=x", cwd=many)
    r = cli(*cmd, "ranking document", "-n", "2", "--tags", "team=a", "--tags", "kind=x", "--json", cwd=many)
    assert r.code == 0, r.out
    assert sorted(_paths(r)) == sorted(low)
    assert all(h["tags"] == {"kind": "x", "team": "a"} for h in r.json["result"]["hits"])
    r = cli(*cmd, "ranking document", "-n", "2", "--tags", "team=b", "--json", cwd=many)
    assert r.code == 1
    r = cli(*cmd, "ranking document", "--tags", "team", "--json", cwd=many)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


def test_tags_filter_grep(many, cli):
    cli("tag", "f15.txt", "team=a", "kind=x", cwd=many)
    cli("tag", "f14.txt", "team=a", cwd=many)
    r = cli("grep", "document", "--tags", "team=a", "--tags", "kind=x", "--node-limit", "1", "--json", cwd=many)
    assert r.code == 0, r.out
    assert [m["path"] for m in r.json["result"]["matches"]] == ["f15.txt"]


def test_tags_in_search_hits_and_glob_fields(many, cli):
    cli("tag", "f00.txt", "team=a", cwd=many)
    r = cli("glob", "f0[01].txt", "-f", "path,tags", "--json", cwd=many)
    assert r.json["result"]["matches"] == [{"path": "f00.txt", "tags": {"team": "a"}},
                                           {"path": "f01.txt", "tags": {}}]


def test_store_paths_with_tags(many, cli):
    from ov.store import Store

    cli("tag", "f03.txt", "team=a", "kind=x", cwd=many)
    cli("tag", "f04.txt", "team=a", cwd=many)
    with Store.open(many / ".ov" / "index.db", readonly=True) as st:
        assert st.paths_with_tags({"team": "a"}) == {"f03.txt", "f04.txt"}
        assert st.paths_with_tags([("team", "a"), ("kind", "x")]) == {"f03.txt"}
        assert st.paths_with_tags({"team": "zzz"}) == set()
        assert len(st.paths_with_tags({})) == 16


def test_glob_tags_filter_before_the_node_limit(tree, cli):
    files = {f"f{i:02}.md": f"# {i}\n" for i in range(20)}
    root = tree(files)
    assert cli("index", root, "--no-embed").code == 0
    assert cli("tag", root / "f17.md", "team=docs", cwd=root).code == 0
    assert cli("tag", root / "f18.md", "team=docs", "lang=en", cwd=root).code == 0
    r = cli("glob", "*.md", "--tags", "team=docs", "--node-limit", "1", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["matches"] == ["f17.md"] and r.json["result"]["truncated"]
    r = cli("glob", "*.md", "--tags", "team=docs", "--tags", "lang=en", "-f", "path,tags", "-o", "json", cwd=root)
    assert r.json["result"]["matches"] == [{"path": "f18.md", "tags": {"lang": "en", "team": "docs"}}]
    r = cli("glob", "*.md", "--tags", "bare", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"


@pytest.mark.parametrize("bad", ["k=a\nb", "=v", "bare"])
def test_every_command_reads_a_tags_filter_the_same_way(tmp_path, bad):
    """grep and glob trimmed `--tags` and refused an empty value; search did the
    reverse: the same argument was refused by one and answered by the other. One reading
    now (ov.tags.parse_filters): each of these is invalid_argument in every command; a
    filter is matched exactly, so it reaches the keys and values front matter stores
    (`área=norte`, `owner name=Ann Lee`, `draft=`), which `ov tag` would refuse."""
    root = make_tree(tmp_path / "t", {"a.md": "---\ntags: [team=search, área=norte, \"owner name=Ann Lee\", draft=]"
                                              "\n---\n# A\n\nneedle\n", "b.md": "needle\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    for args in (["grep", "needle"], ["glob", "*.md"], ["search", "needle"], ["find", "needle"]):
        r = run_inprocess(*args, "--tags", bad, "-o", "json", cwd=root, env=env)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_argument", (args, r.out)
        assert r.json["error"]["field"] == "tags", (args, r.out)
    for good in ("team=search", "área=norte", "owner name=Ann Lee", "draft="):
        for args in (["grep", "-l", "needle"], ["glob", "*.md"],
                     ["search", "needle", "--search-type", "keywords"]):
            r = run_inprocess(*args, "--tags", good, "-o", "json", cwd=root, env=env)
            assert r.code == 0, (good, args, r.out)
    for other in (" team = search ", "team=Search"):  # exact: no trimming, no folding
        assert run_inprocess("grep", "-l", "needle", "--tags", other, cwd=root, env=env).code == 1
    r = run_inprocess("tag", "a.md", "k=a\nb", "-o", "json", cwd=root, env=env)  # ov tag stays strict
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument", r.out
    assert run_inprocess("tag", "a.md", "a b=c", cwd=root, env=env).code == 2


@pytest.mark.parametrize("full", [False, True], ids=["incremental", "full"])
def test_front_matter_tags_follow_the_file_and_ov_tag_wins(tmp_path, full):
    """A tag the front matter changed or dropped stayed in the index for good (the stored
    tags were merged over the ones read again, so the first value read won), even after
    `ov index --full`. A tag set by `ov tag` still wins over the front matter."""
    root = make_tree(tmp_path / "t", {"plan.md": "---\ntags: [status=draft, team=core]\n---\n# Plan\n\nbody\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    assert run_inprocess("tag", "plan.md", "owner=me", cwd=root, env=env).code == 0
    again = ["index", ".", "--no-embed", *(["--full"] if full else [])]

    def tags():
        r = run_inprocess("glob", "plan.md", "-f", "path,tags", "-o", "json", cwd=root, env=env)
        return r.json["result"]["matches"][0]["tags"]

    (root / "plan.md").write_text("---\ntags: [status=final]\n---\n# Plan\n\nbody\n")
    assert run_inprocess(*again, cwd=root, env=env).code == 0
    assert tags() == {"owner": "me", "status": "final"}
    r = run_inprocess("search", "body", "--tags", "status=final", "--search-type", "keywords", cwd=root, env=env)
    assert r.code == 0
    assert run_inprocess("tag", "plan.md", "team=x", cwd=root, env=env).code == 0
    (root / "plan.md").write_text("---\ntags: [status=done, team=y]\n---\n# Plan\n\nbody\n")
    assert run_inprocess(*again, cwd=root, env=env).code == 0
    assert tags() == {"owner": "me", "status": "done", "team": "x"}


def test_front_matter_longer_than_a_passage_is_followed_too(tmp_path):
    """The front matter as last indexed was read from the file's first passage alone: one
    longer than a passage parsed as none, so its tags stayed stale for good."""
    summary = " ".join(f"Sentence {i} of a long summary about canary releases." for i in range(60))
    text = "---\ntitle: Deploying\nsummary: >\n  " + summary + "\ntags: [team=core, stage=draft]\n---\n# Deploy\n\ncanaries\n"
    from ov.store import Store

    root = make_tree(tmp_path / "t", {"deploy.md": text})
    env = {"OV_EMBEDDER": "hash"}
    for full in ([], ["--full"]):
        assert run_inprocess("index", ".", "--no-embed", *full, cwd=root, env=env).code == 0
        with Store.open(root / ".ov" / "index.db") as s:  # the front matter spans passages
            assert s.q1("SELECT count(*) FROM chunks WHERE level = 2 AND start < ?", (len(text) - 30,)) > 1
        (root / "deploy.md").write_text(text := text.replace("stage=draft", "stage=final")
                                        if "draft" in text else text.replace("stage=final", "stage=done"))
        assert run_inprocess("index", ".", "--no-embed", *full, cwd=root, env=env).code == 0
        r = run_inprocess("glob", "deploy.md", "-f", "path,tags", "-o", "json", cwd=root, env=env)
        want = "final" if not full else "done"
        assert r.json["result"]["matches"][0]["tags"] == {"stage": want, "team": "core"}, (full, r.out)


def test_grep_files_honours_tags(tmp_path):
    """`ov grep --files --tags` listed every file whatever the filter, and never checked it."""
    root = make_tree(tmp_path / "t", {"a.md": "---\ntags: [team=core]\n---\n# A\n\nneedle\n", "b.md": "needle\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    r = run_inprocess("grep", "--files", "--tags", "team=core", cwd=root, env=env)
    assert (r.code, r.out) == (0, "a.md\n"), r.out
    assert run_inprocess("grep", "--files", "--tags", "nosuch=tag", cwd=root, env=env).code == 1
    assert run_inprocess("grep", "--files", "--tags", "bare", cwd=root, env=env).code == 2
    assert run_inprocess("grep", "--files", cwd=root, env=env).out == "a.md\nb.md\n"


def test_the_same_key_twice_is_and_in_every_command_and_pairs_are_filters_too(tmp_path):
    """`--tags team=core --tags team=xx` is AND (nothing matches) in search; grep and glob
    kept the last one. The library takes (key, value) pairs as filters, as `tag` does."""
    import ov

    root = make_tree(tmp_path / "t", {"c.md": "---\ntags: [team=core]\n---\n# C\n\nquokka\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    both = ["--tags", "team=core", "--tags", "team=xx"]
    for args in (["grep", "-l", "quokka"], ["glob", "*.md"], ["search", "quokka", "--search-type", "keywords"]):
        assert run_inprocess(*args, *both, cwd=root, env=env).code == 1, args
        assert run_inprocess(*args, "--tags", "team=core", cwd=root, env=env).code == 0, args
    recs, _ = ov.grep("quokka", cwd=root, tags=[("team", "core")])
    assert [r.path for r in recs] == ["c.md"]
    assert ov.glob("*.md", cwd=root, tags=("team", "core")).matches == ["c.md"]
    with ov.Index.open(root) as ix:
        assert [h.path for h in ix.search("quokka", search_type="keywords", tags=[("team", "core")]).hits] == ["c.md"]


def test_a_renamed_or_moved_file_keeps_its_tags(ov, tree):
    """Tags of `ov tag` were lost when a note was renamed or moved, though its vectors were
    reused (the help says tags are kept across re-indexing)."""
    root = tree({"Recipes/loaf.md": "---\ntags: [status=draft]\n---\n# Country loaf\n\nFlour, water, salt.\n",
                 "Recipes/soup.md": "# Soup\n\nLeeks.\n", "other.md": "# Other\n\nText.\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("tag", "Recipes", "cuisine=baking", "--recursive", cwd=root).code == 0
    (root / "Bread").mkdir()
    (root / "Recipes/loaf.md").rename(root / "Bread/Country Loaf.md")
    (root / "Recipes/soup.md").rename(root / "Recipes/leek soup.md")
    (root / "Recipes/leek soup.md").write_text("# Soup\n\nLeeks and potatoes.\n")  # renamed and edited
    assert ov("index", ".", cwd=root).code == 0
    tags = {r["path"]: r.get("tags") for r in ov("glob", "**/*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert tags["Bread/Country Loaf.md"] == {"cuisine": "baking", "status": "draft"}
    assert not tags.get("Recipes/leek soup.md")  # another content: another file
    assert not tags.get("other.md")


def test_tags_go_to_no_file_when_a_move_is_not_one_to_one(ov, tree):
    """A tagged empty note deleted and two empty notes made: both took its tags."""
    root = tree({"a.md": "", "keep.md": "# Keep\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("tag", "a.md", "secret=yes", cwd=root).code == 0
    (root / "a.md").unlink()
    (root / "b.md").write_text("")
    (root / "c.md").write_text("")
    assert ov("index", ".", cwd=root).code == 0
    tags = {r["path"]: r.get("tags") for r in ov("glob", "*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert not tags.get("b.md") and not tags.get("c.md")


def test_a_rename_a_watcher_reports_keeps_the_tags(ov, tree):
    """`ov index --watch` re-indexes the paths it saw change: a rename is the old path gone
    and the new one come in one batch, and the tags went with the old path."""
    from ov.indexer import index_paths

    root = tree({"notes/loaf.md": "# Country loaf\n\nFlour, water, salt.\n", "other.md": "# Other\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("tag", "notes/loaf.md", "cuisine=baking", cwd=root).code == 0
    (root / "notes/loaf.md").rename(root / "notes/Country Loaf.md")
    rep = index_paths(root, ["notes/loaf.md", "notes/Country Loaf.md"])
    assert (rep.added, rep.removed) == (1, 1)
    tags = {r["path"]: r.get("tags") for r in ov("glob", "**/*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert tags["notes/Country Loaf.md"] == {"cuisine": "baking"} and not tags.get("other.md")


def test_a_rename_split_across_two_watcher_batches_keeps_the_tags(ov, tree):
    """An editor's rename can reach the watcher as two batches, the old path gone in one
    and the new path come in the next: the tags the first batch saw go are held
    (ov.indexer.GoneTags) for the second, as they are within one batch."""
    from ov.indexer import GoneTags, index_paths

    root = tree({"notes/loaf.md": "# Country loaf\n\nFlour, water, salt.\n",
                 "notes/soup.md": "# Soup\n\nLeeks.\n", "other.md": "# Other\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("tag", "notes/loaf.md", "cuisine=baking", cwd=root).code == 0
    assert ov("tag", "notes/soup.md", "cuisine=soup", cwd=root).code == 0
    now = [100.0]
    held = GoneTags(window=30.0, clock=lambda: now[0])
    (root / "notes/loaf.md").rename(root / "notes/Country Loaf.md")
    (root / "notes/soup.md").rename(root / "notes/Leek soup.md")
    assert index_paths(root, ["notes/loaf.md", "notes/soup.md"], gone_tags=held).removed == 2
    now[0] += 2.0
    assert index_paths(root, ["notes/Country Loaf.md"], gone_tags=held).added == 1
    now[0] += 40.0  # the soup's other half comes past the window: a new file, no tags
    assert index_paths(root, ["notes/Leek soup.md"], gone_tags=held).added == 1
    tags = {r["path"]: r.get("tags") for r in ov("glob", "**/*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert tags["notes/Country Loaf.md"] == {"cuisine": "baking"}
    assert not tags.get("notes/Leek soup.md") and not tags.get("other.md")
    # taken once: a copy made later takes nothing
    (root / "copy.md").write_text("# Country loaf\n\nFlour, water, salt.\n")
    index_paths(root, ["copy.md"], gone_tags=held)
    tags = {r["path"]: r.get("tags") for r in ov("glob", "**/*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert not tags.get("copy.md")


def test_gone_tags_refuse_a_content_two_files_left():
    from ov.indexer import GoneTags

    now = [0.0]
    held = GoneTags(window=30.0, clock=lambda: now[0])
    held.keep(held.merge({"h1": {"a": "1"}}), set())
    merged = held.merge({"h1": {"b": "2"}})  # the same content gone again, later
    assert merged["h1"] is None
    held.keep(merged, set())
    assert held.merge({}) == {}


def test_the_watcher_holds_a_renames_first_half_for_its_second(ov, tree):
    from ov.indexer import IndexOptions
    from ov.watch import Watcher

    root = tree({"notes/loaf.md": "# Country loaf\n\nFlour, water, salt.\n", "other.md": "# Other\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("tag", "notes/loaf.md", "cuisine=baking", cwd=root).code == 0
    w = Watcher(root, opts=IndexOptions(embed=False))
    (root / "notes/loaf.md").rename(root / "notes/Country Loaf.md")
    assert w.apply({"notes/loaf.md"}).removed == 1
    assert w.apply({"notes/Country Loaf.md"}).added == 1
    tags = {r["path"]: r.get("tags") for r in ov("glob", "**/*.md", "-f", "path,tags", "-o", "jsonl", cwd=root).jsonl}
    assert tags["notes/Country Loaf.md"] == {"cuisine": "baking"}


def test_a_tag_no_file_carries_is_said(indexed, cli):
    """A misspelt `--tags team=typo` answered exit 1 without a word, as if nothing matched;
    it stays exit 1 (tags are ov's own filter) and a warning names it."""
    assert cli("tag", "a.py", "team=search", cwd=indexed).code == 0
    for args in (["grep", "words"], ["glob", "**"], ["search", "words", "--search-type", "keywords"],
                 ["search", "words", "--mode", "context"]):
        r = cli(*args, "--tags", "team=serch", "-o", "json", cwd=indexed)
        assert r.code == 1, (args, r.out)
        assert any(w.startswith("--tags team=serch: no indexed file carries this tag")
                   for w in r.json["result"]["warnings"]), (args, r.out)
        r = cli(*args, "--tags", "team=search", "-o", "json", cwd=indexed)
        assert r.code == 0 and not any("--tags" in w for w in r.json["result"]["warnings"]), (args, r.out)
