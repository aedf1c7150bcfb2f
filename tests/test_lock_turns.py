"""A long embedding run does not hold a watcher's batch back (the MCP review's first
finding): the index lock is let go between two commits to a process that waits for it
(`ov.indexer.yield_lock`), and the watcher embeds only when no change waits for it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import make_tree
from ov import api
from ov.embed import HashEmbedder
from ov.indexer import IndexLock, IndexOptions, complete_index, held_lock, index_paths, index_tree, yield_lock
from ov.store import Store


class SlowEmbedder(HashEmbedder):
    """The test embedder, a pause per call: an embedding run long enough to wait behind."""

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s
        self.calls = 0

    def embed(self, texts, *args, **kwargs):
        self.calls += 1
        time.sleep(self.pause_s)
        return super().embed(texts, *args, **kwargs)


def notes(n: int) -> dict[str, str]:
    return {f"notes/n{i:03d}.md": f"# Note {i}\n\nword{i} alpha beta {i * 7919}\n" for i in range(n)}


def pending(db: Path) -> int:
    with Store.open(db) as s:
        return len(s.pending_embeddings())


def until(check, seconds: float, what: str, step: float = 0.05) -> None:
    """Wait for `check()` to hold; fail with `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(step)


def keyword_paths(root: Path, word: str) -> set[str]:
    with api.Index.open(root) as ix:
        return {h.path for h in ix.search(word, search_type="keywords").hits}


def test_a_holder_lets_a_waiter_in_and_takes_the_lock_back(tmp_path):
    db = tmp_path / "index.db"
    holder = IndexLock(db)
    holder.acquire(0)
    got = threading.Event()
    done = threading.Event()

    def wait_for_it() -> None:
        waiter = IndexLock(db)
        waiter.acquire(30, announce=True)  # says so while it waits (a watcher's batch does)
        got.set()
        time.sleep(0.3)
        waiter.release()
        done.set()

    t = threading.Thread(target=wait_for_it)
    t.start()
    try:
        until(holder.wanted, 10, "the waiter never said it waits")
        assert not got.is_set()
        assert yield_lock(db) is True
        # the waiter had its turn, and the holder holds the lock again
        assert got.is_set() and done.is_set()
        assert held_lock(db) is holder and holder.fd is not None
        assert not holder.wanted()
        assert yield_lock(db) is True  # nobody waits: nothing happens
        assert held_lock(db) is holder
    finally:
        t.join(30)
        holder.release()
    assert held_lock(db) is None


def test_a_waiter_that_gives_up_leaves_no_mark(tmp_path):
    db = tmp_path / "index.db"
    holder = IndexLock(db)
    holder.acquire(0)
    try:
        waiter = IndexLock(db)
        try:
            waiter.acquire(0.8, announce=True)
        except Exception as e:
            assert getattr(e, "code", None) == "index_busy"
        else:
            raise AssertionError("two holders of one lock")
        assert not holder.wanted()
    finally:
        holder.release()


def test_a_batch_is_written_while_another_run_embeds(tmp_path):
    root = make_tree(tmp_path / "t", notes(300))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # keywords now, vectors coming
    db = root / ".ov" / "index.db"
    rows = pending(db)
    assert rows >= 300
    slow = SlowEmbedder(0.4)  # 32 texts a call: ~10 calls, ~4 s, past the batch's 3 s wait
    errors: list[BaseException] = []

    def embed_all() -> None:
        try:
            complete_index(db, embedder=slow, wait_s=5)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=embed_all)
    t.start()
    try:
        until(lambda: slow.calls > 0, 20, "the other run never started embedding", 0.02)
        (root / "zebra.md").write_text("# Zebra\n\nzebraword stripes\n")
        # waits for the lock (3 s at most) while the other run embeds: let in between two steps
        index_paths(root, ["zebra.md"], opts=IndexOptions(embed=False))
        assert t.is_alive() and pending(db) > 0, "the batch waited for the whole embedding run"
        assert keyword_paths(root, "zebraword") == {"zebra.md"}
    finally:
        t.join(120)
    assert not errors
    assert pending(db) == 0  # the run read the waiting rows again after the turn: zebra.md's too


def test_the_watcher_applies_a_change_before_the_catch_up_has_embedded_everything(tmp_path):
    root = make_tree(tmp_path / "t", notes(300))
    db = root / ".ov" / "index.db"
    slow = SlowEmbedder(0.4)
    w = api.watcher(root, embedder=slow)
    w.start()
    try:
        # the keyword rows are in; the vectors are being added
        until(lambda: slow.calls > 0, 60, "the catch-up never started embedding", 0.02)
        (root / "zebra.md").write_text("# Zebra\n\nzebraword stripes\n")
        until(lambda: "zebra.md" in keyword_paths(root, "zebraword"), 60, "the change was not applied", 0.1)
        # zebra.md has a row or two waiting; the catch-up's 300 notes had most of theirs
        assert pending(db) > 50, "the change waited for every vector of the catch-up"
        # then the vectors are finished, the new file's too
        until(lambda: not pending(db), 120, "the watcher stopped embedding", 0.2)
    finally:
        w.stop()
    assert not w.state.errors


def test_status_counts_one_state_of_an_index_being_embedded(tmp_path, monkeypatch):
    """`ov status` stats every indexed file between its counts; an embedder committing
    meanwhile made `embedded_chunks` and `coverage.embedded` tell two states (866 passages
    against 1,280 rows 30 s into a server's first build). They now come from one read."""
    root = make_tree(tmp_path / "t", notes(40))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    db = root / ".ov" / "index.db"
    states = Store.file_states
    wrote = []

    def states_then_a_writer(self):
        got = states(self)
        if not wrote:  # another process's embedder commits between two of status's reads
            wrote.append(complete_index(db, embedder=HashEmbedder()))
        return got

    monkeypatch.setattr(Store, "file_states", states_then_a_writer)
    with api.Index.open(root) as ix:
        st = ix.status()
    assert wrote and wrote[0].embedded > 0
    assert st.embedded_chunks == 0 and st.coverage["embedded"] == 0, (st.embedded_chunks, st.coverage)
    assert pending(db) == 0  # and the writer did commit


def test_the_watchers_embedding_gives_way_to_another_process(tmp_path):
    """What a watcher embeds is left over work: when another process waits for the lock
    the watcher holds (a second server's batch), the watcher stops embedding and lets go,
    instead of taking turns with it."""
    root = make_tree(tmp_path / "t", notes(3))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    w = api.watcher(root, embedder=HashEmbedder())
    db = root / ".ov" / "index.db"
    assert not w._preempted()
    mine = IndexLock(db)
    mine.acquire(0)  # as the watcher holds it while it embeds
    waiter = threading.Thread(target=lambda: _take_and_leave(db))
    waiter.start()
    try:
        until(w._preempted, 10, "the watcher did not see the waiter")
    finally:
        mine.release()
        waiter.join(30)
    assert not w._preempted()


def _take_and_leave(db: Path) -> None:
    lock = IndexLock(db)
    lock.acquire(20, announce=True)
    lock.release()


def test_a_long_run_that_waits_does_not_cut_in(tmp_path):
    """`ov index`, a `--full` rebuild or a worker that waits for the lock does not ask a
    holder to let go: a rebuild let in would leave the holder to fail (its file replaced)
    after waiting the whole rebuild; it waits its few seconds and is `index_busy`."""
    db = tmp_path / "index.db"
    holder = IndexLock(db)
    holder.acquire(0)
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(_busy_after(db, 1.5)))
        t.start()
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            assert not holder.wanted()
            time.sleep(0.05)
        t.join(10)
        assert seen == ["index_busy"]
    finally:
        holder.release()


def _busy_after(db: Path, wait_s: float) -> str:
    try:
        IndexLock(db).acquire(wait_s)
    except Exception as e:  # noqa: BLE001 - its code is the answer
        return getattr(e, "code", repr(e))
    return "acquired"


def test_a_tree_that_never_stops_changing_still_gets_its_vectors(tmp_path, monkeypatch):
    """The journal hears every change, ignored files too: a log appended every few
    milliseconds kept a change queued at every moment, and the watcher, which stopped
    embedding whenever one was, added no vector (coverage flat for 50 s). Each stretch of
    embedding now runs at least EMBED_MIN_S before a queued change stops it. Here the
    journal says a change is queued at every moment, and a log is appended meanwhile."""
    from ov.journal import Journal

    monkeypatch.setattr(Journal, "queued", lambda self: True)
    root = make_tree(tmp_path / "t", {**notes(200), ".gitignore": "*.log\n"})
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    db = root / ".ov" / "index.db"
    w = api.watcher(root, embedder=SlowEmbedder(0.05))
    churning = threading.Event()
    churning.set()

    def churn() -> None:
        with open(root / "app.log", "a") as f:
            while churning.is_set():
                f.write("tick\n")
                f.flush()
                time.sleep(0.01)

    t = threading.Thread(target=churn)
    t.start()
    try:
        w.start()
        until(lambda: not pending(db), 120, "no vectors while the tree changes", 0.2)
        assert t.is_alive()  # still changing
    finally:
        churning.clear()
        t.join(10)
        w.stop()


def test_a_want_mark_dated_in_the_future_is_stale(tmp_path):
    """A mark with a future time (a clock stepped back, an `.ov` restored from a copy)
    would make every holder give the lock up after every step, for good."""
    import os

    db = tmp_path / "index.db"
    holder = IndexLock(db)
    holder.acquire(0)
    try:
        holder.want_path.write_text("")
        assert holder.wanted()
        future = time.time() + 3600
        os.utime(holder.want_path, (future, future))
        assert not holder.wanted()
    finally:
        holder.release()


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="the holder is named from /proc/locks")
def test_a_busy_index_names_the_process_that_holds_it(tmp_path):
    """A second `ov index` waited its 3 s without a word and said "another `ov index` is
    updating this index", where `ov status` knew the holder (a review of concurrent use)."""
    from conftest import make_tree, run_subprocess

    root = make_tree(tmp_path / "t", {"a.md": "lantern\n"})
    assert run_subprocess(["index", "--no-embed"], cwd=root).code == 0
    db = root / ".ov" / "index.db"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ov.indexer import IndexLock\n"
                               "IndexLock(sys.argv[1]).acquire(5)\nprint('held', flush=True)\ntime.sleep(60)\n",
                               str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = run_subprocess(["index", "--no-embed", "-o", "json"], cwd=root, env={"OV_LOCK_WAIT": "0.3"})
        err = r.json["error"]
        assert r.code == 2 and err["code"] == "index_busy" and err["retryable"] is True
        assert f"another ov (pid {holder.pid}" in err["message"] and "OV_LOCK_WAIT=SECONDS waits longer than 0.3 s" \
            in err["message"], err
    finally:
        holder.kill()
        holder.wait()
