"""A damaged index (issue 17): every command answers with a clear error (never
`internal`), an incremental `ov index` says the index is damaged, and `ov index --full`
rebuilds it from nothing, whatever the damage: truncation, bit flips, garbage pages,
dropped tables, a future or reset user_version, a garbage WAL or shared-memory file."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess

ENV = {"OV_EMBEDDER": "hash"}
PAGE = 4096
FILES = {f"doc{i}.md": f"# Doc {i}\n\nalpha{i} shared words here.\n\nmore text {i}.\n" for i in range(12)}
FILES["code/x.py"] = '"""A module."""\n\ndef f():\n    return "alpha0"\n'


def _flip(db: Path, offset: int, bit: int = 0) -> None:
    data = bytearray(db.read_bytes())
    data[offset % len(data)] ^= 1 << bit
    db.write_bytes(bytes(data))


def _garbage(db: Path, start: int, length: int, seed: int) -> None:
    data = bytearray(db.read_bytes())
    rng = random.Random(seed)
    start %= len(data)
    for i in range(start, min(start + length, len(data))):
        data[i] = rng.randrange(256)
    db.write_bytes(bytes(data))


def _truncate(db: Path, size: int) -> None:
    n = db.stat().st_size
    with open(db, "r+b") as f:
        f.truncate(size if size >= 0 else n + size)


def _sql(db: Path, *stmts: str) -> None:
    from ov.store import connect  # sqlite-vec loaded: vec0 tables can be dropped

    conn = connect(db)
    for s in stmts:
        conn.execute(s)
    conn.close()


def _raw(db: Path, *stmts: str) -> None:
    conn = sqlite3.connect(db)
    for s in stmts:
        conn.execute(s)
    conn.commit()
    conn.close()


def _pages(db: Path) -> int:
    return db.stat().st_size // PAGE


DAMAGE = {
    "truncate-0": lambda db: _truncate(db, 0),
    "truncate-50": lambda db: _truncate(db, 50),
    "truncate-100": lambda db: _truncate(db, 100),
    "truncate-1-page": lambda db: _truncate(db, PAGE),
    "truncate-half": lambda db: _truncate(db, _pages(db) // 2 * PAGE),
    "truncate-last-page": lambda db: _truncate(db, -PAGE),
    "truncate-1-byte": lambda db: _truncate(db, -1),
    "flip-magic": lambda db: _flip(db, 3),
    "flip-page-size": lambda db: _flip(db, 16, 1),
    "flip-write-version": lambda db: _flip(db, 18, 3),
    "flip-payload-fraction": lambda db: _flip(db, 21, 2),
    "flip-db-size": lambda db: _flip(db, 31, 4),
    "flip-schema-cookie": lambda db: _flip(db, 43, 0),
    "flip-schema-format": lambda db: _flip(db, 47, 3),
    "flip-encoding": lambda db: _flip(db, 59, 1),
    "flip-page1-btree": lambda db: _flip(db, 100, 6),
    "flip-page2-header": lambda db: _flip(db, PAGE, 5),
    "flip-mid-a": lambda db: _flip(db, _pages(db) // 2 * PAGE + 8, 7),
    "flip-mid-b": lambda db: _flip(db, _pages(db) // 3 * PAGE + 1000, 2),
    "flip-many": lambda db: [_flip(db, random.Random(i).randrange(db.stat().st_size), i % 8)
                             for i in range(40)],
    "garbage-page1-body": lambda db: _garbage(db, 100, PAGE - 100, 1),
    "garbage-page2": lambda db: _garbage(db, PAGE, PAGE, 2),
    "garbage-mid-page": lambda db: _garbage(db, _pages(db) // 2 * PAGE, PAGE, 3),
    "garbage-last-page": lambda db: _garbage(db, (_pages(db) - 1) * PAGE, PAGE, 4),
    "garbage-five-pages": lambda db: [_garbage(db, p * PAGE, PAGE, p) for p in
                                      random.Random(5).sample(range(1, _pages(db)), 5)],
    "garbage-whole-file": lambda db: _garbage(db, 0, db.stat().st_size, 6),
    "drop-files": lambda db: _sql(db, "PRAGMA foreign_keys=OFF", "DROP TABLE files"),
    "drop-chunks": lambda db: _sql(db, "DROP TABLE chunks"),
    "drop-chunks_fts": lambda db: _sql(db, "DROP TABLE chunks_fts"),
    "drop-chunks_tri": lambda db: _sql(db, "DROP TABLE chunks_tri"),
    "drop-chunks_vec": lambda db: _sql(db, "DROP TABLE chunks_vec"),
    "drop-meta": lambda db: _sql(db, "DROP TABLE meta"),
    "drop-sessions": lambda db: _sql(db, "DROP TABLE sessions"),
    "future-user-version": lambda db: _raw(db, "PRAGMA user_version = 99"),
    "zero-user-version": lambda db: _raw(db, "PRAGMA user_version = 0"),
    "garbage-wal": lambda db: Path(f"{db}-wal").write_bytes(os.urandom(PAGE * 3)),
    "garbage-shm": lambda db: Path(f"{db}-shm").write_bytes(os.urandom(32768)),
    "text-file": lambda db: db.write_text("not a database at all\n" * 400),
}

COMMANDS = (["status"], ["search", "alpha3", "--search-type", "keywords"], ["search", "alpha3"],
            ["find", "alpha3"], ["search", "alpha3", "--mode", "context"], ["read", "."],
            ["read", "doc1.md"], ["grep", "alpha3"], ["glob", "*.md"], ["tag", "doc1.md", "k=v"],
            ["manifest"])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = make_tree(tmp_path_factory.mktemp("repair") / "t", FILES)
    r = run_inprocess("index", ".", cwd=root, env=ENV)
    assert r.code == 0, r.err
    assert run_inprocess("tag", "doc2.md", "team=docs", cwd=root, env=ENV).code == 0
    r = run_inprocess("status", "-o", "json", cwd=root, env=ENV)  # checkpoints: no WAL left
    return root


def _not_internal(r, what) -> None:
    assert r.code in (0, 1, 2), (what, r.out, r.err)
    assert "internal" not in r.out and "error[internal]" not in r.err, (what, r.out, r.err)
    assert "Traceback" not in r.err, (what, r.err)


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_index_is_reported_and_rebuilt_by_index_full(built, tmp_path, kind):
    root = tmp_path / "t"
    shutil.copytree(built, root, symlinks=True)
    db = root / ".ov" / "index.db"
    for s in ("-wal", "-shm"):
        Path(f"{db}{s}").unlink(missing_ok=True)
    DAMAGE[kind](db)
    for args in COMMANDS:
        r = run_inprocess([*args, "-o", "json"], cwd=root, env=ENV)
        _not_internal(r, args)
        if r.code == 2:
            err = r.json["error"]
            assert err["code"] != "internal", (args, err)
            if "is damaged (" in err["message"]:
                assert "ov index --full" in err["message"], err
    r = run_inprocess("index", ".", "-o", "json", cwd=root, env=ENV)  # incremental
    _not_internal(r, "index")
    r = run_inprocess("index", ".", "--full", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0, (kind, r.out, r.err)
    # a working index: all files, the keyword and semantic branches, sound pages
    r = run_inprocess("status", "-o", "json", cwd=root, env=ENV)
    st = r.json["result"]
    assert st["files"] == len(FILES) and st["embedded_coverage"] == 1.0, st
    r = run_inprocess("search", "alpha3", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["hits"][0]["path"] == "doc3.md", r.out
    r = run_inprocess("find", "alpha3", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["hits"], r.out
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    assert not Path(f"{db}.rebuild").exists()
    r = run_inprocess("index", ".", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["unchanged"] == len(FILES), r.out


@pytest.mark.parametrize("table", ["chunks_fts", "chunks"])
def test_status_says_an_index_is_damaged_when_search_does(built, tmp_path, table):
    """`ov status -o json` answered ok, no warning, exit 0, on an index whose keyword table
    was dropped, which every search refused as damaged: a CI health check passed on it."""
    root = tmp_path / "t"
    shutil.copytree(built, root, symlinks=True)
    conn = sqlite3.connect(root / ".ov" / "index.db")
    conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    search = run_inprocess("search", "alpha3", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert search.code == 2 and "is damaged (" in search.json["error"]["message"]
    r = run_inprocess("status", "-o", "json", cwd=root, env=ENV)
    assert r.code == 2 and r.json["error"] == search.json["error"] | {"message": r.json["error"]["message"]}
    assert f"is damaged (missing table(s): {table})" in r.json["error"]["message"]


def test_incremental_index_says_a_damaged_index_is_damaged_and_doctor_agrees(built, tmp_path):
    root = tmp_path / "t"
    shutil.copytree(built, root, symlinks=True)
    db = root / ".ov" / "index.db"
    DAMAGE["drop-chunks_tri"](db)
    r = run_inprocess("index", ".", "-o", "json", cwd=root, env=ENV)
    assert r.code == 2 and "ov index --full" in r.json["error"]["message"], r.out
    from ov.store import REPAIR_ADVICE

    assert REPAIR_ADVICE in r.json["error"]["message"]
    from ov.doctor import check_index

    checks = check_index(root, None)
    assert any(not c.ok and c.fix == REPAIR_ADVICE for c in checks), checks


def test_a_full_rebuild_of_a_damaged_index_keeps_the_tags_it_can_read(built, tmp_path):
    root = tmp_path / "t"
    shutil.copytree(built, root, symlinks=True)
    db = root / ".ov" / "index.db"
    DAMAGE["drop-chunks_fts"](db)
    r = run_inprocess("index", ".", "--full", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and "damaged" in r.err + r.out
    r = run_inprocess("search", "alpha2", "--tags", "team=docs", "--search-type", "keywords",
                      "-o", "json", cwd=root, env=ENV)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["doc2.md"], r.out


def test_a_db_that_is_not_an_sqlite_file_is_refused_never_rebuilt_over(tmp_path):
    """`--db` naming someone's file (a typo, the arguments swapped) is not a damaged index:
    nothing advises `--full`, and `ov index --full` refuses it instead of writing an index
    over it (nor leaves a lock file beside it). Under .ov/ the same bytes are ov's own
    damaged index, which --full rebuilds (the tests above)."""
    root = make_tree(tmp_path / "t", {"thesis.md": "# My thesis\n\nchapter one\n"})
    thesis = root / "thesis.md"
    before = (thesis.read_bytes(), thesis.stat().st_mode)
    for args in (["search", "thesis", "--db", "thesis.md"], ["status", "--db", "thesis.md"],
                 ["index", ".", "--full", "--db", "thesis.md", "--no-embed"]):
        r = run_inprocess(*args, "-o", "json", cwd=root, env=ENV)
        err = r.json["error"]
        assert r.code == 2 and err["code"] == "invalid_path" and err["field"] == "db", (args, r.out)
        assert "not an ov index" in err["message"] and "--full" not in err["message"], err
    assert (thesis.read_bytes(), thesis.stat().st_mode) == before
    assert sorted(p.name for p in root.iterdir()) == ["thesis.md"]


def test_an_index_named_inside_the_tree_does_not_index_itself(tmp_path):
    """Its files (and a --full rebuild's beside them) are never indexed, skipped or
    counted as new, even when the index is over the size cap (here 2 KB)."""
    root = make_tree(tmp_path / "t", {"a.md": "hello\n", ".ov/config.toml": "max-filesize = 2048\n"})
    for args in ([], [], ["--full"]):
        r = run_inprocess("index", ".", "--db", "my.db", "--no-embed", "-o", "json", *args, cwd=root, env=ENV)
        rep = r.json["result"]
        assert r.code == 0 and rep["skipped"] == 0 and rep["added"] <= 1, r.out
    assert (root / "my.db").stat().st_size > 2048
    st = run_inprocess("status", "--db", "my.db", "-o", "json", cwd=root, env=ENV).json["result"]
    assert st["files"] == 1 and st["new_files"] == 0 and st.get("skipped_files", []) == [], st


def test_an_interrupted_full_rebuild_leaves_the_old_index_whole(tmp_path, monkeypatch):
    """`ov index --full` builds its new index beside the old one: stopped in its embedding
    phase (Ctrl-C), the old index keeps every vector, tag and ledger, and no half-built
    file is left in its place. It used to rewrite the rows in place first: a Ctrl-C then
    left an index with no vectors at all, hours of model time on a large tree."""
    from ov import api
    from ov.embed import HashEmbedder
    from ov.store import Store

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    assert run_inprocess("tag", "doc1.md", "team=docs", cwd=root, env=ENV).code == 0
    assert run_inprocess("search", "alpha1", "--mode", "context", "--session-id", "s1", cwd=root,
                         env=ENV).code == 0
    db = root / ".ov" / "index.db"

    def facts():
        with Store.open(db) as s:
            return (s.q1("SELECT count(*) FROM chunks WHERE embedded = 1"),
                    s.rows("SELECT path, tags FROM files ORDER BY path"),
                    s.rows("SELECT session, uri FROM sessions ORDER BY rowid"))

    before = facts()
    assert before[0] > 0 and before[2]

    class Interrupted(HashEmbedder):
        def embed(self, texts, batch_size=16):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.index(root, full=True, embedder=Interrupted())
    assert facts() == before
    assert sorted(p.name for p in db.parent.iterdir() if "rebuild" in p.name) == []
    r = run_inprocess("find", "alpha1", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["hits"], r.out
    # a --full that finishes replaces it, keeping the tags and the ledger
    assert run_inprocess("index", ".", "--full", cwd=root, env=ENV).code == 0
    after = facts()
    assert after[1:] == before[1:] and after[0] == before[0]
    assert not [p.name for p in db.parent.iterdir() if "rebuild" in p.name]


def test_a_long_lived_index_follows_a_full_rebuild(tmp_path, monkeypatch):
    """`ov mcp` holds its index open for hours; `ov index --full` renames a new file over
    it. The open index reads the new file from the next query on (it used to read the
    replaced one for ever: new text never found, and its held vectors and postings kept)."""
    from ov import api

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    with api.Index.open(root) as ix:
        ix.keep_keywords()
        ix.keep_vectors()
        assert [h.path for h in ix.search("zanzibar", search_type="keywords").hits] == []
        (root / "doc3.md").write_text("# Doc 3\n\nzanzibar spice routes\n")
        assert run_inprocess("index", ".", "--full", cwd=root, env=ENV).code == 0
        # read and status, before any search, see the new file too
        (root / "new.md").write_text("# New\n\nmarmalade\n")
        assert run_inprocess("index", ".", "--full", cwd=root, env=ENV).code == 0
        assert ix.status().files == len(FILES) + 1
        assert "marmalade" in ix.read("new.md", level=2).text
        for kind in ("keywords", "semantic", "hybrid"):
            hits = ix.search("zanzibar spice", search_type=kind).hits
            assert hits and hits[0].path == "doc3.md", (kind, [h.path for h in hits])


def test_a_full_rebuild_keeps_what_was_written_meanwhile_and_the_file_mode(tmp_path, monkeypatch):
    """A tag written while `--full` builds its new file is carried over (the tags are
    copied last, with the old file's writers held off until the rename); the rebuilt file
    keeps the old one's permission bits (an index shared with readers stays readable)."""
    from ov import api
    from ov.store import Store

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    db = root / ".ov" / "index.db"
    os.chmod(db, 0o644)
    tagged = []

    def progress(phase, done, total):
        if not tagged:
            tagged.append(run_inprocess("tag", "doc4.md", "team=ops", cwd=root, env=ENV).code)

    api.index(root, full=True, progress=progress)
    assert tagged == [0]
    with Store.open(db) as s:
        assert s.q1("SELECT tags FROM files WHERE path = 'doc4.md'") == '{"team": "ops"}'
    assert oct(db.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize("user_version", [0, 3, 7, 42])
def test_someone_elses_sqlite_database_is_refused_untouched(tmp_path, user_version):
    """`--db` naming another program's SQLite database: refused as not an ov index before
    anything touches it: no lock file beside it, and not switched to WAL mode (a change
    written into its header, which SQLite keeps for good). Whatever its own user_version
    (ov's schema numbers among them): ov's index is told by its meta table's version row."""
    root = make_tree(tmp_path / "t", {"a.md": "hello\n"})
    app = root / "app.db"
    conn = sqlite3.connect(app)
    conn.execute("CREATE TABLE users(name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.execute(f"PRAGMA user_version={user_version}")
    conn.commit()
    conn.close()
    before = app.read_bytes()
    for args in (["index", ".", "--db", "app.db", "--no-embed"], ["index", ".", "--full", "--db", "app.db"],
                 ["search", "hello", "--db", "app.db"], ["status", "--db", "app.db"]):
        r = run_inprocess(*args, "-o", "json", cwd=root, env=ENV)
        assert r.code == 2 and "not an ov index" in r.json["error"]["message"], (args, r.out)
    assert app.read_bytes() == before
    assert sorted(p.name for p in root.iterdir()) == ["a.md", "app.db"]


def test_a_write_held_off_by_a_rebuild_goes_to_the_new_file(tmp_path, monkeypatch):
    """A tag that waits on the old file while `--full` copies the tags across (the write
    hold) is not committed into the file about to be renamed over, and lost: the rebuild
    marks the old file as its last write, and the tag, finding the mark, is written to the
    new file."""
    import threading

    from ov import api, indexer
    from ov.store import Store

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    done: list = []

    def tag_late() -> None:
        with api.Index.open(root) as ix:
            done.append(ix.tag("doc4.md", ["late=1"]))

    same_mode = indexer._same_mode
    started = []

    def slow_same_mode(old, new):
        started.append(threading.Thread(target=tag_late))
        started[0].start()
        time.sleep(0.5)  # the tag is waiting on the old file's write lock by now
        same_mode(old, new)

    monkeypatch.setattr(indexer, "_same_mode", slow_same_mode)
    api.index(root, full=True)
    started[0].join(30)
    assert len(done) == 1
    with Store.open(root / ".ov" / "index.db") as s:
        assert s.q1("SELECT tags FROM files WHERE path = 'doc4.md'") == '{"late": "1"}'
        assert s.get_meta("superseded") is None


def test_a_rebuild_killed_after_its_mark_is_finished_by_the_next_writer(tmp_path, monkeypatch):
    """A rebuild killed between marking the old file and renaming the new one over it:
    while a process holds the index lock (a rebuild may be running), a write waits, then
    says index_busy (retryable), never succeeding into a file about to go; once none holds
    it, the next write (or `ov index`) takes the mark back, removes the half-built file,
    and writes."""
    from ov import api
    from ov.indexer import IndexLock
    from ov.store import Store

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    monkeypatch.setattr(api, "SUPERSEDED_WAIT_S", 0.3)
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    db = root / ".ov" / "index.db"
    for writer in ("tag", "index"):
        with Store.open(db) as s, s.tx():
            s.set_meta("superseded", "1")
        shutil.copy(db, db.with_name("index.db.rebuild"))
        with IndexLock(db):
            r = run_inprocess("tag", "doc4.md", "k=v", "-o", "json", cwd=root, env=ENV)
        assert r.code == 2 and r.json["error"]["code"] == "index_busy" and r.json["error"]["retryable"], r.out
        args = ["tag", "doc4.md", f"by={writer}"] if writer == "tag" else ["index", "."]
        assert run_inprocess(*args, cwd=root, env=ENV).code == 0
        assert sorted(p.name for p in db.parent.iterdir() if "rebuild" in p.name) == []
        with Store.open(db) as s:
            assert s.get_meta("superseded") is None
    r = run_inprocess("tag", "doc4.md", "k=v", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0, r.out
    with Store.open(db) as s:
        assert s.q1("SELECT tags FROM files WHERE path = 'doc4.md'") == '{"by": "tag", "k": "v"}'


def test_a_file_of_the_users_by_the_rebuild_name_is_kept(tmp_path):
    """`--db notes.db --full` builds `notes.db.rebuild`: a file of the user's by that name
    is refused as invalid_path, not removed."""
    root = make_tree(tmp_path / "t", {"a.md": "hello\n"})
    assert run_inprocess("index", ".", "--db", "../notes.db", "--no-embed", cwd=root, env=ENV).code == 0
    mine = tmp_path / "notes.db.rebuild"
    mine.write_text("my plans\n")
    r = run_inprocess("index", ".", "--db", "../notes.db", "--full", "--no-embed", "-o", "json",
                      cwd=root, env=ENV)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_path", r.out
    assert mine.read_text() == "my plans\n"


def test_sigterm_stops_a_full_rebuild_as_ctrl_c_does(tmp_path):
    """`timeout`, a service manager and an editor stop `ov index` with SIGTERM: a `--full`
    so stopped removes its half-built file, and the old index stays whole."""
    files = {f"d{i}/f{j}.md": f"# Note {i} {j}\n\n" + f"word{i} text{j} " * 200 + "\n"
             for i in range(30) for j in range(20)}
    root = make_tree(tmp_path / "t", files)
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    db = root / ".ov" / "index.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", ".", "--full"], cwd=root,
                         env={**os.environ, **ENV, "OV_INDEX_JOBS": "1"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rebuild = db.with_name("index.db.rebuild")
    deadline = time.monotonic() + 60
    while not rebuild.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert p.poll() is None, "the rebuild ended before it could be stopped"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and b"interrupted" in err, (p.returncode, err)
    assert sorted(x.name for x in db.parent.iterdir() if "rebuild" in x.name) == []
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another user")
def test_root_rebuilding_a_users_index_leaves_it_theirs(tmp_path, monkeypatch):
    """`sudo ov index --full` on a user's index: the new file keeps its owner, group and
    mode (it used to become root's, 0600, and the user could no longer read it). (Under
    sudo: another user's index is not used otherwise, `config.untrusted`.)"""
    from ov import api

    monkeypatch.setenv("SUDO_UID", "65534")
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    db = root / ".ov" / "index.db"
    os.chown(db, 65534, 65534)
    os.chmod(db, 0o640)
    api.index(root, full=True, embed=False)
    st = db.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640)


def test_an_index_named_through_a_linked_folder_does_not_index_itself(tmp_path):
    """`--db` inside the tree, named through a symbolic link to the tree's folder: the
    index's own files are still known as its own (the root is resolved, so must they be)."""
    root = make_tree(tmp_path / "t", {"a.md": "hello\n"})
    (tmp_path / "link").symlink_to(tmp_path)
    db = tmp_path / "link" / "t" / "my.db"
    for _ in range(2):
        r = run_inprocess("index", ".", "--db", str(db), "--no-embed", "-o", "json", cwd=root, env=ENV)
        assert r.code == 0 and r.json["result"]["skipped"] == 0 and r.json["result"]["added"] <= 1, r.out
    st = run_inprocess("status", "--db", str(db), "-o", "json", cwd=root, env=ENV).json["result"]
    assert st["files"] == 1 and st["new_files"] == 0, st


@pytest.mark.parametrize("name", ["a#b", "c%41d", "e?f"])
def test_an_index_under_a_folder_with_uri_characters_opens_read_only(tmp_path, name):
    """A read-only open names the file in a URI: `#`, `%` and `?` in the path are quoted
    (`#` used to cut the path, and SQLite made a stray empty file at the cut)."""
    root = make_tree(tmp_path / name, FILES)
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    r = run_inprocess("manifest", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0, r.out
    r = run_inprocess("search", "alpha1", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["hits"], r.out
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_damage_read_from_an_immutable_index_its_owner_changed_is_busy(tmp_path):
    """An index read as immutable (a folder this user cannot write) has no locks: its
    owner's checkpoint can rewrite a page under a query. A damage error from a file that
    changed since it was opened is index_busy (retryable), not 'damaged, rebuild it'."""
    import sqlite3 as sq

    from ov.store import db as dbmod

    f = tmp_path / "index.db"
    f.write_bytes(b"x" * 4096)
    dbmod._IMMUTABLE[str(f)] = dbmod._file_state(f)
    try:
        err = sq.DatabaseError("database disk image is malformed")
        assert dbmod.map_error(err, f).code == "invalid_argument"  # unchanged: real damage
        f.write_bytes(b"y" * 8192)
        got = dbmod.map_error(err, f)
        assert got.code == "index_busy" and got.retryable, got.message
        assert dbmod.map_error(err).code == "index_busy"  # mapped without its path
    finally:
        del dbmod._IMMUTABLE[str(f)]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to rebuild another user's index")
@pytest.mark.parametrize("swap", ["symlink", "hardlink"])
def test_a_file_swapped_in_for_the_rebuild_is_never_handed_over(tmp_path, monkeypatch, swap):
    """Root rebuilding a user's index: the user owns .ov/ and can swap a link to any file
    in for the new one just before its mode and owner are set. Nothing is changed through
    it (it used to chmod and chown the link's target: any file on the machine, theirs)."""
    from ov import api, indexer

    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    os.chown(root / ".ov" / "index.db", 65534, 65534)
    victim = tmp_path / "victim"
    victim.write_text("root's secret\n")
    os.chmod(victim, 0o600)
    same_mode = indexer._same_mode

    def swapped(old, new):
        os.unlink(new)
        if swap == "symlink":
            os.symlink(victim, new)
        else:
            os.link(victim, new)
        same_mode(old, new)

    monkeypatch.setattr(indexer, "_same_mode", swapped)
    try:
        api.index(root, full=True, embed=False)
    except Exception:
        pass  # what the run makes of the swapped file is not the point
    st = victim.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (0, 0, 0o600)
    assert victim.read_text() == "root's secret\n"


def test_an_old_index_this_user_cannot_write_says_so_once(tree, ov, monkeypatch):
    """A read-only index too old to read as it stands said "searched as it stands", then
    "run `ov index` to upgrade it", and `ov index` failed on the lock file (an upgrade
    review): the error now says the owner must upgrade it."""
    from ov.errors import OvError
    from ov.store import Store
    from ov.store import db as dbmod

    root = tree({"a.txt": "alpha\n"})
    assert ov("index", "--no-embed", cwd=root).code == 0
    path = root / ".ov" / "index.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=5")
    conn.close()
    real_access = os.access
    monkeypatch.setattr(dbmod.os, "access", lambda p, mode, **kw: False if mode == os.W_OK else real_access(p, mode, **kw))
    with pytest.raises(OvError) as e:
        Store.open(path, readonly=True)
    assert e.value.code == "unsupported" and "cannot write it to upgrade it: its owner can" in e.value.message
    monkeypatch.undo()
    with pytest.raises(OvError) as e:  # a user who may write it is told to upgrade it
        Store.open(path, readonly=True)
    assert "run `ov index` to upgrade it" in e.value.message
