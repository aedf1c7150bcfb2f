"""The index a first search builds (ov.worker `first_use`): a kill at any point of that
build leaves an index the next search completes before it answers, parallel first
searches wait for the one that builds, and an index that cannot be made or used is
said to be so, in one sentence with its own error code."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess, run_subprocess
from ov.indexer import IndexLock, worker_state

FILES = {f"docs/n{i:02d}.md": f"# Notes {i}\n\nThe tide tables for harbour {i} list high water.\n"
         for i in range(12)}
# walked last: the rows a killed build committed never hold it
FILES["zz/target.py"] = 'def parse_header(line):\n    """Parse one mail header line."""\n    return line\n'


def _db(root: Path) -> Path:
    return root / ".ov" / "index.db"


# `python -c HARNESS POINT ARGS...`: the CLI, made to die (as a SIGKILL would: no cleanup)
# at one point of a first search's build
HARNESS = r"""
import os, sys, time
from ov import indexer
from ov.store import db
from ov.cli.app import main

point, args = sys.argv[1], sys.argv[2:]

def die(*_a, **_k):
    os._exit(9)

if point == "schema":  # the file made, its schema not yet written
    db.MIGRATIONS[0] = die
elif point == "first-file":  # the schema and the run's first meta rows written, no file yet
    indexer._LexicalPass.take = die
elif point == "after-commit":  # a few files committed, the rest not
    indexer.COMMIT_FILES = 3
    commit = indexer._LexicalPass.commit
    def commit_then_die(self, batches):
        commit(self, batches)
        if self.pending == 0:
            die()
    indexer._LexicalPass.commit = commit_then_die
elif point == "slow":  # a build that holds the index a while before its first file
    take = indexer._LexicalPass.take
    def slow_take(self, *a):
        if not self.seen:
            time.sleep(1.5)
        return take(self, *a)
    indexer._LexicalPass.take = slow_take
main(args)
"""


def _harness(root: Path, point: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("OV_DEBUG", None)
    return subprocess.Popen([sys.executable, "-c", HARNESS, point, *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_worker(root: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while worker_state(_db(root)) is not None:
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.1)


def _check_usable(root: Path) -> None:
    """The next search builds what the killed one left and answers from all of it."""
    r = run_subprocess(["search", "parse mail header", "--json"], cwd=root)
    assert r.code == 0, (r.out, r.err)
    res = r.json["result"]
    assert "zz/target.py" in [h["path"] for h in res["hits"]], res
    assert res["coverage"]["keywords_complete"] is True, res["coverage"]
    assert not any("--no-embed" in w for w in res["warnings"]), res["warnings"]
    # vectors are coming (a worker adds them), so semantic search is not `unsupported`
    r = run_subprocess(["find", "parse mail header", "--json"], cwd=root)
    assert r.code in (0, 1), (r.out, r.err)
    r = run_subprocess(["status", "--json"], cwd=root)
    assert r.code == 0 and r.json["result"]["files"] == len(FILES), r.out
    _wait_worker(root)


@pytest.mark.parametrize("point", ["schema", "first-file", "after-commit"])
def test_a_first_search_killed_at_a_point_leaves_an_index_the_next_one_finishes(tree, point):
    root = tree(FILES)
    p = _harness(root, point, "search", "parse mail header", "--json")
    p.communicate(timeout=120)
    assert p.returncode == 9, "the build was not cut where it should have been"
    assert _db(root).exists()
    _check_usable(root)


def test_a_first_search_killed_at_random_moments(tmp_path):
    """As a user's Ctrl-\\ or the OOM killer would: SIGKILL at any moment of the build."""
    rng = random.Random(5)
    for round_ in range(4):
        root = make_tree(tmp_path / f"t{round_}", FILES)
        env = dict(os.environ)
        env.pop("OV_DEBUG", None)
        p = subprocess.Popen([sys.executable, "-m", "ov", "search", "parse mail header"], cwd=root,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while p.poll() is None and not _db(root).exists():  # the build has begun
            assert time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.6))
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
        _wait_worker(root)  # a search that ended on its own started one
        _check_usable(root)


def test_parallel_first_searches_wait_for_the_one_that_builds(tree):
    """They wait for the build, however long `ov index` would wait for the lock (here
    less than the build takes), and answer from it without building again."""
    root = tree(FILES)
    # keywords: the answers must not depend on how many vectors the worker has added by then
    first = _harness(root, "slow", "search", "parse mail header", "--search-type", "keywords", "--json")
    deadline = time.monotonic() + 60
    while not _db(root).exists():  # the first one is building
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    env = dict(os.environ, OV_LOCK_WAIT="0.5")
    env.pop("OV_DEBUG", None)
    others = [subprocess.Popen([sys.executable, "-m", "ov", "search", "parse mail header", "--search-type",
                                "keywords", "--json"],
                               cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
    answers = []
    for n, p in enumerate((first, *others)):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, (out, err)
        assert n == 0 or "indexed" not in err, err  # no second build
        answers.append([h["path"] for h in json.loads(out)["result"]["hits"]])
    assert "zz/target.py" in answers[0] and answers[1] == answers[2] == answers[0]
    _wait_worker(root)


def test_a_first_search_that_waits_too_long_is_index_busy(tree, monkeypatch):
    """The one who builds never lets go: the others end with the retryable index_busy."""
    from ov import worker

    root = tree(FILES)
    (root / ".ov").mkdir()
    sqlite3.connect(_db(root)).execute("PRAGMA journal_mode=WAL").fetchall()  # made, no schema
    monkeypatch.setattr(worker, "FIRST_WAIT_S", 0.3, raising=False)
    with IndexLock(_db(root)):
        r = run_inprocess("search", "parse mail header", "--json", cwd=root)
    assert r.code == 2, r.out
    err = r.json["error"]
    assert err["code"] == "index_busy" and err["retryable"] is True, err


def _garbage_page(db: Path) -> None:
    with open(db, "r+b") as f:  # past the header: the schema's page no longer parses
        f.seek(100)
        f.write(b"garbage")


def _future(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()


@pytest.mark.parametrize("damage, what", [
    (_garbage_page, "is damaged (database disk image is malformed)"),
    (_future, "has schema version 99, newer than this ov supports"),
])
def test_index_full_says_in_one_sentence_what_it_rebuilds(tree, damage, what):
    root = tree(FILES)
    assert run_inprocess("index", ".", "--no-embed", cwd=root).code == 0
    db = _db(root)
    run_inprocess("status", cwd=root)  # the last connection checkpoints: no WAL left
    damage(db)
    r = run_inprocess("index", ".", "--no-embed", "--json", cwd=root)
    assert r.code == 2 and "ov index --full" in r.json["error"]["message"], r.out
    r = run_inprocess("index", ".", "--full", "--no-embed", cwd=root)
    assert r.code == 0, r.err
    warning = [ln for ln in r.err.splitlines() if "rebuilding" in ln]
    assert len(warning) == 1, r.err
    assert warning[0].startswith(f"ov: warning: {db} {what}"), warning
    assert warning[0].endswith("; rebuilding it from nothing"), warning
    # one sentence: the path once, the cause once, not the advice this run follows
    assert warning[0].count(str(db)) == 1 and warning[0].count(what) == 1, warning
    assert "ov index --full" not in warning[0], warning


def test_a_damaged_index_is_invalid_argument_on_field_db(tree):
    """DESIGN.md names no code for a broken index; the one it gets says which argument."""
    root = tree(FILES)
    assert run_inprocess("index", ".", "--no-embed", cwd=root).code == 0
    run_inprocess("status", cwd=root)
    _garbage_page(_db(root))
    r = run_inprocess("search", "parse", "--json", cwd=root)
    assert r.code == 2, r.out
    err = r.json["error"]
    assert (err["code"], err["field"], err["retryable"]) == ("invalid_argument", "db", False), err
    assert "is damaged (" in err["message"] and "ov index --full" in err["message"], err


def _read_only(monkeypatch, folder: Path) -> None:
    """`folder` made read-only; for root, whom the mode does not stop, os.mkdir and the
    index file's creation fail there as they would for anyone else."""
    folder.chmod(0o555)
    monkeypatch.setattr("ov.store.db.os", _ReadOnlyOs(folder) if os.geteuid() == 0 else os)
    if os.geteuid() == 0:
        real = Path.mkdir

        def mkdir(self, *a, **k):
            if Path(self).parent == folder:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *a, **k)

        monkeypatch.setattr(Path, "mkdir", mkdir)


class _ReadOnlyOs:
    """`os` for ov.store.db, refusing to create a file in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def open(self, path, flags, *a):
        if Path(path).parent == self.folder and flags & os.O_CREAT and not os.path.exists(path):
            raise PermissionError(13, "Permission denied", str(path))
        return os.open(path, flags, *a)

    def __getattr__(self, name):
        return getattr(os, name)


@pytest.mark.parametrize("where", ["tree", "index folder"])
def test_a_folder_the_index_cannot_be_made_in_is_invalid_path(tree, monkeypatch, where):
    root = tree(FILES)
    folder = root
    if where == "index folder":  # `.ov` there (with its .gitignore), the file not
        folder = root / ".ov"
        folder.mkdir()
        (folder / ".gitignore").write_text("*\n")
    try:
        _read_only(monkeypatch, folder)
        for args in (["search", "parse mail header", "--json"], ["index", ".", "--json"]):
            r = run_inprocess(*args, cwd=root)
            assert r.code == 2, (args, r.out, r.err)
            err = r.json["error"]
            assert err["code"] == "invalid_path" and err["field"] == "db", err
            assert "Permission denied" in err["message"] and "PermissionError" not in err["message"], err
    finally:
        folder.chmod(0o755)


def test_a_killed_no_embed_index_stays_keywords_only(tree):
    """`ov index --no-embed` killed after a few files: the next search finishes the
    keyword rows and keeps the index's own choice (no vectors, no worker)."""
    root = tree(FILES)
    p = _harness(root, "after-commit", "index", "--no-embed", ".")
    p.communicate(timeout=120)
    assert p.returncode == 9
    r = run_subprocess(["search", "parse mail header", "--json"], cwd=root)
    assert r.code == 0, (r.out, r.err)
    assert "zz/target.py" in [h["path"] for h in r.json["result"]["hits"]]
    cov = r.json["result"]["coverage"]
    assert cov["embedded"] == 0 and cov["pending"] == 0, cov  # (a worker may write grep's rows)
    _wait_worker(root)
    con = sqlite3.connect(_db(root))
    try:
        assert con.execute("SELECT value FROM meta WHERE key = 'embed'").fetchone() == ("off",)
    finally:
        con.close()
    r = run_subprocess(["find", "parse mail header", "--json"], cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported", r.out


def test_an_orphaned_worker_leaves_the_next_workers_state_alone(tree, monkeypatch):
    """A worker whose index was deleted writes no progress into the folder, which may be
    another worker's by then, and so never removes that one's state file."""
    from ov import worker

    root = tree({"a.md": "# A\n\ntext\n"})
    db = _db(root)
    assert run_subprocess(["index", "--no-embed", "."], cwd=root).code == 0
    theirs = {"pid": 1, "started": 0, "phase": "embed", "done": 1, "total": 2}

    def fake_complete(db_path, progress=None, stop=None, locked=False, pause=None):
        db.unlink()
        db.write_bytes(b"")  # a new index in its place, and a new worker's state file
        worker.worker_file(db).write_text(json.dumps(theirs))
        progress("embed", 5, 10)  # the orphan's progress after its batch
        return None

    monkeypatch.setattr(worker, "STATE_EVERY_S", 0)
    monkeypatch.setattr(worker, "complete_index", fake_complete)
    assert worker.run(db) == 0
    assert json.loads(worker.worker_file(db).read_text()) == theirs


def test_status_says_a_first_build_is_not_finished(tree):
    root = tree(FILES)
    p = _harness(root, "after-commit", "index", "--no-embed", ".")
    p.communicate(timeout=120)
    assert p.returncode == 9
    r = run_subprocess(["status", "--json"], cwd=root)
    assert r.code == 0 and r.json["result"]["coverage"]["keywords_complete"] is False, r.out
    out = run_subprocess(["status"], cwd=root).out
    # the files the build has not read yet are not "new": they were never read (review of
    # the kernel: "71253 new (not indexed)" while the first build went on)
    assert "not finished" in out and "not read yet by the first build" in out and "new (not" not in out, out
    assert run_subprocess(["index", "--no-embed", "."], cwd=root).code == 0
    out = run_subprocess(["status"], cwd=root).out
    assert "not finished" not in out and "0 new (not indexed)" in out, out


def test_a_path_outside_the_current_folder_is_searched_in_its_own_index(tmp_path):
    """`ov search Q -u ../other` from a folder without an index: the index is found above
    the named path, and the current folder is not indexed first (run from a home folder,
    that indexed all of it, then refused the path as outside its root)."""
    other = make_tree(tmp_path / "other", {"a.md": "# A\n\nzanzibar spice routes\n"})
    here = make_tree(tmp_path / "here", {"b.md": "# B\n\nnothing\n"})
    assert run_inprocess("index", ".", cwd=other, env={"OV_EMBEDDER": "hash"}).code == 0
    r = run_inprocess("search", "zanzibar", "-u", "../other/a.md", "-o", "json", cwd=here,
                      env={"OV_EMBEDDER": "hash"})
    assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]] == ["../other/a.md"], r.out
    assert not (here / ".ov").exists()
    # an index found from the current folder decides: a path outside its root is refused
    r = run_inprocess("search", "zanzibar", "-u", str(here), "-o", "json", cwd=other,
                      env={"OV_EMBEDDER": "hash"})
    assert r.code == 2 and r.json["error"]["code"] == "invalid_path", r.out
    # no index from here, none above the path: not_found, and nothing is built
    third = make_tree(tmp_path / "third", {"c.md": "x\n"})
    r = run_inprocess("search", "zanzibar", "-u", "../third", "-o", "json", cwd=here,
                      env={"OV_EMBEDDER": "hash"})
    assert r.code == 2 and r.json["error"]["code"] == "not_found", r.out
    assert not (here / ".ov").exists() and not (third / ".ov").exists()


def test_a_subfolder_with_its_own_index_is_searched_in_it(tmp_path):
    """DESIGN: the index is found by walking up from the scope. `ov search Q -u proj`
    from an unindexed parent ignored proj's index and indexed the whole current folder
    (from a home folder: all of it). A `-u` inside an unindexed folder with no index of
    its own still builds the current folder's on first use."""
    parent = make_tree(tmp_path / "parent", {"proj/a.md": "# A\n\nalpha needle\n",
                                             "notes.txt": "unrelated needle\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=parent / "proj", env=env).code == 0
    for extra in ([], ["--no-auto-index"]):
        r = run_inprocess("search", "needle", "-u", "proj", "-o", "json", *extra, cwd=parent, env=env)
        assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]] == ["proj/a.md"], r.out
        assert not (parent / ".ov").exists()
    other = make_tree(tmp_path / "other", {"sub/b.md": "# B\n\nbeta needle\n", "c.md": "gamma\n"})
    r = run_inprocess("search", "needle", "-u", "sub", "-o", "json", cwd=other, env=env)
    assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]] == ["sub/b.md"], r.out
    assert (other / ".ov").is_dir()


def test_a_first_build_cut_by_its_budget_records_what_it_skipped_so_far(tree, monkeypatch):
    """`ov status` said "skipped: 0 files" during a first build that had said 84 skipped (a
    review of the Go tree): a build cut short records the files it skipped so far."""
    import time as real
    import types

    from ov import indexer
    from ov.store import Store

    root = tree({"a/blob.bin": b"\x00\x01binary", "a/note.md": "# A\n",
                 **{f"z/n{i:02d}.md": f"# N{i}\n" for i in range(40)}})
    clock = [real.monotonic()]

    def monotonic() -> float:  # each look at the clock a second later: the budget runs out
        clock[0] += 1.0
        return clock[0]
    monkeypatch.setattr(indexer, "time", types.SimpleNamespace(
        monotonic=monotonic, perf_counter=real.perf_counter, time=real.time, sleep=real.sleep))
    rep = indexer.index_tree(root, None, indexer.IndexOptions(embed=False, budget_s=20.0))
    assert rep.partial and rep.added < 41, rep
    with Store.open(root / ".ov" / "index.db") as s:
        total, listed = s.skipped()
    assert total == 1 and listed == [("a/blob.bin", "binary")], (total, listed)


def test_path_words_are_the_query_words_a_path_may_hold():
    from ov.query import path_words

    assert path_words("where does the http server parse the request line") == (
        "http", "server", "parse", "request", "line")
    assert path_words("gzip readers, JSON tags") == ("gzip", "reader", "json", "tags")
    assert path_words("io.EOF") == ("eof",)
    assert path_words("a to is") == ()
    # a name's parts: `ServeHTTP`'s first answer on the Go tree read cmd/ and no net/http
    assert path_words("ServeHTTP") == ("servehttp", "serve", "http")
    assert path_words("XMLHttpRequest") == ("xmlhttprequest", "xml", "http", "request")
    assert path_words("kmalloc GFP_KERNEL") == ("kmalloc", "gfp", "kernel")


def test_a_first_answer_reads_the_files_its_query_names_first(tree, monkeypatch):
    """The Go stdlib's first answer to a question about net/http read 410 files in walk
    order (archive/, bufio/, cmd/) and none of net/http: within its budget the files whose
    paths hold the query's words are read first, the rest in walk order."""
    from ov import indexer
    from ov.store import Store

    files = {f"a{i:02d}/f.go": f"package a{i}\n" for i in range(30)}
    files |= {"net/http/server.go": "package http\n", "net/http/request.go": "package http\n",
              "net/url/url.go": "package url\n"}
    root = tree(files)
    assert run_inprocess("index", root, "--no-embed").code == 0  # (the walk order is the tree's)
    order = {}
    for words in (("http", "server"), ()):
        store = Store.open(root / ".ov" / "index.db")
        try:
            run = indexer._LexicalPass(store, root, indexer.IndexOptions(first_words=words, budget_s=60.0),
                                       indexer.IndexReport(str(root)), None, lambda m: None)
            order[words] = [e.path for e in run.entries()]
            walked = run.walked
        finally:
            store.close()
        assert sorted(order[words]) == sorted(files)
        assert walked == (len(files) if words else None)  # a whole first walk counts the tree
    named = order[("http", "server")]
    assert named[:2] == ["net/http/server.go", "net/http/request.go"]  # both words, then one
    assert named[2:] == [p for p in order[()] if p not in named[:2]]  # the rest in walk order
    # without a budget (`ov index`) the walk order is kept whatever the words
    store = Store.open(root / ".ov" / "index.db")
    try:
        run = indexer._LexicalPass(store, root, indexer.IndexOptions(first_words=("http",)),
                                   indexer.IndexReport(str(root)), None, lambda m: None)
        assert [e.path for e in run.entries()] == order[()]
    finally:
        store.close()


def test_a_first_search_hands_its_query_to_the_build(tree, monkeypatch):
    from ov import indexer

    seen = []
    real = indexer.index_tree

    def spy(root, db_path=None, opts=indexer.IndexOptions(), **kw):
        seen.append(opts.first_words)
        return real(root, db_path, opts, **kw)

    from ov import worker

    monkeypatch.setattr(worker, "index_tree", spy)  # (first_use's own name for it)
    monkeypatch.setenv("OV_BACKGROUND", "1")
    root = tree({"notes/harbour.md": "# Harbour\n\nBoats in the harbour.\n"})
    r = run_inprocess("search", "harbour boats", "--search-type", "keywords", cwd=root)
    assert r.code == 0, r.err
    assert seen and seen[0] == ("harbour", "boat")
    run_inprocess("index", "--stop", cwd=root)


def test_a_first_search_in_a_subfolder_of_a_checkout_indexes_the_checkout(tmp_path, monkeypatch):
    """A first `ov search` from `repo/src` built `repo/src/.ov`: the rest of the checkout was
    never searched, and a later search from the top built a second index. It now builds at
    the work tree's top, and says so; a search from any folder of the checkout then finds it.
    A top that is the home folder (a dotfiles repository) is not taken: the first use builds
    in the folder it ran in, as before."""
    from ov import api

    monkeypatch.setattr(api, "_superuser", lambda: False)  # (the suite may run as root: see below)
    repo = make_tree(tmp_path / "repo", {".gitignore": "*.log\n", "src/conf.py": "def parse_config(path):\n    pass\n",
                                         "docs/config.md": "# Config\n\nTo parse the config file, call parse_config.\n",
                                         "docs/debug.log": "parse config\n"})
    r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=repo / "src")
    assert r.code == 0, r.err
    assert (repo / ".ov" / "index.db").is_file() and not (repo / "src" / ".ov").exists()
    assert f"building one at {repo.resolve() / '.ov'} (the top of this git work tree;" in r.err, r.err
    assert {h["path"] for h in r.json["result"]["hits"]} == {"../docs/config.md", "conf.py"}, r.out  # as the current folder sees them
    r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=repo / "docs")
    assert r.code == 0 and "building" not in r.err, r.err
    assert not (repo / "docs" / ".ov").exists()

    home = make_tree(tmp_path / "home", {".gitignore": "*.log\n", "notes/todo.md": "parse config\n"})
    r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=home / "notes",
                      env={"HOME": str(home)})
    assert r.code == 0, r.err
    assert (home / "notes" / ".ov").is_dir() and not (home / ".ov").exists()
    assert "the top of this git work tree" not in r.err, r.err

    # a folder the top's index would leave out (git-ignored, hidden) is indexed itself: from
    # `build/`, the top's index had answered from other folders, never out.txt, then or later
    for folder, want in (("build", "out.txt"), (".notes", "n.md")):
        fresh = make_tree(tmp_path / f"fresh{folder}", {".gitignore": "build/\n", "src/a.py": "x = 1\n",
                                                         "build/out.txt": "parse config output\n",
                                                         ".notes/n.md": "parse config notes\n"})
        r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=fresh / folder)
        assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]] == [want], (folder, r.out, r.err)
        assert (fresh / folder / ".ov" / "index.db").is_file() and not (fresh / ".ov").exists()

    # nor to a top whose `.ov/` every user may write in (opening it is refused)
    opentop = make_tree(tmp_path / "open-top", {".gitignore": "*.log\n", "src/a.py": "parse config\n"})
    (opentop / ".ov").mkdir()
    (opentop / ".ov").chmod(0o777)
    r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=opentop / "src")
    assert r.code == 0 and (opentop / "src" / ".ov" / "index.db").is_file(), r.out + r.err

    # root climbs to no top (an etckeeper /etc: `sudo ov search` in /etc/nginx indexed all of it)
    monkeypatch.setattr(api, "_superuser", lambda: True)
    etc = make_tree(tmp_path / "etc", {".gitignore": "*.bak\n", "nginx/nginx.conf": "server parse config\n",
                                       "shadow": "root:parse config secret\n"})
    r = run_inprocess("search", "parse config", "--search-type", "keywords", "--json", cwd=etc / "nginx")
    assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]] == ["nginx.conf"], r.out
    assert not (etc / ".ov").exists()
