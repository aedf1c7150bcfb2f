"""grep's helper process (`ov.search.helper.Helper`): with it, a search gives exactly the records
and counts it gives alone (records found by the helper cross the socket as tuples); the
tree is walked once (the helper walks on where the parent stood); what the walk tells
comes in its place; should the helper end early, the parent walks on itself."""

from __future__ import annotations

import json
import os
import threading

import pytest

from ov.search import files as fsearch
from ov.search import helper as helper_mod
from ov.search.helper import BINARY as _BINARY
from ov.search.helper import FOUND as _FOUND
from ov.search.helper import NO_MATCH as _NO_MATCH
from ov.search.helper import SEARCH as _SEARCH
from ov.search.helper import UNREADABLE as _UNREADABLE
from ov.search.helper import Helper as _Helper


def _tree(tree, n: int = 120):
    files = {f"d{i // 25:02}/f{i:03}.txt": ("needle here\n" if i % 7 == 0 else "hay\n") * (1 + i % 3)
             for i in range(n)}
    files["d00/bin.dat"] = "needle\x00binary"
    files["d01/late.txt"] = "x\n" * 10 + "needle late\n"
    return tree(files)


@pytest.fixture(autouse=True)
def idle_cores(monkeypatch):
    """The helper starts only when a core is idle (`idle_core`); here it always does."""
    monkeypatch.setattr(helper_mod, "idle_core", lambda: True)


def test_the_helper_needs_an_idle_core(monkeypatch, tmp_path):
    monkeypatch.undo()
    monkeypatch.setattr(helper_mod.os, "sched_getaffinity", lambda pid: {0, 1})
    real_open = open
    loadavg = tmp_path / "loadavg"

    def fake_open(path, *a, **k):
        return real_open(loadavg if path == "/proc/loadavg" else path, *a, **k)

    monkeypatch.setattr("builtins.open", fake_open)
    loadavg.write_text("0.50 0.40 0.30 1/300 4242\n")  # only this process runs
    assert helper_mod.idle_core()
    loadavg.write_text("0.50 0.40 0.30 2/300 4242\n")  # the other core is busy
    assert not helper_mod.idle_core()
    monkeypatch.setattr(helper_mod.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert helper_mod.idle_core()
    monkeypatch.setattr(helper_mod.os, "sched_getaffinity", lambda pid: {0})
    loadavg.write_text("0.50 0.40 0.30 1/300 4242\n")
    assert not helper_mod.idle_core()


def _run(root, monkeypatch, helper_after, **kw):
    monkeypatch.chdir(root)
    orig = fsearch._grep_files

    def with_helper(*a, **k):
        return orig(*a, **{**k, "helper_after": helper_after})

    monkeypatch.setattr(fsearch, "_grep_files", with_helper)
    st = fsearch.GrepStats()
    recs = list(fsearch.iter_grep("needle", (), node_limit=kw.pop("node_limit", 10_000), stats=st,
                                  use_index=False, **kw))
    monkeypatch.setattr(fsearch, "_grep_files", orig)
    return recs, (st.files, st.count, st.searched, st.binary, st.unreadable, st.truncated)


def _spy_answers(monkeypatch) -> tuple[list, list]:
    """(forks, the answers of the files the helper searched), recorded."""
    forks, answers = [], []
    real_fork, real_receive = os.fork, _Helper._receive
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())

    def spy(self):
        got = real_receive(self)
        if got is not None and got[1] is not None:
            answers.extend(a for (rel, _), (a, _) in zip(*got) if rel is not None)
        return got

    monkeypatch.setattr(_Helper, "_receive", spy)
    return forks, answers


@pytest.mark.parametrize("kw", [{}, {"mode": "count"}, {"mode": "files"}, {"before": 1, "after": 2},
                                {"node_limit": 9}, {"node_limit": 14}, {"node_limit": 30, "mode": "files"},
                                {"node_limit": 12, "mode": "count"},
                                {"before": 2, "after": 1, "node_limit": 10},
                                {"before": 0, "after": 3, "node_limit": 13}])
@pytest.mark.parametrize("ahead", [0, 10**6])  # the helper searches every block, or none
def test_helper_gives_the_same_answer(tree, monkeypatch, kw, ahead):
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    monkeypatch.setattr(helper_mod, "SHIP_MAX", 2)  # files with 3 matches are the parent's
    monkeypatch.setattr(helper_mod, "AHEAD", ahead)
    root = _tree(tree)
    alone = _run(root, monkeypatch, None, **dict(kw))
    forks, answers = _spy_answers(monkeypatch)
    helped = _run(root, monkeypatch, 10, **dict(kw))
    assert helped == alone
    assert forks == [1], threading.enumerate()  # no fork while another thread runs
    assert alone[0]  # the tree holds matches past the helper's start
    if ahead:
        assert answers == []  # the parent searched every file
        return
    assert answers  # the helper's answers were used
    if "node_limit" not in kw:
        assert _FOUND in answers and _NO_MATCH in answers
        if kw.get("mode", "matches") == "matches":
            assert _SEARCH in answers  # and a file over SHIP_MAX went back to the parent


def _stream(h, files, pause: float = 0.0):
    import time

    out = []
    for rel, _, answer, found in h.stream(iter(files), "files"):
        out.append((rel, answer, found))
        time.sleep(pause)  # a parent busy with each file
    return out


def test_the_helper_walks_on_and_sends_block_by_block(monkeypatch):
    """The helper sends the files of the walk in order, block by block: bare for the
    parent to search, or, while the parent has AHEAD blocks to search, with its answers."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    monkeypatch.setattr(helper_mod, "AHEAD", 1)
    files = [(f"f{i:02}", f"/x/f{i:02}") for i in range(40)]
    answers = {0: (_NO_MATCH, None), 1: (_FOUND, (1,)), 2: (_BINARY, None), 3: (_UNREADABLE, None)}
    h = _Helper(iter(files), lambda rel, p: answers[int(p[-2:]) % 4])
    try:
        got = _stream(h, files, pause=0.01)
    finally:
        h.close()
    assert [rel for rel, _, _ in got] == [rel for rel, _ in files]
    assert h.finished
    for i, (rel, answer, found) in enumerate(got):
        assert (answer, found) in (answers[i % 4], (_SEARCH, None))
    theirs = sum((a, f) == answers[i % 4] for i, (_, a, f) in enumerate(got))
    assert 4 <= theirs < 40  # the helper searched blocks while the parent was busy, not all


def test_the_tree_is_walked_once(tree, monkeypatch, tmp_path):
    """The helper searches the files the parent walked: it never walks the tree itself,
    so a tree that changes during a search gives no two lists to reconcile."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    # the helper searches every block: whether it searches any depends on the parent lagging
    # behind, and a fresh clone's run (a worker embedding beside it) once found it never did
    monkeypatch.setattr(helper_mod, "AHEAD", 0)
    root = _tree(tree)
    alone = _run(root, monkeypatch, None)
    log = tmp_path / "walks"
    real = fsearch._searchable

    def searchable(*a, **k):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        yield from real(*a, **k)

    monkeypatch.setattr(fsearch, "_searchable", searchable)
    forks, answers = _spy_answers(monkeypatch)
    assert _run(root, monkeypatch, 10) == alone
    assert forks == [1] and answers
    assert log.read_text().split() == [str(os.getpid())]


def test_a_file_that_goes_between_walk_and_search(tree, monkeypatch):
    """A file removed after the walk listed it and before the helper opened it is
    unreadable, as it would be to the parent alone."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    gone = "d03/f090.txt"
    real = fsearch._searchable

    def searchable(*a, **k):
        for rel, abspath in real(*a, **k):
            if rel == gone:
                os.unlink(abspath)
            yield rel, abspath

    monkeypatch.setattr(fsearch, "_searchable", searchable)
    helped = _run(root, monkeypatch, 10)
    assert helped[1][4] == 1  # one unreadable file
    assert all(m.path != gone for m in helped[0])


def test_a_helper_that_dies_leaves_the_rest_of_the_walk_to_the_parent(monkeypatch):
    """The helper ends before the walk does: the parent walks on from where it forked,
    past the files it already has, and searches the rest itself."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    monkeypatch.setattr(helper_mod, "AHEAD", 0)  # the helper searches every block
    seen = []

    def check(rel, p):
        seen.append(rel)
        if len(seen) > 6:  # in the helper: its second block ends it
            os._exit(3)
        return _NO_MATCH, None

    files = [(f"f{i:02}", f"f{i:02}") for i in range(20)]
    h = _Helper(iter(files), check)
    try:
        got = [(rel, a) for rel, _, a, _ in h.stream(iter(files), "files")]
    finally:
        h.close()
    assert [rel for rel, _ in got] == [rel for rel, _ in files]
    answers = [a for _, a in got]
    assert answers[:4] == [_NO_MATCH] * 4  # the helper's first block
    assert answers[4:] == [_SEARCH] * 16  # the rest: the parent's
    assert not h.finished


def test_cli_grep_over_a_large_tree_uses_the_helper_and_finds_every_match(tree, ov, monkeypatch):
    n = 1500  # past HELPER_AFTER
    assert n > helper_mod.HELPER_AFTER + 4 * helper_mod.BLOCK
    started = []
    real_init = _Helper.__init__

    def init(self, *a):
        started.append(1)
        real_init(self, *a)

    monkeypatch.setattr(_Helper, "__init__", init)
    root = tree({f"d{i // 100:02}/f{i:04}.txt": ("needle\n" if i % 13 == 0 else "hay\n") for i in range(n)})
    r = ov("grep", "--node-limit", "100000", "-o", "json", "needle", cwd=root)
    assert r.code == 0
    got = [m["path"] for m in json.loads(r.out)["result"]["matches"]]
    assert got == [f"d{i // 100:02}/f{i:04}.txt" for i in range(0, n, 13)]
    assert started == [1]
    r = ov("grep", "-c", "-o", "json", "--node-limit", "100000", "hay", cwd=root)
    counts = json.loads(r.out)["result"]["counts"]
    assert len(counts) == n - len(range(0, n, 13)) and set(counts.values()) == {1}
    assert len(started) == 2


def test_a_helper_that_cannot_start_leaves_the_search_to_the_parent(tree, monkeypatch):
    """fork() can fail (EAGAIN at a process limit, ENOMEM): grep then searches alone, as
    it would without the helper, and leaves no socket open."""
    import errno
    import socket

    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    alone = _run(root, monkeypatch, None)
    pairs: list = []
    real_pair = socket.socketpair

    def socketpair():
        pair = real_pair()
        pairs.extend(pair)
        return pair

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(socket, "socketpair", socketpair)
    monkeypatch.setattr(os, "fork", no_fork)
    assert _run(root, monkeypatch, 10) == alone
    assert len(pairs) == 2
    assert all(s.fileno() == -1 for s in pairs)  # closed


def test_no_helper_is_forked_while_other_threads_run(tree, monkeypatch):
    """A forked child holds copies of the locks other threads held at that moment (and
    CPython warns of fork with threads): a process that runs threads searches alone."""
    import threading

    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    alone = _run(root, monkeypatch, None)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert _run(root, monkeypatch, 10) == alone
    finally:
        stop.set()
        t.join()
    assert forks == []
    assert _run(root, monkeypatch, 10) == alone and forks == [1]  # alone again: it forks


def test_what_the_walk_tells_stays_in_its_place(tree, monkeypatch):
    """The helper's walk runs ahead of the parent's search: a warning it meets reaches
    the parent in its place, and one past the point where the node limit stops the run
    is not reported, as it is not without the helper."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    os.symlink(root / "nowhere", root / "d04" / "zz-broken")  # walked last
    os.symlink(root / "nowhere", root / "d00" / "a-broken")  # before the helper starts

    def run(helper_after, limit):
        monkeypatch.chdir(root)
        orig = fsearch._grep_files
        monkeypatch.setattr(fsearch, "_grep_files",
                            lambda *a, **k: orig(*a, **{**k, "helper_after": helper_after}))
        st = fsearch.GrepStats()
        recs = list(fsearch.iter_grep("needle", (), node_limit=limit, stats=st, use_index=False,
                                      follow=True))
        monkeypatch.setattr(fsearch, "_grep_files", orig)
        return len(recs), st.warnings, st.truncated

    for limit in (8, 12, 10_000):
        alone = run(None, limit)
        assert run(10, limit) == alone
    assert len(run(None, 10_000)[1]) == 2 and len(run(None, 12)[1]) == 1


def test_many_index_candidates_start_the_helper_at_the_first_file(tree, monkeypatch):
    """When the index names at least HELPER_AFTER files, the stat of the others is the
    helper's from the first file on (it walks on); the answer is the same."""
    from ov.search.prefilter import Prefilter

    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    monkeypatch.chdir(root)
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    def hook(literals, fold):  # every third file a candidate; the others unknown: read
        return Prefilter(set(names[::3]), {})

    started = []
    real_start = helper_mod.start
    monkeypatch.setattr(helper_mod, "start", lambda *a: started.append(st.searched) or real_start(*a))

    def run(helper_after):
        orig = fsearch._grep_files
        monkeypatch.setattr(fsearch, "_grep_files",
                            lambda *a, **k: orig(*a, **{**k, "helper_after": helper_after}))
        recs = list(fsearch.iter_grep("needle", (), node_limit=10_000, stats=st, candidates=hook))
        monkeypatch.setattr(fsearch, "_grep_files", orig)
        return recs, (st.files, st.count, st.searched, st.binary)

    st = fsearch.GrepStats()
    alone = run(None)
    n = len(names[::3])
    st = fsearch.GrepStats()
    assert run(n) == alone and started == [0]  # at the first file
    st = fsearch.GrepStats()
    assert run(n + 1) == alone and started == [0, n + 1]  # as many as the limit, as before
