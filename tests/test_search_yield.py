"""A search beside a background worker gets the CPU first (ov.indexer.Searching and
SearchYield): the worker, which runs the same model on the same cores for hours on a big
tree, waits while a search runs instead of halving its speed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import run_subprocess
from ov import indexer
from ov.indexer import (SEARCH_STEP, IndexOptions, Searching, SearchYield, embed_phase, index_tree,
                        searching_path, worker_state)
from ov.model import IndexReport
from ov.store import Store


def _db(root: Path) -> Path:
    return root / ".ov" / "index.db"


def _indexed(tree, files: dict[str, str] | None = None) -> Path:
    root = tree(files or {"a.md": "# A\n\nsome text about harbours\n"})
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    return _db(root)


def test_the_worker_waits_while_a_search_holds_the_mark_and_goes_on_when_it_ends(tree):
    db = _indexed(tree)
    wait = SearchYield(db, lambda: False)
    assert not wait.held()  # no search has run: no mark, no wait
    t0 = time.monotonic()
    wait()
    assert time.monotonic() - t0 < 0.5
    claim = Searching(db)
    assert claim.fd is not None and wait.held()
    threading.Timer(0.6, claim.release).start()  # the search ends after 0.6 s
    t0 = time.monotonic()
    wait()
    waited = time.monotonic() - t0
    assert 0.5 <= waited < 5, waited
    assert not wait.held()
    # two searches at once: the worker waits for the last of them
    a, b = Searching(db), Searching(db)
    assert a.fd is not None and b.fd is not None
    a.release()
    assert wait.held()
    b.release()
    assert not wait.held()


def test_a_wait_is_bounded_and_the_worker_then_embeds_as_long_before_it_waits_again(tree, monkeypatch):
    """A search that hangs (a stopped `ov search`) slows the vectors down, never stops them."""
    monkeypatch.setattr(indexer, "SEARCH_WAIT_S", 0.3)
    db = _indexed(tree)
    wait = SearchYield(db, lambda: False)
    with Searching(db):
        t0 = time.monotonic()
        wait()
        assert 0.3 <= time.monotonic() - t0 < 3
        t0 = time.monotonic()
        wait()  # free for as long as it waited
        assert time.monotonic() - t0 < 0.2
        time.sleep(0.35)
        t0 = time.monotonic()
        wait()  # then it waits again
        assert time.monotonic() - t0 >= 0.3


def test_stop_ends_a_wait(tree):
    db = _indexed(tree)
    stopping = []
    wait = SearchYield(db, lambda: bool(stopping))
    with Searching(db):
        threading.Timer(0.3, stopping.append, (True,)).start()
        t0 = time.monotonic()
        wait()
        assert time.monotonic() - t0 < 3


def test_a_search_that_dies_leaves_no_mark_that_holds_the_worker(tree):
    db = _indexed(tree)
    code = ("import sys, time; from pathlib import Path; from ov.indexer import Searching; "
            "c = Searching(Path(sys.argv[1])); assert c.fd is not None; print('held', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        wait = SearchYield(db, lambda: False)
        assert wait.held()
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        assert not wait.held()  # the kernel let its lock go with the process
    finally:
        p.kill()
        p.wait(10)


def test_a_link_where_the_mark_goes_is_never_written_through(tree, tmp_path):
    """A cloned tree is untrusted: a link put at `.ov/index.db.search` is neither followed
    by a search nor by the worker, and the index is refused as for any other sidecar."""
    db = _indexed(tree)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    searching_path(db).symlink_to(outside)
    claim = Searching(db)
    assert claim.fd is None  # no claim: the search runs as before
    assert not SearchYield(db, lambda: False).held()
    assert outside.read_text() == "keep\n"
    r = run_subprocess(["search", "harbours", "--json"], cwd=db.parent.parent)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_path", r.out
    assert outside.read_text() == "keep\n"


def test_a_search_with_no_worker_writes_nothing_beside_the_index(ov, tree):
    root = tree({"a.md": "# A\n\nsome text about harbours\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("search", "harbours", cwd=root).code == 0
    assert not searching_path(_db(root)).exists()


def test_the_embed_phase_hears_pause_before_every_step_of_texts(tree):
    files = {f"n{i:02d}.md": f"# Note {i}\n\nThe harbour {i} has the next ferry at noon.\n" for i in range(30)}
    db = _indexed(tree, files)
    events: list = []

    class Spy:
        def __init__(self):
            from ov.embed import HashEmbedder

            self.inner = HashEmbedder()
            self.model_id = self.inner.model_id

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def embed(self, texts):
            events.append(len(texts))
            return self.inner.embed(texts)

    with Store.open(db) as s:
        embed_phase(s, IndexReport(root=str(db.parent.parent)), None, Spy(), None, lambda: events.append("pause"))
        emb, total = s.coverage()
    assert emb == total > SEARCH_STEP
    runs = [e for e in events if e != "pause"]
    assert sum(runs) >= total // 2 and max(runs) <= SEARCH_STEP  # (copies share one run)
    # a pause before each run of the model, and only there
    assert events[0] == "pause" and all(
        (e == "pause") != (i % 2 == 1) for i, e in enumerate(events)), events


@pytest.mark.model
def test_a_real_worker_rests_while_a_search_holds_the_mark(tree):
    """The real model: a worker embedding 2,000 notes uses the CPU, and nearly none while a
    search holds the mark; a real search takes the mark while the worker runs. (600 notes
    were embedded before the search at the end ran, on an idle machine: no worker, no mark.)"""
    prose = ("# Notes {i}\n\nThe tide tables for harbour {i} list high water. Boats leave at dawn.\n\n"
             "A second paragraph about lighthouse {i} and its keeper. The lamp turns all night.\n")
    root = tree({f"docs/n{i:04d}.md": prose.format(i=i) for i in range(2000)})
    db = _db(root)
    r = run_subprocess(["search", "tide tables", "-n", "1"], cwd=root)
    assert r.code == 0, r.err
    deadline = time.monotonic() + 60
    state = worker_state(db)
    while state is not None and state.get("phase") != "embed" and time.monotonic() < deadline:
        time.sleep(0.1)
        state = worker_state(db)
    assert state is not None and state.get("phase") == "embed", "the worker finished before it could be watched"
    pid = int(state["pid"])

    def cpu_s() -> float:  # the worker's user + system time, all threads
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def used(seconds: float) -> float:
        before = cpu_s()
        time.sleep(seconds)
        return cpu_s() - before

    try:
        assert used(2.0) > 0.3  # working
        with Searching(db):
            time.sleep(1.0)  # the texts it was running when the mark came
            rested = used(2.0)
        assert rested < 0.2, rested
        assert used(2.0) > 0.3  # working again
        # a real search holds the mark while it runs the model (in a process of its own:
        # a model loaded here would leave onnxruntime's threads in this one, and a later
        # test's fork() of it could then deadlock)
        code = ("import sys; from pathlib import Path; from ov.api import Index; "
                "from ov.embed import load_embedder; from ov.indexer import SearchYield\n"
                "db = Path(sys.argv[1]) / '.ov' / 'index.db'; real = load_embedder('query'); seen = []\n"
                "class Watch:\n"
                "    model_id = real.model_id\n"
                "    def __getattr__(self, name): return getattr(real, name)\n"
                "    def embed(self, texts):\n"
                "        seen.append(SearchYield(db, lambda: False).held()); return real.embed(texts)\n"
                "with Index.open(Path(sys.argv[1]), embedder=Watch()) as ix: ix.search('lighthouse keeper')\n"
                "print(seen)\n")
        state = worker_state(db)
        assert state is not None and state.get("phase") == "embed", "the worker finished before the search"
        p = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        seen = p.stdout.strip()
        assert seen.startswith("[True") and "False" not in seen, seen
    finally:
        from ov.worker import stop

        stop(db)
