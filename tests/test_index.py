"""`ov index` and `ov status` through the CLI, on fixture trees built here."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ov.errors import OvError
from ov.store import SCHEMA_VERSION, Store


def indexed_paths(root: Path) -> list[str]:
    with Store.open(root / ".ov" / "index.db") as s:
        return [r[0] for r in s.rows("SELECT path FROM files ORDER BY path")]


def chunk_set(root: Path) -> set[tuple]:
    with Store.open(root / ".ov" / "index.db") as s:
        return set(s.rows("SELECT f.path, c.level, c.start, c.end, c.start_line, c.end_line, c.text "
                          "FROM chunks c JOIN files f ON f.id = c.file_id"))


def index_json(ov, root: Path, *extra) -> dict:
    r = ov("index", root, "-o", "json", *extra)
    assert r.code == 0, r.out + r.err
    return r.json["result"]


def test_index_respects_ignore_rules_hidden_binary_and_size(ov, tree):
    root = tree({
        ".gitignore": "build/\n*.log\n!keep.log\n/anchored.txt\n",
        "a.py": "def f():\n    return 1\n",
        "build/out.py": "x = 1\n",
        "debug.log": "noise\n",
        "keep.log": "kept\n",
        "anchored.txt": "root only\n",
        "sub/anchored.txt": "not anchored here\n",
        "sub/.gitignore": "local.md\n",
        "sub/local.md": "# ignored by nested rule\n",
        "sub/other.md": "# kept\n",
        ".ignore": "ignored_by_dot_ignore.txt\n",
        "ignored_by_dot_ignore.txt": "x\n",
        ".ovignore": "secret/\n",
        "secret/s.txt": "x\n",
        ".hidden/h.txt": "hidden\n",
        ".dot.txt": "hidden file\n",
        "bin.dat": b"abc\x00def",
        "empty.txt": "",
        "big.txt": "y" * (2 << 20),
        ".git/info/exclude": "excluded.txt\n",
        ".git/config": "[core]\n",
        "excluded.txt": "x\n",
    })
    rep = index_json(ov, root, "--no-embed")
    assert indexed_paths(root) == ["a.py", "empty.txt", "keep.log", "sub/anchored.txt", "sub/other.md"]
    assert rep["added"] == 5
    assert rep["skipped"] >= 2  # the binary and the over-size file

    # --hidden and --no-ignore widen the set; .git/ and .ov/ never enter it
    index_json(ov, root, "--no-embed", "--hidden", "--no-ignore", "--max-filesize", str(4 << 20))
    paths = indexed_paths(root)
    assert ".dot.txt" in paths and ".hidden/h.txt" in paths and "build/out.py" in paths
    assert "big.txt" in paths and "debug.log" in paths and "excluded.txt" in paths
    assert not any(p.startswith((".git/", ".ov/")) for p in paths)
    assert "bin.dat" not in paths


def test_index_folder_and_file_are_owner_only(ov, tree):
    root = tree({"a.md": "# Title\n\nSome text.\n"})
    index_json(ov, root, "--no-embed")
    assert stat.S_IMODE(os.stat(root / ".ov").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(root / ".ov" / "index.db").st_mode) == 0o600
    assert (root / ".ov" / ".gitignore").read_text() == "*\n"


def test_chunks_are_exact_slices_of_decoded_text(ov, tree):
    root = tree({
        "bom.md": b"\xef\xbb\xbf# Head\r\n\r\nPara one\r\nline two\r\n",
        "bad.txt": b"ok line\nbad \xff\xfe bytes\nend\n",
        "crlf.py": b"def a():\r\n    pass\r\n\r\n\r\ndef b():\r\n    return 2\r\n",
    })
    index_json(ov, root, "--no-embed")
    from ov.read import decode

    for path, level, start, end, sl, el, text in chunk_set(root):
        if level != 2:
            continue
        full = decode((root / path).read_bytes())
        assert full[start:end] == text
        assert full.count("\n", 0, start) + 1 == sl
        assert not full.startswith("\ufeff")
    rows = {(p, sl) for p, lv, s, e, sl, el, t in chunk_set(root) if p == "crlf.py" and lv == 2}
    assert ("crlf.py", 1) in rows


def test_incremental_modify_delete_rename_touch(ov, tree):
    root = tree({
        "a.md": "# A\n\nalpha text\n",
        "b.md": "# B\n\nbeta text\n",
        "c.md": "# C\n\ngamma text\n",
    })
    rep = index_json(ov, root)
    assert (rep["added"], rep["updated"], rep["removed"]) == (3, 0, 0)
    assert rep["embedded"] > 0

    rep = index_json(ov, root)  # nothing changed: nothing re-read, nothing embedded
    assert (rep["added"], rep["updated"], rep["removed"], rep["unchanged"], rep["embedded"]) == (0, 0, 0, 3, 0)

    (root / "a.md").write_text("# A\n\nalpha text changed\n")
    (root / "b.md").unlink()
    (root / "c.md").rename(root / "d.md")
    os.utime(root / "a.md", None)
    rep = index_json(ov, root)
    assert rep["updated"] == 1 and rep["removed"] == 2 and rep["added"] == 1
    assert rep["reused"] >= 1  # d.md's chunks reuse c.md's vectors by content hash
    assert indexed_paths(root) == ["a.md", "d.md"]

    t = time.time() + 100
    os.utime(root / "d.md", (t, t))  # touch without change
    rep = index_json(ov, root)
    assert (rep["added"], rep["updated"], rep["embedded"]) == (0, 0, 0)
    with Store.open(root / ".ov" / "index.db") as s:
        assert s.q1("SELECT mtime_ns FROM files WHERE path='d.md'") == os.stat(root / "d.md").st_mtime_ns


def test_no_embed_then_embed_adds_vectors(ov, tree):
    root = tree({"a.md": "# A\n\nalpha\n", "b.py": "def beta():\n    return 2\n"})
    rep = index_json(ov, root, "--no-embed")
    assert rep["embedded"] == 0
    r = ov("status", "-o", "json", cwd=root)
    assert r.json["result"]["embedded_coverage"] == 0.0
    # the status text does not promise vectors no worker will write
    assert "none are coming: the index was built with --no-embed" in ov("status", cwd=root).out
    rep = index_json(ov, root)
    assert rep["embedded"] > 0 and rep["added"] == 0
    r = ov("status", "-o", "json", cwd=root)
    assert r.json["result"]["embedded_coverage"] == 1.0
    assert "none are coming" not in ov("status", cwd=root).out


def test_status_text_and_json(ov, tree):
    root = tree({"a.md": "# A\n\nalpha\n"})
    index_json(ov, root)
    (root / "a.md").write_text("# A\n\nchanged\n")
    r = ov("status", "-o", "json", cwd=root)
    assert r.code == 0
    res = r.json["result"]
    assert res["files"] == 1 and res["stale_files"] == 1 and res["schema_version"] == SCHEMA_VERSION
    assert res["root"] == str(root.resolve()) and res["db_bytes"] > 0
    assert res["vec_version"].startswith("v") and res["sqlite_version"].count(".") == 2
    r = ov("status", cwd=root)
    assert "stale files:     1 changed" in r.out
    # one count of passages, one of the rows that get a vector: no line restates another
    assert f"chunks:          {res['chunks']} passages, {res['embedded_chunks']} of them with a vector\n" in r.out
    cov = res["coverage"]
    assert f"vector rows:     {cov['embedded']} of the {cov['embeddable']} rows that get one" in r.out
    assert "embedded:" not in r.out


def test_status_counts_files_the_index_lacks(ov, tree):
    # a rename is one file missing and one new; new binary and ignored files are not new,
    # since `ov index` would not add them
    root = tree({"todo.txt": "buy milk\n", "notes.md": "# N\n", "old.bin": b"a\0b",
                 ".gitignore": "build/\n"})
    index_json(ov, root)
    (root / "todo.txt").rename(root / "errands.txt")
    (root / "fresh.md").write_text("# new\n")
    (root / "new.bin").write_bytes(b"x\0y")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("ignored\n")
    res = ov("status", "-o", "json", cwd=root).json["result"]
    assert (res["stale_files"], res["missing_files"], res["new_files"]) == (0, 1, 2)
    assert "stale files:     0 changed, 1 missing on disk, 2 new (not indexed)" in ov("status", cwd=root).out
    index_json(ov, root)
    res = ov("status", "-o", "json", cwd=root).json["result"]
    assert (res["stale_files"], res["missing_files"], res["new_files"]) == (0, 0, 0)


def test_status_reads_each_walked_files_state_from_the_walk(ov, tree, monkeypatch):
    """`ov status` takes an indexed file's state from its walk's stat, opening only the
    files the walk did not meet (gone, ignored now): the same counts, 2.2 s less on the
    kernel. An edit in place with the mtime put back still counts (the ctime moves)."""
    import os

    from ov import read

    files = {f"d/f{i}.txt": f"text {i}\n" for i in range(12)}
    root = tree({**files, ".gitignore": "", "gone.txt": "x\n", "later.log": "y\n"})
    index_json(ov, root, "--no-embed")
    p = root / "d/f3.txt"
    st = p.stat()
    with open(p, "r+") as fh:
        fh.write("TEXT")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    (root / "gone.txt").unlink()
    (root / ".gitignore").write_text("*.log\n")
    opened = []
    real = read.stat_under
    monkeypatch.setattr(read, "stat_under", lambda r, rel: opened.append(rel) or real(r, rel))
    res = ov("status", "-o", "json", cwd=root).json["result"]
    assert (res["stale_files"], res["missing_files"], res["excluded_files"]) == (1, 1, 1), res
    assert sorted(opened) == ["gone.txt", "later.log"]


def test_status_json_has_the_worker_and_journal_lines(ov, tree):
    # the text shows `background: -` and `change journal: none`; JSON says so with nulls
    root = tree({"a.md": "# A\n\nalpha\n"})
    index_json(ov, root)
    res = ov("status", "-o", "json", cwd=root).json["result"]
    assert "background" in res and res["background"] is None
    assert "journal" in res and res["journal"] is None
    assert "background:      -\n" in ov("status", cwd=root).out
    # a foreground `ov index` holding the index showed `background: -` and nothing else
    # (a review on the Go stdlib: 23 minutes of embedding, invisible in the text)
    import fcntl
    fd = os.open(root / ".ov" / "index.db.lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        out = ov("status", cwd=root).out
        assert "background:      -; an indexer holds the index now" in out, out
    finally:
        os.close(fd)


def test_status_without_index_is_not_found(ov, tree):
    root = tree({"a.md": "x\n"})
    r = ov("status", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"


def test_index_missing_path_and_file_path(ov, tree):
    root = tree({"a.md": "x\n"})
    r = ov("index", root / "nope")
    assert r.code == 2 and "error[not_found]" in r.err
    r = ov("index", root / "a.md", "--json")
    assert r.code == 2 and r.json["error"]["code"] == "invalid_path"


def test_unreadable_file_is_a_warning_not_an_abort(ov, tree, monkeypatch):
    root = tree({"a.md": "alpha\n", "b.md": "beta\n"})
    # tests run as root, for whom chmod 000 changes nothing: refuse the open itself
    real_open = os.open

    def fake_open(path, flags, *a, **k):
        if str(path).endswith("b.md"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", fake_open)
    r = ov("index", root, "--no-embed", "-o", "json")
    monkeypatch.setattr(os, "open", real_open)
    assert r.code == 0
    assert "b.md: Permission denied" in r.err
    assert indexed_paths(root) == ["a.md"]


def _big_tree(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"d{i % 20}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.md").write_text(f"# File {i}\n\n" + f"word{i} lorem ipsum dolor sit amet\n" * 30)


def test_sigkill_mid_run_leaves_a_consistent_index(tmp_path, ov_proc):
    root = tmp_path / "t"
    _big_tree(root, 1500)
    env = {"OV_EMBEDDER": "hash"}
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", str(root)], env={**os.environ, **env},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = root / ".ov" / "index.db"
    deadline = time.time() + 60
    while time.time() < deadline:  # kill once some batches are committed
        if db.exists():
            try:
                c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                n = c.execute("SELECT count(*) FROM files").fetchone()[0]
                c.close()
                if n >= 200:
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with Store.open(db) as s:
        assert s.integrity_ok()
        partial = s.q1("SELECT count(*) FROM files")
    assert 0 < partial
    r = ov_proc(["index", root, "-o", "json"], env=env)
    assert r.code == 0, r.err
    with Store.open(db) as s:
        assert s.integrity_ok()
        assert s.q1("SELECT count(*) FROM files") == 1500
        assert s.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0


def test_two_indexers_at_once_one_waits_or_is_busy(tmp_path, ov_proc):
    root = tmp_path / "t"
    _big_tree(root, 1500)
    env = {**os.environ, "OV_EMBEDDER": "hash", "OV_LOCK_WAIT": "0.2"}
    p1 = subprocess.Popen([sys.executable, "-m", "ov", "index", str(root), "-o", "json"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = root / ".ov" / "index.db"
    while not db.exists():
        time.sleep(0.01)
    time.sleep(0.3)
    p2 = subprocess.run([sys.executable, "-m", "ov", "index", str(root), "-o", "json"], env=env,
                        capture_output=True, text=True)
    out1, _ = p1.communicate(timeout=300)
    assert p1.returncode == 0
    if p2.returncode != 0:
        import json

        err = json.loads(p2.stdout)["error"]
        assert err["code"] == "index_busy" and err["retryable"] is True
    with Store.open(db) as s:
        assert s.integrity_ok()
        assert s.q1("SELECT count(*) FROM files") == 1500


def test_newer_schema_and_not_sqlite_are_refused(ov, tree):
    root = tree({"a.md": "x\n"})
    index_json(ov, root, "--no-embed")
    db = root / ".ov" / "index.db"
    c = sqlite3.connect(db)
    c.execute("PRAGMA user_version = 99")
    c.commit()
    c.close()
    r = ov("search", "x", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported"
    db.write_bytes(b"this is not a database at all" * 100)
    for f in root.joinpath(".ov").glob("index.db-*"):
        f.unlink()
    r = ov("search", "x", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert db.read_bytes().startswith(b"this is not a database")


@pytest.mark.model
def test_index_with_the_real_model(ov, tree):
    root = tree({
        "cooking.md": "# Pasta\n\nBoil water, add salt, cook the spaghetti for nine minutes.\n",
        "net.py": "def open_socket(host, port):\n    \"\"\"Connect a TCP socket to a server.\"\"\"\n",
    })
    rep = index_json(ov, root)
    assert rep["embedded"] >= 2
    r = ov("status", "-o", "json", cwd=root)
    assert r.json["result"]["model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert r.json["result"]["embedded_coverage"] == 1.0


def test_full_rebuild_keeps_tags_and_created_at(ov, tree):
    root = tree({"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    index_json(ov, root)
    assert ov("tag", root / "a.md", "team=docs", cwd=root).code == 0
    with Store.open(root / ".ov" / "index.db") as s:
        created = s.q1("SELECT created_at FROM files WHERE path='a.md'")
    rep = index_json(ov, root, "--full")
    assert rep["updated"] == 2 and rep["embedded"] > 0
    with Store.open(root / ".ov" / "index.db") as s:
        assert s.q1("SELECT tags FROM files WHERE path='a.md'") == '{"team": "docs"}'
        assert s.q1("SELECT created_at FROM files WHERE path='a.md'") == created
        assert s.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0


def test_the_title_is_in_every_chunks_keyword_row(ov, tree):
    body = "\n\n".join(f"Paragraph {i} about migration routes, feeding grounds and herds." * 3 for i in range(12))
    root = tree({"z.md": "# Zebra notes\n\n" + body + "\n", "other.md": "a zebra, once\n"})
    index_json(ov, root, "--no-embed")
    r = ov("search", "zebra", "--search-type", "keywords", "--all-chunks", "-n", "50", "-o", "json", cwd=root)
    hits = r.json["result"]["hits"]
    assert sum(h["path"] == "z.md" for h in hits) >= 3  # not only the chunk holding the heading
    for h in hits:  # excerpts stay exact slices of the file: the title is only in the index
        assert (root / h["path"]).read_text()[h["excerpt"]["start"]:h["excerpt"]["end"]] == h["excerpt"]["text"]


UNPARTITIONED_VEC = ("CREATE VIRTUAL TABLE chunks_vec USING vec0(chunk_id integer primary key, "
                     "embedding float[384] distance_metric=cosine, level integer, ftype text, "
                     "updated_at float, created_at float)")


def test_an_index_from_schema_2_gets_its_vectors_partitioned_by_level(ov, tree):
    root = tree({"a.md": "# Alpha title\n\nalpha body text about herds\n",
                 "b.md": "# Beta\n\nbeta body about harbours\n", "c.py": "def herd():\n    return 1\n"})
    index_json(ov, root)
    db = root / ".ov" / "index.db"
    args = ("search", "herds and harbours", "--search-type", "semantic", "--level", "0,1,2", "-n", "20",
            "-o", "json")
    before = ov(*args, cwd=root).json["result"]["hits"]
    with Store.open(db) as s, s.tx():  # make it what schema 2 wrote: one unpartitioned vector table
        vectors = s.rows("SELECT chunk_id, embedding, level FROM chunks_vec ORDER BY chunk_id")
        s.conn.execute("CREATE TABLE keep AS SELECT * FROM chunks_vec")
        s.conn.execute("DROP TABLE chunks_vec")
        s.conn.execute(UNPARTITIONED_VEC)
        s.conn.execute("INSERT INTO chunks_vec SELECT * FROM keep")
        s.conn.execute("DROP TABLE keep")
        s.conn.execute("PRAGMA user_version = 2")
    assert len(vectors) >= 6 and {v[2] for v in vectors} == {0, 2}  # overviews have none
    with pytest.raises(OvError) as e:  # a read-only open cannot migrate: it says what to run
        Store.open(db, readonly=True)
    assert e.value.code == "unsupported" and "ov index" in e.value.message
    after = ov(*args, cwd=root)
    assert after.code == 0 and after.json["result"]["hits"] == before
    with Store.open(db) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert "level integer partition key" in s.q1("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'")
        assert s.rows("SELECT chunk_id, embedding, level FROM chunks_vec ORDER BY chunk_id") == vectors
        assert s.integrity_ok()
    t = time.time() + 100  # a touched file updates its vectors' times, one row at a time
    os.utime(root / "a.md", (t, t))
    assert index_json(ov, root)["updated"] == 0
    with Store.open(db) as s:
        got = s.rows("SELECT DISTINCT v.updated_at FROM chunks_vec v JOIN chunks c ON c.id = v.chunk_id "
                     "JOIN files f ON f.id = c.file_id WHERE f.path = 'a.md'")
        assert got == [(pytest.approx(t),)]


def _schema_2_index(db: Path, n: int) -> list[bytes]:
    """An index at `db` in the layout of schema 2 holding `n` random vectors; their bytes."""
    import numpy as np

    rng = np.random.default_rng(0)
    blobs = [v.tobytes() for v in rng.standard_normal((n, 384)).astype(np.float32)]
    with Store.create(db) as s, s.tx():
        s.conn.execute("DROP TABLE chunks_vec")
        s.conn.execute(UNPARTITIONED_VEC)
        s.conn.executemany("INSERT INTO chunks_vec(chunk_id, embedding, level, ftype, updated_at, created_at) "
                           "VALUES (?, ?, ?, 'text', 0.0, 0.0)", [(i + 1, b, 2 - i % 2 * 2) for i, b in enumerate(blobs)])
        s.conn.execute("PRAGMA user_version = 2")
    return blobs


def test_an_upgrade_gives_back_the_pages_its_copy_freed(tmp_path):
    db = tmp_path / "index.db"
    blobs = _schema_2_index(db, 3000)
    with Store.open(db) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert [r[0] for r in s.rows("SELECT embedding FROM chunks_vec ORDER BY chunk_id")] == blobs
        assert s.q1("PRAGMA freelist_count") * 4 <= s.q1("PRAGMA page_count")


def test_two_upgrades_at_once_migrate_once(tmp_path, monkeypatch):
    db = tmp_path / ".ov" / "index.db"
    blobs = _schema_2_index(db, 50)
    c = sqlite3.connect(db)  # schema 1: files without a title
    c.execute("ALTER TABLE files DROP COLUMN title")
    c.execute("PRAGMA user_version = 1")
    c.commit()
    c.close()
    read, seen = Store._user_version, []

    def racing(self):  # another process upgrades the index just after this one read its version
        v = read(self)
        seen.append(v)
        if len(seen) == 2:
            Store.open(db).close()
        return v

    monkeypatch.setattr(Store, "_user_version", racing)
    with Store.open(db) as s:  # not migration 2 again: "duplicate column name: title"
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert [r[0] for r in s.rows("SELECT embedding FROM chunks_vec ORDER BY chunk_id")] == blobs
    assert seen[:2] == [1, 1]


def test_an_upgrade_that_fills_the_disk_says_so_and_keeps_the_index(tmp_path):
    import json
    import resource

    db = tmp_path / ".ov" / "index.db"
    blobs = _schema_2_index(db, 3000)
    limit = db.stat().st_size + (1 << 20)  # the upgrade writes every vector twice to the WAL

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([sys.executable, "-m", "ov", "status", "-o", "json"], cwd=tmp_path, capture_output=True,
                       text=True, preexec_fn=small_disk, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    msg = json.loads(p.stdout)["error"]["message"]
    assert "rollback" not in msg and ("full" in msg or "I/O" in msg), msg  # the cause, not the cleanup
    c = sqlite3.connect(db)  # left as it was, and upgraded by the next run
    assert c.execute("PRAGMA user_version").fetchone()[0] == 2
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c.close()
    with Store.open(db) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert [r[0] for r in s.rows("SELECT embedding FROM chunks_vec ORDER BY chunk_id")] == blobs


def test_a_knn_over_several_levels_is_the_nearest_k_of_them_all(ov, tree):
    import numpy as np

    from ov.store import Filters
    root = tree({f"n{i}.md": f"# Note {i}\n\n" + " ".join(f"word{(i * 7 + j) % 23}" for j in range(40)) + "\n"
                 for i in range(8)})
    index_json(ov, root)
    with Store.open(root / ".ov" / "index.db", readonly=True) as s:
        rows = s.rows("SELECT chunk_id, embedding, level FROM chunks_vec")
        vec = {cid: np.frombuffer(b, dtype=np.float32) for cid, b, _ in rows}
        q = rows[3][1]
        for levels in [(0, 2), (0, 1, 2), (2,), ()]:  # overviews (1) have no vectors
            want = sorted((float(1 - vec[cid] @ np.frombuffer(q, dtype=np.float32)), cid)
                          for cid, _, lv in rows if not levels or lv in levels)
            got = s.vector_search(q, Filters(levels=levels), 5)
            assert len(got) == 5 or got[4][1] == got[5][1], levels  # k in all, not k for each level
            assert [d for _, d in got] == pytest.approx([d for d, _ in want[:len(got)]], abs=1e-5)
            assert got == sorted(got, key=lambda r: (r[1], r[0]))
            assert len(s._vector_search(q, Filters(levels=levels), 5)) == 5  # vec0 gives 5 a level
            assert {lv for cid, _, lv in rows if cid in {c for c, _ in got}} <= set(levels or (0, 1, 2, 3))


def test_an_index_from_schema_1_is_migrated_in_place(ov, tree):
    root = tree({"a.md": "# Alpha title\n\nalpha body text\n", "b.md": "# Beta\n\nbeta body\n"})
    index_json(ov, root)
    db = root / ".ov" / "index.db"
    c = sqlite3.connect(db)  # make it what schema 1 wrote: no title, keyword rows without it
    c.execute("ALTER TABLE files DROP COLUMN title")
    c.execute("PRAGMA user_version = 1")
    c.commit()
    c.close()
    with pytest.raises(OvError) as e:  # a read-only open cannot migrate: it says what to run
        Store.open(db, readonly=True)
    assert e.value.code == "unsupported" and "ov index" in e.value.message
    r = ov("search", "alpha", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "a.md"
    with Store.open(db) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert s.q1("SELECT title FROM files WHERE path = 'a.md'") == "# Alpha title"
        assert s.q1("SELECT count(*) FROM chunks WHERE embedded = 1") > 0  # vectors kept
        assert s.integrity_ok()
    (root / "a.md").write_text("# New title\n\nalpha body text\n")
    rep = index_json(ov, root)  # re-chunking deletes the old keyword rows with the old title
    assert rep["updated"] == 1
    with Store.open(db) as s:
        s.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)")


def test_status_embedded_coverage_is_one_on_a_finished_index(tmp_path):
    """`embedded_coverage` was the share of every row, overview rows (which never get a
    vector) included: 0.47 on a finished index, beside `coverage.ratio` 1.0, and a script
    waiting for 1.0 waited for ever. It is the share of the rows that get a vector."""
    from conftest import make_tree, run_inprocess

    files = {f"d{i}.md": f"# Guide {i}\n\n## Install\n\nSteps {i}.\n\n## Use\n\nRun it.\n" for i in range(4)}
    files["data.csv"] = "id,name\n" + "".join(f"{i},row {i}\n" for i in range(200))  # rows never embedded
    root = make_tree(tmp_path / "t", files)
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    st = run_inprocess("status", "-o", "json", cwd=root, env=env).json["result"]
    assert st["not_embedded_rows"] > 0 and st["embedded_chunks"] < st["chunks"], st  # rows with no vector exist
    assert st["embedded_coverage"] == st["coverage"]["ratio"] == 1.0, st


def test_status_counts_indexed_files_that_ov_index_would_now_leave_out(tmp_path):
    """After a .gitignore or config change, `ov status` said the index was current but for
    the one edited file, while `ov index` then removed three: the files still on disk
    that the walk no longer yields are counted (`excluded_files`)."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"docs/p1.md": "# One\n\nbrass\n", "docs/p2.md": "# Two\n\nbrass\n",
                                      "secret.py": "x = 1\n", "keep.md": "# Keep\n\nbrass\n"})
    (root / ".git").mkdir()  # a work tree: .gitignore counts only in one
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    (root / "docs" / ".gitignore").write_text("p2.md\n")
    (root / ".ov" / "config.toml").write_text('ignore = ["secret.py"]\n')
    (root / "docs" / "p1.md").unlink()
    st = run_inprocess("status", "-o", "json", cwd=root, env=env).json["result"]
    assert (st["excluded_files"], st["missing_files"], st["new_files"]) == (2, 1, 0), st
    assert "2 now left out" in run_inprocess("status", cwd=root, env=env).out
    r = run_inprocess("index", ".", "--no-embed", "-o", "json", cwd=root, env=env)
    assert r.json["result"]["removed"] == 3, r.out
    assert run_inprocess("status", "-o", "json", cwd=root, env=env).json["result"]["excluded_files"] == 0


def test_utf16_files_with_a_bom_are_indexed_as_text(tmp_path):
    """grep reads UTF-16 with its byte order mark as rg does, but the index skipped such a
    file as binary: ranked search never found it. It is decoded by its mark now, and its
    hits and excerpts are the file's text."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"a.md": "# Other\n\nneedle plain\n"})
    (root / "le.md").write_bytes("\ufeff# Harbour\n\nhello wörld\nsecond line needle\n".encode("utf-16-le"))
    (root / "be.txt").write_bytes("\ufeffneedle in big-endian\n".encode("utf-16-be"))
    (root / "bin.dat").write_bytes(b"needle\x00\x01\x02")  # a NUL and no mark: binary, as before
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    r = run_inprocess("search", "needle", "--search-type", "keywords", "-o", "json", cwd=root, env=env)
    hits = {h["path"]: h for h in r.json["result"]["hits"]}
    assert set(hits) == {"a.md", "le.md", "be.txt"}, r.out
    assert "second line needle" in hits["le.md"]["excerpt"]["text"] and "\ufeff" not in hits["le.md"]["excerpt"]["text"]
    assert run_inprocess("read", "le.md", cwd=root, env=env).out.startswith("# Harbour\n")
    st = run_inprocess("status", "-o", "json", cwd=root, env=env).json["result"]
    assert [s["path"] for s in st["skipped_files"]] == ["bin.dat"]


def test_a_utf16_mark_before_binary_bytes_is_binary_as_grep_reads_it(tmp_path):
    """A file that starts with a UTF-16 mark but holds NUL characters once transcoded (or
    is binary after the mark) is binary to rg and ov grep; the index took it as text."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {})
    (root / "nul16.txt").write_bytes(b"\xff\xfe" + "zebra one\n\x00\x00 two zebra\n".encode("utf-16-le"))
    (root / "fake.dat").write_bytes(b"\xff\xfe" + bytes(range(256)) * 4)
    (root / "ok16.txt").write_bytes("\ufeffzebra fine\n".encode("utf-16-le"))
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    r = run_inprocess("search", "zebra", "--search-type", "keywords", "-o", "json", cwd=root, env=env)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["ok16.txt"], r.out
    assert run_inprocess("grep", "-l", "zebra", cwd=root, env=env).out == "ok16.txt\n"


def test_a_nul_past_the_first_8k_is_binary_to_the_index_as_to_grep(ov, tree):
    """Only a NUL in the first 8 KiB had made a file binary to the index: a file with one at
    9,000 bytes, which `ov grep` (as rg) skips as binary, was in ranked results with a
    `\x00` line in its excerpt, and `ov status` skipped nothing. A file with its NUL past
    rg's first 64 KiB read is grep's up to the NUL (rg's warning after), not the index's."""
    root = tree({"ok.txt": "zebra fine\n",
                 "late.txt": b"zebra one\n" + b"x" * 9000 + b"\n\x00\nzebra after nul\n",
                 "later.txt": b"zebra early\n" + b"y" * 70_000 + b"\n\x00\nzebra after nul\n"})
    index_json(ov, root, "--no-embed")
    assert indexed_paths(root) == ["ok.txt"]
    st = ov("status", "-o", "json", cwd=root).json["result"]
    assert {f["path"]: f["reason"] for f in st["skipped_files"]} == {"late.txt": "binary", "later.txt": "binary"}
    r = ov("search", "zebra", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["ok.txt"], r.out
    g = ov("grep", "zebra", cwd=root)
    assert g.code == 0 and g.out.splitlines()[:2] == ["later.txt:1:zebra early", "ok.txt:1:zebra fine"], g.out
    assert g.out.splitlines()[2].startswith("later.txt: WARNING: stopped searching binary file after match")


def test_a_binary_file_over_the_size_cap_counts_as_binary_and_warns_no_search(ov, tree):
    """A `.so` or `.a` over --max-filesize was listed as too large, and every ranked search
    warned that it was in no result (the Python stdlib: a `.a`, two `.whl`, two `.so`).
    It is skipped as binary; a text file over the cap still gets the warning. The text
    of `ov status` lists the first few skipped files, text files first."""
    files = {".ov/config.toml": 'max-filesize = "2K"\n', "a.md": "# A\n\nalpha notes\n",
             "big.txt": "alpha " * 1000, "lib.so": b"\x7fELF\x00" + b"\x01" * 5000}
    files.update({f"bin{i:02}.dat": b"\x00" * 10 for i in range(12)})
    root = tree(files)
    index_json(ov, root, "--no-embed")
    st = ov("status", "-o", "json", cwd=root).json["result"]
    reasons = {f["path"]: f["reason"] for f in st["skipped_files"]}
    assert reasons["lib.so"] == "binary" and reasons["big.txt"] == "size"
    r = ov("search", "alpha", "--search-type", "keywords", "-o", "json", cwd=root)
    warned = [w for w in r.json["result"]["warnings"] if "max-filesize" in w]
    assert len(warned) == 1 and "1 file(s) over --max-filesize" in warned[0] and "big.txt" in warned[0]
    # an answer whose scope leaves the big file out anyway does not repeat it (the Go tree)
    for scope in (("-u", "a.md"), ("--exclude-uri", "big.txt"), ("-t", "md")):
        r = ov("search", "alpha", "--search-type", "keywords", *scope, "-o", "json", cwd=root)
        assert r.code == 0 and not [w for w in r.json["result"]["warnings"] if "max-filesize" in w], (scope, r.out)
    r = ov("search", "alpha", "--search-type", "keywords", "-t", "txt", "-o", "json", cwd=root)
    assert [w for w in r.json["result"]["warnings"] if "max-filesize" in w], r.out
    text = ov("status", cwd=root).out
    assert "  big.txt  (" in text and "... and 4 more (`ov status -o json` lists them)" in text, text


def test_a_first_index_outside_git_says_its_gitignore_is_not_read(tmp_path):
    """Outside a git work tree `.gitignore` is not read (as rg and fd): a downloaded copy of
    a project would have its `node_modules/` indexed. A first index says so, once."""
    from conftest import make_tree, run_inprocess

    files = {".gitignore": "node_modules/\n", "a.md": "# A\n\nbrass\n", "node_modules/x/i.js": "dep()\n"}
    root = make_tree(tmp_path / "copy", files)
    (root / ".git").rmdir()
    r = run_inprocess("index", ".", "--no-embed", cwd=root)
    assert r.code == 0 and "its .gitignore is not read" in r.err and ".ovignore" in r.err, r.err
    assert run_inprocess("glob", "**", cwd=root).out.splitlines() == ["a.md", "node_modules/x/i.js"]
    assert "not read" not in run_inprocess("index", ".", "--no-embed", cwd=root).err  # once
    assert run_inprocess("status", "-o", "json", cwd=root).json["result"]["gitignore_read"] is False
    assert "ignore files:    .gitignore not read" in run_inprocess("status", cwd=root).out
    repo = make_tree(tmp_path / "repo", files)
    r = run_inprocess("index", ".", "--no-embed", cwd=repo)
    assert r.code == 0 and "not read" not in r.err, r.err
    assert run_inprocess("glob", "**", cwd=repo).out.splitlines() == ["a.md"]
    assert run_inprocess("status", "-o", "json", cwd=repo).json["result"]["gitignore_read"] is True
    assert "ignore files:" not in run_inprocess("status", cwd=repo).out
