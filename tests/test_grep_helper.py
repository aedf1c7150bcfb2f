"""grep's helper process (`ov.search.helper.Helper`): with it, a search gives exactly the records
and counts it gives alone (records found by the helper cross the pipe as tuples); a helper block whose names differ from the parent's walk, or
that never arrives, is searched by the parent."""

from __future__ import annotations

import json
import os

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


@pytest.mark.parametrize("kw", [{}, {"mode": "count"}, {"mode": "files"}, {"before": 1, "after": 2},
                                {"node_limit": 9}, {"node_limit": 14}, {"node_limit": 30, "mode": "files"},
                                {"node_limit": 12, "mode": "count"},
                                {"before": 2, "after": 1, "node_limit": 10},
                                {"before": 0, "after": 3, "node_limit": 13}])
def test_helper_gives_the_same_answer(tree, monkeypatch, kw):
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    monkeypatch.setattr(helper_mod, "SHIP_MAX", 2)  # files with 3 matches are the parent's
    root = _tree(tree)
    alone = _run(root, monkeypatch, None, **dict(kw))
    forks, answers = [], []
    real_fork, real_verdict = os.fork, _Helper.verdict
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())

    def spy(self, *a):
        got = real_verdict(self, *a)
        answers.append(got[0])
        return got

    monkeypatch.setattr(_Helper, "verdict", spy)
    helped = _run(root, monkeypatch, 10, **dict(kw))
    assert helped == alone
    assert forks == [1]
    assert _FOUND in answers and _NO_MATCH in answers  # the helper's answers were used
    if kw.get("mode", "matches") == "matches":
        assert _SEARCH in answers  # and a file over SHIP_MAX went back to the parent
    assert alone[0]  # the tree holds matches past the helper's start


def test_helper_answers_block_by_block(monkeypatch):
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    files = [(f"f{i:02}", f"/x/f{i:02}") for i in range(20)]
    answers = {0: (_NO_MATCH, None), 1: (_FOUND, ([(1, "a needle", [(2, 8, "needle")], [], [])], False)),
               2: (_BINARY, None), 3: (_UNREADABLE, None)}
    h = _Helper(1, lambda: iter(files), lambda rel, p: answers[int(p[-2:]) % 4])
    try:
        assert not h.owns(0) and h.owns(1) and not h.owns(2) and h.owns(3)
        for i in (4, 5, 6, 7, 12, 13, 14, 15):
            assert h.verdict(i // 4, i % 4, f"f{i:02}") == answers[i % 4]
    finally:
        h.close()


def test_a_block_that_differs_is_the_parents(monkeypatch):
    """The tree changed between the walks: from the first name that differs, the rest of
    that block is searched by the parent; the next block is the helper's again."""
    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    parent = [f"f{i:02}" for i in range(16)]
    helper = parent[:5] + ["f05-new"] + parent[6:]
    h = _Helper(1, lambda: iter([(n, n) for n in helper]), lambda rel, p: (_NO_MATCH, None))
    try:
        got = [h.verdict(i // 4, i % 4, parent[i])[0] for i in (4, 5, 6, 7, 12, 13)]
        assert got == [_NO_MATCH, _SEARCH, _SEARCH, _SEARCH, _NO_MATCH, _NO_MATCH]
    finally:
        h.close()


def test_a_helper_that_dies_leaves_its_blocks_to_the_parent(monkeypatch):
    monkeypatch.setattr(helper_mod, "BLOCK", 4)

    def files():
        for i in range(14):  # block 1 is sent when block 3 starts; block 3 never is
            yield f"f{i:02}", f"f{i:02}"
        raise RuntimeError("the helper fails")

    h = _Helper(1, files, lambda rel, p: (_NO_MATCH, None))
    try:
        assert h.verdict(1, 0, "f04") == (_NO_MATCH, None)
        assert h.verdict(3, 0, "f12") == (_SEARCH, None)
        assert h.verdict(5, 1, "f21") == (_SEARCH, None)
    finally:
        h.close()


def test_cli_grep_over_a_large_tree_uses_the_helper_and_finds_every_match(tree, ov, monkeypatch):
    n = 1500  # past HELPER_AFTER
    assert n > helper_mod.HELPER_AFTER + 4 * helper_mod.BLOCK
    started = []
    real_init = _Helper.__init__

    def init(self, *a):
        started.append(a[0])
        real_init(self, *a)

    monkeypatch.setattr(_Helper, "__init__", init)
    root = tree({f"d{i // 100:02}/f{i:04}.txt": ("needle\n" if i % 13 == 0 else "hay\n") for i in range(n)})
    r = ov("grep", "--node-limit", "100000", "-o", "json", "needle", cwd=root)
    assert r.code == 0
    got = [m["path"] for m in json.loads(r.out)["result"]["matches"]]
    assert got == [f"d{i // 100:02}/f{i:04}.txt" for i in range(0, n, 13)]
    assert started == [helper_mod.HELPER_AFTER // helper_mod.BLOCK + 1]
    r = ov("grep", "-c", "-o", "json", "--node-limit", "100000", "hay", cwd=root)
    counts = json.loads(r.out)["result"]["counts"]
    assert len(counts) == n - len(range(0, n, 13)) and set(counts.values()) == {1}
    assert len(started) == 2


def test_a_helper_that_cannot_start_leaves_the_search_to_the_parent(tree, monkeypatch):
    """fork() can fail (EAGAIN at a process limit, ENOMEM): grep then searches alone, as
    it would without the helper, and leaves no pipe open."""
    import errno

    monkeypatch.setattr(helper_mod, "BLOCK", 4)
    root = _tree(tree)
    alone = _run(root, monkeypatch, None)
    pipes: list[int] = []
    real_pipe = os.pipe

    def pipe():
        fds = real_pipe()
        pipes.extend(fds)
        return fds

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "fork", no_fork)
    assert _run(root, monkeypatch, 10) == alone
    assert len(pipes) == 2
    for fd in pipes:
        with pytest.raises(OSError):
            os.fstat(fd)


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
