"""Re-indexing only what changed (issue 16): `indexer.index_paths` and `ov.watch`.

The test that matters: after any mix of edits, additions, deletions, ignored files and
folders, re-indexing just the changed paths leaves the same index content as indexing
the whole tree from scratch.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

import pytest

from conftest import make_tree, require_tool
from ov import api
from ov.errors import OvError
from ov.indexer import IndexOptions, index_paths, index_tree
from ov.store import Store
from ov.watch import changed_paths

BASE = {
    "a.py": '"""Alpha module."""\n\ndef alpha():\n    return "alpha"\n',
    "b.md": "# Beta\n\nBeta notes about gamma rays.\n",
    "sub/c.txt": "gamma delta\n" * 50,
    "sub/deep/d.py": "def delta():\n    pass\n",
    ".gitignore": "build/\n*.log\n",
}


def content(db: Path) -> dict:
    """What the index holds, independent of row ids and times."""
    with Store.open(db) as s:
        files = {r[0]: r[1:] for r in s.rows("SELECT path, size, hash, abstract, overview, title FROM files")}
        chunks = sorted(s.rows("SELECT f.path, c.level, c.start, c.end, c.text, c.embedded FROM chunks c "
                               "JOIN files f ON f.id = c.file_id"))
        kw = sorted(s.rows("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'gamma OR alpha OR "
                           "omega OR epsilon'"))
        kw_paths = sorted(s.chunk_paths([r[0] for r in kw]).values())
    return {"files": files, "chunks": chunks, "kw": kw_paths}


def fresh(root: Path, tmp: Path) -> dict:
    copy = tmp / "reference"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".ov"))
    index_tree(copy, None, IndexOptions())
    return content(copy / ".ov" / "index.db")


def test_changed_paths_leave_what_a_full_build_leaves(tmp_path):
    root = make_tree(tmp_path / "t", BASE)
    index_tree(root, None, IndexOptions())
    (root / "a.py").write_text('"""Alpha, edited."""\n\ndef omega():\n    return 1\n')  # edited
    (root / "b.md").unlink()  # deleted
    make_tree(root, {"new.md": "# Epsilon\n\nA new note.\n",  # added
                     "build/x.txt": "alpha in an ignored folder\n", "trace.log": "alpha\n",  # ignored
                     "img.bin": b"\x00\x01alpha"})  # binary
    shutil.rmtree(root / "sub" / "deep")  # a folder deleted
    make_tree(root, {"sub/more/e.md": "# Gamma\n\nNested.\n"})  # a folder added
    rels = ["a.py", "b.md", "new.md", "build/x.txt", "trace.log", "img.bin", "sub/deep",
            "sub/deep/d.py", "sub/more", "../outside", ".ov/index.db", ".git/HEAD"]
    rep = index_paths(root, rels)
    assert (rep.added, rep.updated, rep.removed) == (2, 1, 2)
    assert content(root / ".ov" / "index.db") == fresh(root, tmp_path)


def test_an_unchanged_file_named_by_a_watcher_costs_no_rewrite(tmp_path):
    root = make_tree(tmp_path / "t", BASE)
    index_tree(root, None, IndexOptions())
    before = content(root / ".ov" / "index.db")
    with Store.open(root / ".ov" / "index.db") as s:
        gen = s.generation()
    (root / "a.py").write_text(BASE["a.py"])  # saved without a change: new mtime, same text
    rep = index_paths(root, ["a.py"])
    assert (rep.added, rep.updated, rep.removed, rep.unchanged) == (0, 0, 0, 1)
    with Store.open(root / ".ov" / "index.db") as s:
        assert s.generation() == gen  # cursors stay valid
        assert s.file_row("a.py")["mtime_ns"] == (root / "a.py").stat().st_mtime_ns
    assert content(root / ".ov" / "index.db") == before


def test_a_file_that_becomes_ignored_or_a_link_leaves_the_index(tmp_path):
    root = make_tree(tmp_path / "t", BASE)
    index_tree(root, None, IndexOptions())
    (root / "sub" / "c.txt").unlink()
    (root / "sub" / "c.txt").symlink_to(root / "a.py")
    (root / ".gitignore").write_text("build/\n*.log\nb.md\n")
    index_paths(root, ["sub/c.txt", "b.md"])
    with Store.open(root / ".ov" / "index.db") as s:
        assert s.file_row("sub/c.txt") is None and s.file_row("b.md") is None


def test_watch_batches_map_rule_files_to_their_folder():
    root = "/r"
    rels, whole = changed_paths(root, ["/r/a.py", "/r/sub/.gitignore", "/r/.ov/index.db-wal",
                                       "/r/.git/index", "/elsewhere/x", "/r"])
    assert rels == {"a.py", "sub", "sub/.gitignore"} and not whole
    assert changed_paths(root, ["/r/.gitignore"])[1] is True
    assert changed_paths(root, ["/r/.ov/config.toml"])[1] is True
    assert changed_paths(root, ["/r/pyproject.toml"])[1] is True


def wait_for(ready, timeout: float = 120.0) -> None:
    """Poll `ready()` every 50 ms until it is true or `timeout` seconds pass (the caller
    asserts what it waited for)."""
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.05)

def test_a_watcher_thread_follows_saves(tmp_path):
    root = make_tree(tmp_path / "t", BASE)
    api.index(root)
    reports, warnings = [], []
    w = api.watcher(root, on_update=reports.append, warn=warnings.append).start()
    try:
        wait_for(lambda: reports)  # the catch-up
        assert reports and reports[0].added == 0, (warnings, w.state, w._thread.is_alive())
        (root / "fresh.md").write_text("# Zeta\n\nsaved just now\n")
        t0 = time.monotonic()
        with api.Index.open(root) as ix:
            while time.monotonic() - t0 < 30:
                if [h.path for h in ix.search("zeta", search_type="keywords").hits] == ["fresh.md"]:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the saved file was not indexed within 30 s")
        # a search may index the file first (its lock then makes the watcher retry)
        wait_for(lambda: w.state.updates >= 2 and w.state.pending == 0, 30)
        assert w.state.errors == [] and w.state.updates >= 2
    finally:
        w.stop()
    assert not w._thread.is_alive()


@contextlib.contextmanager
def _watching(root: Path, env: dict, wait_s: float, each_line=None):
    """`ov index --watch ROOT` started, once it says it watches (each stderr line before
    that handed to `each_line`); interrupted with SIGINT at the end of the block, and
    asserted to end as Ctrl-C ends it (killed, whatever happened)."""
    import signal
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "ov", "index", "--watch", str(root)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + wait_s
    try:
        while "watching" not in (line := p.stderr.readline()):
            assert line and time.monotonic() < deadline, "ov index --watch did not start"
            if each_line is not None:
                each_line(line)
        yield p
        p.send_signal(signal.SIGINT)
        assert p.wait(30) in (0, 130)
    finally:
        p.kill()
        p.wait()
        p.stderr.close()


def test_ov_index_watch_follows_saves_until_interrupted(tmp_path):
    import os

    from conftest import run_inprocess

    root = make_tree(tmp_path / "t", BASE)
    with _watching(root, {**os.environ, "OV_EMBEDDER": "hash"}, 120):
        (root / "sub" / "saved.md").write_text("# Omicron\n\nsaved while watching\n")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            r = run_inprocess("search", "omicron", "--search-type", "keywords", "--json", cwd=root,
                              env={"OV_EMBEDDER": "hash"})
            if [h["path"] for h in r.json["result"]["hits"]] == ["sub/saved.md"]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("ov index --watch did not index the saved file within 30 s")


@pytest.mark.model
def test_ov_index_watch_watches_before_the_vectors_are_done(tmp_path):
    """A Go tree's review: `ov index --watch` embedded every row before it watched (652 rows:
    60 s; 100,004 on the Go tree: hours, while a new file stayed unindexed). The first build
    now writes the keyword rows only; the watcher adds the vectors between its batches, and
    a file saved meanwhile is searchable within seconds."""
    import os
    import random

    from conftest import run_subprocess

    rng = random.Random(5)
    root = make_tree(tmp_path / "t", {
        f"notes/n{i:03d}.md": f"# Note {i}\n\nThe harbour pilot's log, entry {i}.\n\n"
        + " ".join(str(rng.randrange(10**6)) for _ in range(150)) + "\n" for i in range(300)})
    env = {k: v for k, v in os.environ.items() if k != "OV_EMBEDDER"}

    def no_vector_yet(line: str) -> None:  # none before it watches
        assert "embedded in" not in line or ", 0 embedded" in line, line
    with _watching(root, env, 60, no_vector_yet):
        (root / "late.md").write_text("# Late\n\nThe quokka ferry timetable.\n")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            r = run_subprocess(["search", "quokka", "--search-type", "keywords", "--json"], cwd=root)
            if [h["path"] for h in r.json["result"]["hits"]] == ["late.md"]:
                break
            time.sleep(0.2)
        else:
            pytest.fail("ov index --watch did not index the saved file within 30 s")
        cov = r.json["result"]["coverage"]
        assert cov["embedded"] < cov["embeddable"], cov  # the vectors were still coming


def test_a_long_lived_index_follows_every_commit(tmp_path):
    """`ov mcp` keeps one `Index` open and remembers per-index facts (coverage, the
    generation, meta values) between queries; each commit by another connection (the
    watcher, `ov index`) and each write of its own must be seen by the next query."""
    root = make_tree(tmp_path / "t", BASE)
    api.index(root, embed=False)
    with api.Index.open(root) as ix:
        first = ix.search("gamma", search_type="hybrid")
        assert first.coverage["embedded"] == 0 and first.search_type == "keywords"
        generation = ix.store.generation()
        (root / "e.md").write_text("# Epsilon\n\nepsilon gamma\n")
        api.index(root)  # another connection: a new file, then vectors for every row
        again = ix.search("gamma", search_type="hybrid")
        assert again.coverage["embedded"] == again.coverage["embeddable"] > 0
        assert again.search_type == "hybrid" and "e.md" in {h.path for h in again.hits}
        assert ix.store.generation() != generation
        page = ix.search("gamma", search_type="keywords", limit=1)
        (root / "b.md").unlink()
        index_paths(root, ["b.md"])  # as the watcher applies a batch
        with pytest.raises(OvError, match="index changed"):
            ix.search("gamma", search_type="keywords", limit=1, cursor=page.next_cursor)
        ix.tag("a.py", ["team=core"])  # a write of its own connection
        assert [h.path for h in ix.search("alpha", search_type="keywords", tags=["team=core"]).hits] == ["a.py"]


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=ov", "-c", "user.email=ov@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def branch_switch_repo(root: Path, changed: int = 500, kept: int = 300) -> Path:
    """A git repository whose branch `other` differs from `main` in `changed` files (most
    edited, 5 added, 5 deleted) under `mod/`, with `kept` files under `keep/` that no
    checkout touches; `main` is checked out."""
    files = {f"mod/f{i:03d}.py": f'"""Module {i}."""\n\ndef f{i}():\n    return {i}\n' for i in range(changed - 5)}
    files.update({f"keep/k{i:03d}.md": f"# Kept {i}\n\nnever switched\n" for i in range(kept)})
    files.update({f"mod/gone{i}.txt": f"deleted on the other branch {i}\n" for i in range(5)})
    make_tree(root, files)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "main")
    _git(root, "checkout", "-q", "-b", "other")
    for i in range(changed - 10):
        with open(root / f"mod/f{i:03d}.py", "a") as f:
            f.write(f"\n\ndef switched{i}():\n    return 'switched{i}'\n")
    for i in range(5):
        (root / f"mod/gone{i}.txt").unlink()
        (root / f"mod/new{i}.md").write_text(f"# New {i}\n\nswitched in {i}\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "other")
    _git(root, "checkout", "-q", "main")
    return root


def test_a_branch_switch_is_reindexed_in_batches_without_a_rescan(tmp_path):
    """`git checkout` of a branch that changes 500 files while a watcher runs: the batches
    re-read the changed files (and stat their folder's others), never the untouched
    folder, and leave what a full build of the new tree leaves."""
    require_tool("git", "git")
    root = branch_switch_repo(tmp_path / "repo")
    api.index(root)
    reports, warnings = [], []
    w = api.watcher(root, on_update=reports.append, warn=warnings.append).start()
    try:
        wait_for(lambda: reports)  # the catch-up
        assert reports and reports[0].unchanged == 800, (warnings, w.state)
        t0 = time.monotonic()
        _git(root, "checkout", "-q", "other")
        with api.Index.open(root) as ix:
            while time.monotonic() - t0 < 120:
                if (w.state.files_changed >= 500 and w.state.pending == 0
                        and ix.search("switched489", search_type="keywords").hits):
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"the switch was not indexed within 120 s: {w.state}")
        took = time.monotonic() - t0
        time.sleep(1.5)  # any straggling batch
    finally:
        w.stop()
    batches = reports[1:]
    assert w.state.errors == [] and warnings == []
    assert sum(r.updated for r in batches) == 490
    assert sum(r.added for r in batches) == 5 and sum(r.removed for r in batches) == 5
    read = sum(r.added + r.updated + r.unchanged for r in batches)
    assert read <= 500, read  # no batch walked keep/ (a rescan reads 800)
    print(f"\nbranch switch: {len(batches)} batch(es), {read} files read, fresh in {took:.2f} s, "
          f"batches took {[r.seconds for r in batches]}")
    assert content(root / ".ov" / "index.db") == fresh(root, tmp_path)


def test_a_batch_counts_as_applied_once_its_keyword_rows_are_in(tmp_path, monkeypatch):
    """A search waiting for the watcher (ov.mcp `_settle`) waited 2 s on every call while a
    saved file's batch went on to embed the whole backlog: the batch now counts as applied
    (`WatchState.applied`) when its keyword rows are committed, before the embedding."""
    from ov import indexer
    from ov.watch import Watcher

    root = make_tree(tmp_path / "t", {"a.md": "# Tides\n\nThe tide tables.\n"})
    index_tree(root, None, IndexOptions(embed=False))
    w = Watcher(root, opts=IndexOptions(embed=True))
    order = []
    real = indexer.embed_phase

    def embed(store, *args, **kwargs):
        order.append(("embed", w.state.applied))
        return real(store, *args, **kwargs)

    monkeypatch.setattr(indexer, "embed_phase", embed)
    (root / "a.md").write_text("# Tides\n\nThe tide tables, revised.\n")
    w._mark = 7
    w.apply({"a.md"})
    assert order and order[0] == ("embed", 7) and w.state.applied == 7


def _a_save_is_indexed(w, root: Path) -> None:
    """A file saved under a running watch is found by a search once the watch has applied it."""
    updates = w.state.updates
    (root / "fresh.md").write_text("# Zeta\n\nsaved just now\n")
    wait_for(lambda: w.state.updates > updates, 30)
    with api.Index.open(root) as ix:
        assert [h.path for h in ix.search("zeta", search_type="keywords").hits] == ["fresh.md"]


def test_where_the_os_refuses_a_watcher_the_tree_is_polled_and_said(tmp_path, monkeypatch):
    """With `fs.inotify.max_user_instances` used up by other programs, no journal could be
    made and watchfiles' own watcher failed at its start: `ov index --watch` ended on
    `error[internal]: WatchfilesRustInternalError: Error creating recommended watcher: Too
    many open files (os error 24)`. Now the tree is polled, and the watch says so."""
    import watchfiles

    from ov import journal as jmod
    from ov import watch as wmod

    root = make_tree(tmp_path / "t", BASE)
    api.index(root)
    monkeypatch.setattr(jmod.Journal, "open", classmethod(lambda cls, *a, **k: None))  # inotify_init1 failed
    real, asked = watchfiles.watch, []

    def refused(*a, **k):  # as watchfiles fails when inotify_init1 does
        asked.append(k.get("force_polling"))
        if k.get("force_polling"):
            return real(*a, **k)

        def fail():
            raise RuntimeError("Error creating recommended watcher: Too many open files (os error 24)")
            yield
        return fail()

    monkeypatch.setattr(watchfiles, "watch", refused)
    monkeypatch.setattr(wmod, "POLL_MS", 200)
    reports, warnings = [], []
    w = api.watcher(root, on_update=reports.append, warn=warnings.append).start()
    try:
        wait_for(lambda: reports)  # the catch-up
        assert asked == [None, True], (asked, warnings)
        assert [e for e in w.state.errors if "max_user_instances" in e and "polling the tree every 0.2 s" in e]
        assert [m for m in warnings if "os error 24" in m]
        _a_save_is_indexed(w, root)
    finally:
        w.stop()
    assert not w._thread.is_alive()


def test_past_the_inotify_limit_the_tree_is_polled_and_said(tmp_path, monkeypatch):
    """Over `fs.inotify.max_user_watches` (the kernel's 5,097 folders under a limit of
    1,000) the journal kept the watches it had, watchfiles' own failed silently at the same
    limit, and the watch said "watching" and saw no change (a review on the kernel). Now the
    journal's watches are given back, the tree is polled, and the watch's state says so."""
    import watchfiles

    from ov import journal as jmod
    from ov import watch as wmod

    root = make_tree(tmp_path / "t", BASE)
    api.index(root)

    def out_of_watches(self, rel: str, touch: bool) -> None:  # as inotify_add_watch at the limit
        self._break("no watch on .: No space left on device (raise fs.inotify.max_user_watches)")
        self.complete = False
        self.out_of_watches = True

    monkeypatch.setattr(jmod.Journal, "_add_tree", out_of_watches)
    asked = []
    real = watchfiles.watch
    monkeypatch.setattr(watchfiles, "watch", lambda *a, **k: (asked.append(k.get("force_polling")), real(*a, **k))[1])
    monkeypatch.setattr(wmod, "POLL_MS", 200)
    reports, warnings = [], []
    w = api.watcher(root, on_update=reports.append, warn=warnings.append).start()
    try:
        wait_for(lambda: reports)  # the catch-up
        assert asked == [True] and w.journal is None, (asked, warnings)
        assert [e for e in w.state.errors if "fs.inotify.max_user_watches" in e and "polling the tree" in e]
        assert [m for m in warnings if "polling the tree every 0.2 s" in m]
        _a_save_is_indexed(w, root)
    finally:
        w.stop()
