"""An index on a disk that fills up, or past a file size limit, and two first searches that
make its folder at once (a review of concurrent use and crashes).

A full disk had been called a damaged index, whose advice (`ov index --full`) needs room
for two copies and then called the rebuild damaged in turn; every later search started a
background worker that loaded the model and died on its first write, unheard.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys

import pytest

from conftest import make_tree, run_inprocess
from ov.errors import OvError
from ov.store import db as store_db

WORDS = ("lantern glacier copper violet harbour meadow quartz ember willow falcon "
         "saffron tundra cobalt orchid basalt").split()


def _tree(tmp_path, n=120):
    files = {f"notes/n{i:03d}.md": f"# Note {i}\n\n" + " ".join(WORDS[(i + k) % len(WORDS)] + str(k)
                                                             for k in range(400)) + "\n" for i in range(n)}
    return make_tree(tmp_path / "t", files)


@pytest.mark.parametrize("msg", ["database or disk is full", "disk I/O error"])
def test_a_full_disk_is_no_damaged_index(msg):
    err = store_db.map_error(sqlite3.OperationalError(msg), "/x/.ov/index.db")
    assert err.code == "invalid_path" and "damaged" not in err.message and "--full" not in err.message
    assert "what was committed is kept" in err.message


def test_index_past_a_file_size_limit_says_so_and_keeps_what_it_committed(tmp_path):
    """`ulimit -f` stands in for a full disk (a test cannot mount one): the write past it
    fails as a full disk's does, with EFBIG (Python ignores SIGXFSZ)."""
    root = _tree(tmp_path)
    limit = 1024 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([sys.executable, "-m", "ov", "index", "--no-embed", "-o", "json"], cwd=root,
                       capture_output=True, text=True, timeout=120, preexec_fn=small_files,
                       env={**os.environ, "OV_EMBEDDER": "hash"})
    assert p.returncode == 2, p.stdout + p.stderr
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "invalid_path" and "damaged" not in err["message"], err
    assert "--full" not in err["message"] and "Traceback" not in p.stderr
    # nothing was lost: the next run, with room, finishes the index
    r = run_inprocess("index", "--no-embed", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["added"] + r.json["result"]["unchanged"] == 120
    assert run_inprocess("search", "lantern0", "--search-type", "keywords", "-o", "json", cwd=root).code == 0


def test_no_worker_is_started_on_a_disk_without_room(tmp_path, monkeypatch):
    from ov import worker
    from ov.indexer import worker_state

    from ov.store import Store

    root = _tree(tmp_path, 6)
    assert run_inprocess("index", cwd=root).code == 0
    with Store.open(root / ".ov" / "index.db") as st, st.tx():  # vectors left for a worker (one killed)
        ids = [r[0] for r in st.rows("SELECT chunk_id FROM chunks_vec LIMIT 3")]
        for cid in ids:
            st.conn.execute("DELETE FROM chunks_vec WHERE chunk_id = ?", (cid,))
            st.conn.execute("UPDATE chunks SET embedded = 0 WHERE id = ?", (cid,))
    monkeypatch.setattr(worker, "MIN_FREE_BYTES", 1 << 62)  # every disk is short of room now
    r = run_inprocess("search", "lantern0", cwd=root)
    assert r.code == 0, r.err
    assert "no background worker started to finish the index: the disk holding it has" in r.err
    assert "started a background worker" not in r.err
    assert worker_state(root / ".ov" / "index.db") is None
    # no worker would have started anyway: the disk is not blamed (a review of this change)
    assert run_inprocess("index", "--stop", cwd=root).code == 0
    r = run_inprocess("search", "lantern0", cwd=root)
    assert r.code == 0 and "no background worker started" not in r.err, r.err
    monkeypatch.setenv("OV_BACKGROUND", "0")
    assert "no background worker started" not in run_inprocess("search", "lantern0", cwd=root).err


def test_two_first_searches_that_make_the_index_folder_at_once(tmp_path, monkeypatch):
    """The folder made by the other search between this one's look and its mkdir had been
    `invalid_path` "cannot create the index (File exists)", not retryable."""
    root = make_tree(tmp_path / "t", {"a.md": "lantern\n"})
    real = os.path.lexists

    def other_search_wins(p) -> bool:
        there = real(p)
        if str(p).endswith("/.ov") and not there:
            os.mkdir(p, 0o700)
        return there

    monkeypatch.setattr(os.path, "lexists", other_search_wins)
    store_db.prepare_index_dir(root / ".ov" / "index.db")
    monkeypatch.undo()
    assert (root / ".ov").is_dir() and (root / ".ov" / ".gitignore").read_text() == "*\n"
    link = tmp_path / "elsewhere"
    link.mkdir()
    (root / ".ov" / ".gitignore").unlink()
    os.rmdir(root / ".ov")

    def a_link_wins(p) -> bool:
        there = real(p)
        if str(p).endswith("/.ov") and not there:
            os.symlink(link, p)
        return there

    monkeypatch.setattr(os.path, "lexists", a_link_wins)
    with pytest.raises(OvError) as e:
        store_db.prepare_index_dir(root / ".ov" / "index.db")
    assert e.value.code == "invalid_path"


def test_a_tree_moved_while_it_is_indexed_is_an_error_not_a_complete_index(tmp_path):
    """`mv t t2` one second into `ov index` had ended in exit 0, "partial": false, with
    189 of 430 files never read and nothing said of them."""
    from ov.indexer import IndexOptions, index_tree
    from ov.store import Store

    files = {f"d{i}/n{k}.md": f"# Note {i}.{k}\n\nlantern{i} glacier{k}\n" for i in range(8) for k in range(5)}
    root = make_tree(tmp_path / "t", files)
    moved_to = tmp_path / "t2"
    seen = []

    def progress(phase, done, total) -> None:
        if phase == "scan":
            seen.append(done)
            if done == 7:
                os.rename(root, moved_to)

    with pytest.raises(OvError) as e:
        index_tree(root, None, IndexOptions(embed=False), progress=progress)
    assert e.value.code == "not_found" and "was moved or deleted while it was indexed" in e.value.message
    with Store.open(moved_to / ".ov" / "index.db", readonly=True) as st:
        kept = st.file_count()
    assert 0 < kept < len(files)  # what was read is kept; the rest is not called gone
    r = run_inprocess("index", "--no-embed", "-o", "json", cwd=moved_to)
    assert r.code == 0 and r.json["result"]["added"] + r.json["result"]["unchanged"] == len(files)
