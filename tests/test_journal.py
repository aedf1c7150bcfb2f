"""The watcher's change journal (`ov.journal`): what it vouches for, and grep's use of it.

grep with a fresh index skips the `lstat` of each file the index rules out when a
watcher's journal says nobody touched it since the index was brought up to date. These
tests hold the journal's promises (a change is in the answer as soon as its system call
returned; a new folder is watched and its files touched; lost events withdraw the
promise) and that grep's answer stays the one it gives without any index.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree
from ov import api, journal
from ov.journal import Journal
from ov.journal import ask as ask_changes
from ov.paths import db_path_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the journal uses inotify")

FILES = {f"d{i % 3}/f{i}.txt": f"line {i}\nplain text {i}\n" for i in range(30)}
FILES["d0/sub/kept.txt"] = "needle_xyz was here from the start\n"


def indexed(tmp_path: Path) -> Path:
    root = make_tree(tmp_path / "t", FILES)
    api.index(root, embed=False)
    return root


def ask(db: Path, root: Path) -> set[str] | None:
    got = ask_changes(db, root)
    return None if got is None else set(got.paths)


def opened(root: Path, ready: bool = True) -> Journal:
    """A journal on `root`; with `ready`, vouching as a finished catch-up would make it."""
    j = Journal.open(root, db_path_for(root))
    assert j is not None
    if ready:
        j.caught_up(j.reset())
    return j


def grep(root: Path, *args: str) -> list[tuple[str, int, str]]:
    from conftest import run_inprocess

    r = run_inprocess("grep", "-o", "json", *args, cwd=root)
    assert r.code in (0, 1), r.out + r.err
    res = r.json["result"]
    if "-l" in args:
        return res["paths"]
    return [(m["path"], m["line"], m["content"]) for m in res["matches"]]


def test_the_journal_vouches_only_after_a_catch_up(tmp_path):
    root = indexed(tmp_path)
    j = opened(root, ready=False)
    try:
        db = db_path_for(root)
        assert ask(db, root) is None
        mark = j.reset()
        assert ask(db, root) is None  # the catch-up is running
        j.caught_up(mark)
        assert ask(db, root) == set()
        assert ask(db, root / "d0") is None  # another root: not this journal's word
        state = j.state()
        assert state["ready"] and state["watched_folders"] == 5  # the root, d0, d0/sub, d1, d2
    finally:
        j.close()
    assert not (root / ".ov" / journal.SOCKET_NAME).exists()
    assert ask(db_path_for(root), root) is None


def test_a_change_is_in_the_answer_as_soon_as_it_was_made(tmp_path):
    root = indexed(tmp_path)
    j = opened(root)
    try:
        db = db_path_for(root)
        (root / "d1" / "f1.txt").write_text("changed\n")
        (root / "d2" / "new.txt").write_text("new\n")
        os.remove(root / "d0" / "f0.txt")
        os.rename(root / "d0" / "f3.txt", root / "d0" / "f3-renamed.txt")
        os.chmod(root / "d1" / "f4.txt", 0o600)
        assert ask(db, root) == {"d1/f1.txt", "d2/new.txt", "d0/f0.txt", "d0/f3.txt",
                                 "d0/f3-renamed.txt", "d1/f4.txt"}
        # nothing under .ov or .git is a change of the tree
        (root / ".ov" / "scratch").write_text("x")
        (root / ".git").mkdir(exist_ok=True)
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        assert ".git" not in ask(db, root) and not any(p.startswith(".ov") for p in ask(db, root))
    finally:
        j.close()


def test_a_new_folder_is_watched_and_everything_in_it_touched(tmp_path):
    root = indexed(tmp_path)
    j = opened(root)
    try:
        db = db_path_for(root)
        os.makedirs(root / "new" / "deep")
        (root / "new" / "deep" / "a.txt").write_text("a\n")
        got = ask(db, root)
        assert {"new", "new/deep", "new/deep/a.txt"} <= got
        (root / "new" / "deep" / "b.txt").write_text("b\n")  # the new folder is watched
        assert "new/deep/b.txt" in ask(db, root)
        # a folder moved in from outside the tree: its files were never seen
        outside = make_tree(tmp_path / "outside", {"x/y.txt": "y\n"})
        os.rename(outside / "x", root / "moved")
        assert {"moved", "moved/y.txt"} <= ask(db, root)
    finally:
        j.close()


def test_lost_changes_withdraw_the_promise_until_a_catch_up(tmp_path, monkeypatch):
    root = indexed(tmp_path)
    monkeypatch.setattr(journal, "MAX_TOUCHED", 2)
    j = opened(root)
    try:
        db = db_path_for(root)
        for i in range(3):
            (root / "d0" / f"burst{i}.txt").write_text("x\n")
        assert ask(db, root) is None
        assert j.wants_catch_up and "more than 2" in j.state()["not_ready"]
        j.caught_up(j.reset())
        assert ask(db, root) == set()
    finally:
        j.close()


def test_grep_goes_by_the_journal_and_reads_what_it_names(tmp_path):
    root = indexed(tmp_path)
    # changed before any journal watched: only the catch-up that the journal's promise
    # stands on would see it; a journal made ready without one shows that grep trusts it
    # (no lstat of the files the index rules out)
    (root / "d1" / "f1.txt").write_text("needle_xyz arrived unseen\n")
    j = opened(root)
    try:
        assert grep(root, "-F", "needle_xyz") == [("d0/sub/kept.txt", 1, "needle_xyz was here from the start")]
        assert ("d1/f1.txt", 1, "needle_xyz arrived unseen") in grep(root, "--no-index", "-F", "needle_xyz")
        # a change the journal saw is read at once, before any re-index
        (root / "d2" / "f2.txt").write_text("now with needle_xyz\n")
        (root / "d2" / "added.txt").write_text("needle_xyz in a new file\n")
        assert grep(root, "-F", "needle_xyz") == [
            ("d0/sub/kept.txt", 1, "needle_xyz was here from the start"),
            ("d2/added.txt", 1, "needle_xyz in a new file"),
            ("d2/f2.txt", 1, "now with needle_xyz")]
    finally:
        j.close()
    # without the journal every file is checked again: the unseen change is found
    assert ("d1/f1.txt", 1, "needle_xyz arrived unseen") in grep(root, "-F", "needle_xyz")


def test_a_dead_watchers_socket_is_not_trusted(tmp_path):
    root = indexed(tmp_path)
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.fspath(root / ".ov" / journal.SOCKET_NAME))
    s.close()  # the file stays, nobody listens
    (root / "d1" / "f1.txt").write_text("needle_xyz\n")
    assert ask(db_path_for(root), root) is None
    assert grep(root, "-F", "needle_xyz") == grep(root, "--no-index", "-F", "needle_xyz")


def test_ov_index_watch_serves_grep_a_journal(tmp_path):
    """End to end: `ov index --watch` keeps a journal; a grep run right after a save finds
    the saved text (read because the journal named it) and gives `--no-index`'s answer."""
    root = make_tree(tmp_path / "t", FILES)
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", "--watch", "--no-embed", str(root)],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while "watching" not in (line := p.stderr.readline()):
            assert line and time.monotonic() < deadline, "ov index --watch did not start"
        db = db_path_for(root)
        while ask(db, root) is None:
            assert time.monotonic() < deadline, "the journal never vouched for the index"
            time.sleep(0.05)
        status = subprocess.run([sys.executable, "-m", "ov", "status", "-o", "json"], cwd=root, env=env,
                                capture_output=True, text=True, timeout=60)
        import json

        assert json.loads(status.stdout)["result"]["journal"] == {"ready": True, "not_ready": "", "changed": 0}
        (root / "d1" / "f4.txt").write_text("saved needle_xyz\n")
        got = subprocess.run([sys.executable, "-m", "ov", "grep", "-o", "json", "-F", "needle_xyz"],
                             cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert '"d1/f4.txt"' in got.stdout, got.stdout + got.stderr
        assert grep(root, "-F", "needle_xyz") == grep(root, "--no-index", "-F", "needle_xyz")
        text = subprocess.run([sys.executable, "-m", "ov", "status"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=60).stdout
        assert "change journal:  ready: 1 path changed since the watcher's catch-up" in text, text
        p.send_signal(signal.SIGTERM)  # as a service manager stops it: the socket goes too
        assert p.wait(30) in (0, 130)
        assert not (root / ".ov" / journal.SOCKET_NAME).exists()
        text = subprocess.run([sys.executable, "-m", "ov", "status"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=60).stdout
        assert "change journal:  none (no watcher" in text, text
    finally:
        p.kill()
        p.wait()
        p.stderr.close()


ORDERED = {name: "needle_xyz\n" for name in [
    "b.txt", "a.txt", "A.txt", "a-b/x.txt", "a.b/x.txt", "a/x.txt", "a/b/c/deep.txt", "a/b.txt",
    "z/1.txt", "z/10.txt", "z/2.txt", "_u/x.txt", "Z.txt"]}


def test_the_files_a_journal_picks_come_in_the_walks_order(tmp_path):
    root = make_tree(tmp_path / "t", {**ORDERED, "big.txt": "x" * 500 + "\nneedle_xyz\n",
                                      "other/plain.txt": "nothing\n"})
    api.index(root, embed=False, max_filesize=300)  # big.txt: not indexed, read every time
    j = opened(root)
    try:
        os.makedirs(root / "new" / "deep")
        (root / "new" / "deep" / "n.txt").write_text("needle_xyz new\n")
        os.remove(root / "a" / "x.txt")
        (root / "z" / "3.txt").write_text("needle_xyz 3\n")
        from ov.search.prefilter import index_candidates

        from ov.search.files import listing_dir
        from ov.search.scope import GrepStats, grep_walk_options

        pre = index_candidates(root)(["needle_xyz"], False)
        picked = pre.trusted_files(root, [""], grep_walk_options(False, False, None), GrepStats(),
                                   listing_dir(root))
        assert picked is not None  # the journal answered: the listing's way is taken
        assert [r for r, _ in picked] == ["A.txt", "Z.txt", "_u/x.txt", "a/b/c/deep.txt",
                                          "a/b.txt", "a-b/x.txt", "a.b/x.txt", "a.txt", "b.txt",
                                          "big.txt", "new/deep/n.txt", "z/1.txt", "z/10.txt",
                                          "z/2.txt", "z/3.txt"]
        for args in (["-F", "needle_xyz"], ["-F", "needle_xyz", "z"], ["-F", "needle_xyz", "a", "new"],
                     ["-l", "needle_xyz"]):
            with_journal = grep(root, *args)
            assert with_journal == grep(root, "--no-index", *args), args
        assert ("big.txt", 2, "needle_xyz") in grep(root, "-F", "needle_xyz")
        assert ("new/deep/n.txt", 1, "needle_xyz new") in grep(root, "-F", "needle_xyz")
        assert not [m for m in grep(root, "-F", "needle_xyz") if m[0] == "a/x.txt"]
    finally:
        j.close()


def same(root: Path, *args: str) -> None:
    """grep with the journal gives --no-index's answer."""
    assert grep(root, *args) == grep(root, "--no-index", *args), args


def test_the_other_names_of_a_file_with_several_links_are_read(tmp_path):
    root = indexed(tmp_path)
    os.link(root / "d0" / "sub" / "kept.txt", root / "d1" / "alias.txt")
    api.index(root, embed=False)  # both names indexed, one inode
    j = opened(root)
    try:
        with open(root / "d0" / "sub" / "kept.txt", "a") as f:  # inotify names this one only
            f.write("linked_needle\n")
        same(root, "-F", "linked_needle")
        assert [m[0] for m in grep(root, "-F", "linked_needle")] == ["d0/sub/kept.txt", "d1/alias.txt"]
        with open(root / "d1" / "alias.txt", "a") as f:
            f.write("second_needle\n")
        same(root, "-F", "second_needle")
        assert len(grep(root, "-F", "second_needle")) == 2
    finally:
        j.close()


def wait_vouching(root: Path, w) -> None:
    """Wait (60 s at most) until the watcher `w`'s journal vouches for the index."""
    deadline = time.monotonic() + 60
    while ask(db_path_for(root), root) is None:
        assert time.monotonic() < deadline, w.state
        time.sleep(0.05)


def test_a_watcher_that_catches_up_vouches_for_what_changed_before_it(tmp_path):
    """The real flow: changes made while nothing watched are the catch-up's; a grep of one
    folder with --level-limit in between does not make the listing vouch for the others."""
    root = indexed(tmp_path)
    grep(root, "-F", "needle_xyz")  # the listing is cached
    (root / "d2" / "new.txt").write_text("needle_xyz unwatched\n")
    (root / "d1" / "f1.txt").write_text("needle_xyz unwatched edit\n")
    w = api.watcher(root, embed=False).start()
    try:
        wait_vouching(root, w)
        assert grep(root, "--level-limit", "5", "-F", "needle_xyz", "d0") == [
            ("d0/sub/kept.txt", 1, "needle_xyz was here from the start")]
        same(root, "-F", "needle_xyz")
        assert len(grep(root, "-F", "needle_xyz")) == 3
    finally:
        w.stop()


def test_a_tree_without_an_index_gets_its_journal_once_the_catch_up_made_one(tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    w = api.watcher(root, embed=False).start()
    try:
        wait_vouching(root, w)
    finally:
        w.stop()


def test_names_links_and_swaps_give_the_answer_without_an_index(tmp_path):
    root = make_tree(tmp_path / "t", {**FILES, "b/x.txt": "needle_xyz b\n", "c/y.txt": "needle_xyz c\n",
                                      "real/r.txt": "plain\n"})
    os.symlink("real/r.txt", root / "flnk")
    api.index(root, embed=False, follow=True)
    for d in ("b", "c"):
        os.utime(root / d, ns=(10**18, 10**18))
    grep(root, "-F", "needle_xyz")  # the listing is cached
    j = opened(root)
    try:
        # a name that is not UTF-8 (the index never holds one)
        (root / os.fsdecode(b"d0/caf\xe9.txt")).write_text("needle_xyz latin\n")
        same(root, "-F", "needle_xyz")
        # -L follows a link to a file whose target changed (the link's name is never evented)
        (root / "real" / "r.txt").write_text("needle_xyz through the link\n")
        same(root, "-L", "-F", "needle_xyz")
        # two folders swapped, their mtimes equal before and after
        os.rename(root / "b", root / "tmp")
        os.rename(root / "c", root / "b")
        os.rename(root / "tmp", root / "c")
        for d in ("b", "c"):
            os.utime(root / d, ns=(10**18, 10**18))
        same(root, "-F", "needle_xyz")
        # a PATH that is now a link to a folder, where a folder was
        shutil.rmtree(root / "d2")
        os.symlink("d1", root / "d2")
        same(root, "-F", "line", "d2")
    finally:
        j.close()


def test_no_journal_on_a_tree_a_network_file_system_reaches(tmp_path, monkeypatch):
    root = indexed(tmp_path)
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\nserver:/x {root}/d1 nfs4 rw 0 0\n")
    monkeypatch.setattr(journal, "_MOUNTS", str(mounts))
    j = Journal.open(root, db_path_for(root))
    try:
        j.caught_up(j.reset())
        assert ask(db_path_for(root), root) is None
        assert "nfs4" in j.state()["not_ready"]
    finally:
        j.close()


def test_candidates_and_states_come_from_one_state_of_the_index(tmp_path, monkeypatch):
    """A commit between the trigram query and the states' query is not seen by either: a
    file indexed meanwhile is neither a candidate nor a file with a known state, so grep
    reads it."""
    from ov.search import prefilter
    from ov.store import Store

    root = indexed(tmp_path)
    db = db_path_for(root)
    (root / "late.txt").write_text("needle_xyz came late\n")
    real = Store.trigram_files

    def then_index(self, *a, **kw):
        got = real(self, *a, **kw)
        api.index(root, embed=False)  # another connection commits late.txt here
        return got

    monkeypatch.setattr(Store, "trigram_files", then_index)
    pre = prefilter._read_prefilter(db, ["needle_xyz"], None)
    assert pre is not None and pre.cands == {"d0/sub/kept.txt"}
    assert "late.txt" not in pre.fresh  # so it is read: its state is not the index's
    monkeypatch.setattr(Store, "trigram_files", real)
    assert prefilter._read_prefilter(db, ["needle_xyz"], None).cands == {"d0/sub/kept.txt", "late.txt"}


def test_vectors_added_keep_the_file_states_a_grep_reads(tmp_path, monkeypatch):
    """A background worker commits vectors for hours on a big tree: those commits leave the
    cached file states valid (each grep used to read every file's state again), while a
    file indexed anew makes them read again."""
    from ov.search import prefilter
    from ov.store import Store

    root = indexed(tmp_path)
    db = db_path_for(root)
    assert prefilter._read_prefilter(db, ["needle_xyz"], None) is not None  # the cache is written
    reads = []
    real = Store.chunked_states
    monkeypatch.setattr(Store, "chunked_states", lambda self: reads.append(1) or real(self))
    with Store.open(db) as st, st.tx():  # as the worker's commit of a batch of vectors
        st.bump_vectors()
    assert prefilter._read_prefilter(db, ["needle_xyz"], None).fresh
    assert reads == []
    (root / "d0" / "sub" / "kept.txt").write_text("needle_xyz changed\n")
    api.index(root, embed=False)
    assert prefilter._read_prefilter(db, ["needle_xyz"], None).fresh
    assert reads == [1]


def test_the_journal_feeds_the_watcher_saves_and_config_changes(tmp_path):
    """On Linux the watcher's changes come from the journal (inotify, changes alone): a save
    is indexed, and a change of `.ov/config.toml` re-reads the tree."""
    root = indexed(tmp_path)
    reports = []
    w = api.watcher(root, embed=False, on_update=reports.append).start()
    try:
        wait_vouching(root, w)
        assert w.journal is not None and w.journal.complete
        (root / "d2" / "saved.txt").write_text("omicron_saved\n")
        deadline = time.monotonic() + 30
        while not any(r.added for r in reports):
            assert time.monotonic() < deadline, (reports, w.state)
            time.sleep(0.05)
        (root / ".ov" / "config.toml").write_text('ignore = ["d1/"]\n')
        while not any(r.removed for r in reports):
            assert time.monotonic() < deadline, (reports, w.state)
            time.sleep(0.05)
        with api.Index.open(root) as ix:
            paths = {h.path for h in ix.search("plain", search_type="keywords", limit=50).hits}
        assert paths and not any(p.startswith("d1/") for p in paths)
    finally:
        w.stop()


def test_many_changes_are_forgotten_after_a_catch_up_the_journal_asks_for(tmp_path, monkeypatch):
    root = indexed(tmp_path)
    monkeypatch.setattr(journal, "COMPACT_AT", 5)
    reports = []
    w = api.watcher(root, embed=False, on_update=reports.append).start()
    try:
        wait_vouching(root, w)
        for i in range(8):
            (root / "d0" / f"burst{i}.txt").write_text(f"burst_{i}\n")
        deadline = time.monotonic() + 30
        # the burst is indexed by the catch-up it asked for, and then forgotten
        while not (any(r.added == 8 for r in reports) and (got := ask(db_path_for(root), root))
                   is not None and len(got) < 5):
            assert time.monotonic() < deadline, (reports, w.journal.state())
            time.sleep(0.05)
        same(root, "-F", "burst_")
        assert len(grep(root, "-F", "burst_")) == 8
    finally:
        w.stop()


def test_what_was_written_through_a_name_grep_does_not_read_is_found_through_the_others(tmp_path):
    """Hard links again: the name written through is gone, ignored, or outside the PATH."""
    root = make_tree(tmp_path / "t", {**FILES, ".gitignore": "*.log\n", "s1/a.txt": "plain\n",
                                      "gone/a.txt": "plain\n", "c.txt": "plain\n"})
    os.makedirs(root / "s2")
    os.link(root / "s1" / "a.txt", root / "s2" / "b.txt")
    os.link(root / "gone" / "a.txt", root / "gone" / "b.txt")
    os.link(root / "c.txt", root / "c.log")
    api.index(root, embed=False)
    j = opened(root)
    try:
        with open(root / "s2" / "b.txt", "a") as f:
            f.write("needle_s2\n")
        same(root, "-F", "needle_s2", "s1")
        assert grep(root, "-F", "needle_s2", "s1") == [("s1/a.txt", 2, "needle_s2")]
        with open(root / "gone" / "b.txt", "a") as f:
            f.write("needle_gone\n")
        os.remove(root / "gone" / "b.txt")
        assert grep(root, "-F", "needle_gone") == [("gone/a.txt", 2, "needle_gone")]
        with open(root / "c.log", "a") as f:
            f.write("needle_log\n")
        assert grep(root, "-F", "needle_log") == [("c.txt", 2, "needle_log")]
    finally:
        j.close()


def test_folders_swapped_after_a_new_catch_up_are_listed_again(tmp_path):
    root = make_tree(tmp_path / "t", {**FILES, "a/one.txt": "plain\n", "b/two.txt": "needle_two\n"})
    api.index(root, embed=False)
    for d in ("a", "b"):
        os.utime(root / d, ns=(10**18, 10**18))
    j = opened(root)
    try:
        grep(root, "-F", "needle_two")  # the listing, at the journal's first point
        j.caught_up(j.reset())  # a new catch-up: the listing's point is an old one now
        os.rename(root / "a", root / "tmp")
        os.rename(root / "b", root / "a")
        os.rename(root / "tmp", root / "b")
        for d in ("a", "b"):
            os.utime(root / d, ns=(10**18, 10**18))
        assert grep(root, "-F", "needle_two") == [("a/two.txt", 1, "needle_two")]
        same(root, "-F", "needle_two")
    finally:
        j.close()


def test_a_folder_replaced_by_a_link_to_its_new_place_is_no_bind_mount(tmp_path):
    root = make_tree(tmp_path / "t", {**FILES, "a/sub/x.txt": "plain\n"})
    api.index(root, embed=False)
    j = opened(root)
    try:
        os.rename(root / "a", root / "b")
        os.symlink("b", root / "a")
        assert ask(db_path_for(root), root) is not None, j.state()
        same(root, "-F", "plain")
    finally:
        j.close()


def test_a_folder_the_journal_cannot_watch_hands_the_watcher_to_watchfiles(tmp_path):
    import ctypes

    root = indexed(tmp_path)
    reports = []
    w = api.watcher(root, embed=False, on_update=reports.append).start()
    try:
        wait_vouching(root, w)
        real = w.journal._libc

        class Full:  # the OS's max_user_watches reached
            def inotify_add_watch(self, *_a):
                ctypes.set_errno(28)
                return -1

        w.journal._libc = Full()
        os.makedirs(root / "new")
        (root / "new" / "first.txt").write_text("zeta_first\n")
        deadline = time.monotonic() + 30
        while ask(db_path_for(root), root) is not None or w.journal.complete:
            assert time.monotonic() < deadline, w.journal.state()
            time.sleep(0.05)
        w.journal._libc = real
        time.sleep(1.5)  # watchfiles' watch set up
        (root / "new" / "second.txt").write_text("zeta_second\n")
        while True:
            with api.Index.open(root) as ix:
                got = {h.path for h in ix.search("zeta_first zeta_second", search_type="keywords").hits}
            if got == {"new/first.txt", "new/second.txt"}:
                break
            assert time.monotonic() < deadline, (got, reports)
            time.sleep(0.1)
    finally:
        w.stop()


def test_a_new_generation_is_above_every_earlier_one_whatever_the_clock(tmp_path, monkeypatch):
    """grep's cache of file states is keyed on the generation: one met again (a coarse
    clock, a clock set back) would be trusted for a later state of the index."""
    from ov.store import Store
    from ov.store import queries

    root = indexed(tmp_path)
    with Store.open(db_path_for(root)) as st:
        before = int(st.generation(), 16)
        monkeypatch.setattr(queries.time, "time_ns", lambda: 5)  # the clock far behind
        seen = []
        for _ in range(3):
            with st.tx():
                st.bump_generation()
            seen.append(int(st.generation(), 16))
    assert seen == [before + 1, before + 2, before + 3]
