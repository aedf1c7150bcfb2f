"""A cloned tree can carry any `.ov/` and any control file (a review of hostile clones):
what ov reads of its own there must not let the tree signal the user's processes, hang a
command, fill memory or run away with the CPU. Each command runs in a child process with
a timeout, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree

ENV = {**os.environ, "OV_EMBEDDER": "hash", "OV_BACKGROUND": "0"}
LIMIT_S = 20


def ov(root: Path, *args: str, timeout: float = LIMIT_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ov", *args], cwd=root, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def indexed(tmp_path) -> Path:
    root = make_tree(tmp_path / "clone", {"a.txt": "hello world\n", "doc.md": "# Doc\n\nhello parsing.\n"})
    assert ov(root, "index", "--no-embed", ".").returncode == 0
    return root


def _sleeper(group: bool = False) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "60"], start_new_session=group)


def test_a_planted_worker_state_signals_no_process(indexed):
    """`.ov/index.db.worker` naming another process (a pid, or a process group as a
    negative pid), "starting" and dated in the future: `ov index` and `ov index --stop`
    used to SIGTERM it. Only a process whose command line is this index's worker is."""
    victim, group = _sleeper(), _sleeper(group=True)
    try:
        state = indexed / ".ov" / "index.db.worker"
        for pid in (victim.pid, -group.pid):
            state.write_text(json.dumps({"pid": pid, "phase": "starting", "started": 1e18}))
            assert ov(indexed, "index", "--no-embed", ".").returncode == 0
            assert ov(indexed, "index", "--stop").returncode in (0, 1)
            r = ov(indexed, "status", "-o", "json")
            assert r.returncode == 0 and json.loads(r.stdout)["result"]["background"] is None
        time.sleep(0.2)
        assert victim.poll() is None and group.poll() is None, "a planted pid was signalled"
    finally:
        for p in (victim, group):
            p.kill()
            p.wait()


@pytest.mark.parametrize("name", ["index.db.worker", "worker.failed", "states.cache", "WALK"])
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_own_files_under_ov_that_are_fifos_or_dev_zero_are_ignored(indexed, name, kind):
    """A fifo blocked the read of ov's own state and cache files; a link to /dev/zero
    filled memory. They are read only as small regular files, never through a link."""
    from ov.config import WalkOptions
    from ov.walk import cache_name

    path = indexed / ".ov" / (cache_name(WalkOptions(max_filesize=None)) if name == "WALK" else name)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    for args in (("grep", "hello"), ("glob", "*.txt"), ("status",), ("search", "hello", "--search-type", "keywords")):
        r = ov(indexed, *args)
        assert r.returncode == 0, (args, r.stderr)
        assert "internal" not in r.stderr and "MemoryError" not in r.stderr


def test_a_planted_walk_listing_is_never_read(indexed):
    """A listing of the right version and root (the clone's path can be guessed) naming
    a file of the attacker's choosing, or malformed: neither is read (it was, and a
    malformed one broke every grep with `internal`)."""
    from ov.config import WalkOptions
    from ov.walk import CACHE_VERSION, cache_name

    path = indexed / ".ov" / cache_name(WalkOptions(max_filesize=None))
    root = os.path.abspath(indexed)
    for planted in ({"v": CACHE_VERSION, "root": root},
                    {"v": CACHE_VERSION, "root": root, "ign": {}, "top": None,
                     "dirs": {"": (None, ["a.txt", "../../etc/passwd"], [0, 0], (), ())}}):
        path.unlink(missing_ok=True)
        path.write_bytes(marshal.dumps(planted))
        r = ov(indexed, "grep", "-l", "hello")
        assert r.returncode == 0 and r.stdout.split() == ["a.txt", "doc.md"], r.stderr


def test_definition_lines_of_any_length_are_outlined_in_linear_time(tmp_path):
    """`def` and a 40,000-letter name took 115 s to index (a regex tried from every letter);
    a line of spaces after a signature was quadratic too. Each is now one pass."""
    from ov.tiers import _SIG_TAIL_RE, _defined_name

    t0 = time.process_time()
    assert _defined_name("def " + "a" * 200_000) == "a" * 200_000 + "()"  # (Ruby's `def name`)
    assert _defined_name("int " + "b" * 200_000 + "(void)") == "b" * 200_000 + "()"
    assert _defined_name("a:" * 100_000) == "" and _defined_name("void ::foo(int)") == "foo()"
    assert _SIG_TAIL_RE.sub("", "f(x)" + " " * 200_000 + "y") == "f(x)" + " " * 200_000 + "y"
    assert time.process_time() - t0 < 5
    root = make_tree(tmp_path / "t", {"x.rb": "def " + "a" * 40_000 + "\n  1\nend\n",
                                      "y.js": ("function " + "b" * 5000 + " " * 9000 + "x\n") * 60})
    r = ov(root, "index", "--no-embed", ".")
    assert r.returncode == 0 and "2 added" in r.stderr, r.stderr


def test_an_ignore_line_of_many_stars_does_not_hang_the_walk(tmp_path):
    """A committed `.gitignore` of `*a*a*a*a*a*a*a*a*a*a*a*a*b` and a file named with 40
    `a`s hung grep, glob, index and search (the regex backtracked for hours)."""
    root = make_tree(tmp_path / "t", {".gitignore": "*a*a*a*a*a*a*a*a*a*a*a*a*b\n", "ok.txt": "needle\n",
                                      "a" * 40: "needle\n", "a" * 20 + "b": "needle\n"})
    r = ov(root, "grep", "-l", "needle")
    assert r.returncode == 0 and r.stdout.split() == ["a" * 40, "ok.txt"], r.stderr
    assert ov(root, "glob", "*").returncode == 0
    assert ov(root, "index", "--no-embed", ".").returncode == 0


@pytest.mark.parametrize("sql", [
    "ALTER TABLE meta RENAME TO meta_real; CREATE VIEW meta AS SELECT key, value FROM meta_real UNION ALL "
    "SELECT 'zz' || x, x FROM (WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r)",
    "CREATE TRIGGER hang AFTER INSERT ON files BEGIN SELECT count(*) FROM (WITH RECURSIVE r(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r); END",
    # what SQLite computes as it reads or writes a row: a review's nested replace() over a
    # 50 MB printf held grep for 44 s in 2 GB, and `ov index` of 3 files for 168 s
    "ALTER TABLE files ADD COLUMN slow TEXT GENERATED ALWAYS AS (replace(printf('%.*c', 1000, 'a'), 'a', 'b')) VIRTUAL",
    "CREATE INDEX slow ON files(length(replace(path, 'a', 'b')))",
    "CREATE INDEX slow ON files(path) WHERE length(replace(path, 'a', 'b')) > 0",
    "CREATE VIRTUAL TABLE slow USING rtree(id, a, b)",
    # ... and spelled to pass a reading of the SQL by its words (a review of the check)
    "ALTER TABLE files ADD COLUMN slow TEXT AS/**/(replace(path, 'a', 'b')) VIRTUAL",
    "CREATE INDEX slow ON files(path||path)",
    "CREATE INDEX slow ON files(/*'*/ length(replace(path, 'a', 'b')) /*'*/)",
    "CREATE TABLE slow(a, CHECK/**/(length(a) > 0))",
    "CREATE VIRTUAL TABLE slow USING \"rtree\"(id, a, b)"])
def test_a_planted_view_or_trigger_in_the_index_is_refused_not_run(indexed, sql):
    """SQLite runs a view's or a trigger's SQL in C, where Ctrl-C and deadlines do not
    reach: a recursive one hung every command for good. So does it a generated column's,
    an indexed expression's or a partial index's condition. An index holding any of them
    is refused as damaged (grep then reads every file), and `ov index --full` rebuilds it."""
    import sqlite3

    conn = sqlite3.connect(indexed / ".ov" / "index.db")
    conn.executescript(sql)
    conn.close()
    (indexed / "new.txt").write_text("hello again\n")
    for args in (("status",), ("search", "hello", "--search-type", "keywords"), ("read", "a.txt"),
                 ("index", "--no-embed", ".")):
        r = ov(indexed, *args)
        assert r.returncode == 2 and "error[invalid_argument]" in r.stderr and "ov never makes" in r.stderr, r.stderr
    r = ov(indexed, "grep", "-l", "hello")
    assert r.returncode == 0 and r.stdout.split() == ["a.txt", "doc.md", "new.txt"]
    assert ov(indexed, "index", "--full", "--no-embed", ".").returncode == 0
    r = ov(indexed, "search", "hello", "--search-type", "keywords", "-o", "json")
    assert r.returncode == 0 and {h["path"] for h in json.loads(r.stdout)["result"]["hits"]} >= {"a.txt", "new.txt"}


def test_an_index_that_is_a_link_is_not_opened_through_it(tmp_path, indexed):
    """`.ov/index.db` a link to another tree's index: refused, and nothing is made beside
    the target (a read-only open through the link made its -shm and -wal)."""
    other = make_tree(tmp_path / "other", {"x.txt": "hello\n"})
    (other / ".ov").mkdir()
    os.replace(indexed / ".ov" / "index.db", other / ".ov" / "index.db")
    for p in (indexed / ".ov").glob("index.db-*"):
        p.unlink()
    (indexed / ".ov" / "index.db").symlink_to(other / ".ov" / "index.db")
    for args in (("search", "hello", "--search-type", "keywords"), ("status",), ("find", "hello")):
        r = ov(indexed, *args)
        assert r.returncode == 2 and "link" in r.stderr, r.stderr
    assert sorted(p.name for p in (other / ".ov").iterdir()) == ["index.db"]
    shutil.rmtree(indexed / ".ov")  # the whole .ov a link to the other tree's
    (indexed / ".ov").symlink_to(other / ".ov")
    r = ov(indexed, "search", "hello", "--search-type", "keywords")
    assert r.returncode == 2 and "link" in r.stderr, r.stderr
    assert sorted(p.name for p in (other / ".ov").iterdir()) == ["index.db"]


def test_control_files_that_link_out_of_the_tree_are_not_read(tmp_path):
    """A config or an ignore file that is a link to a file outside: an outside file's
    setting was echoed in the error (`limit must be ..., not 'SECRET'`), and its lines
    applied as ignore rules. Both are skipped now, with a warning."""
    outside = make_tree(tmp_path / "outside", {"secret.toml": 'limit = "SECRET_TOKEN_1"\n', "ign": "a.txt\n"})
    root = make_tree(tmp_path / "clone", {"a.txt": "hello\n", "b.txt": "hello b\n"})
    (root / ".git").mkdir()  # a clone: its .gitignore would count
    (root / ".ov").mkdir()
    (root / ".ov" / "config.toml").symlink_to(outside / "secret.toml")
    (root / "pyproject.toml").symlink_to(outside / "secret.toml")
    (root / ".gitignore").symlink_to(outside / "ign")
    r = ov(root, "grep", "-l", "hello")
    assert r.returncode == 0 and r.stdout.split() == ["a.txt", "b.txt"], r.stderr
    assert "SECRET" not in r.stdout + r.stderr
    assert r.stderr.count("a symbolic link leading outside the tree") == 3, r.stderr


def test_an_ov_folder_that_links_out_is_said_once_as_the_folder(tmp_path):
    """`.ov` itself a link out: each search said twice that `.ov/config.toml` was a link
    leading outside, though no such file existed; now the folder is named, once, and only
    when a config file is there."""
    victim = make_tree(tmp_path / "victim", {})
    root = make_tree(tmp_path / "clone", {"a.md": "hi\n"})
    (root / ".ov").symlink_to(victim)
    r = ov(root, "search", "hi")
    assert r.returncode == 2 and "writes no folder through a link" in r.stderr, r.stderr
    assert "config.toml" not in r.stderr and list(victim.iterdir()) == [], r.stderr
    (victim / "config.toml").write_text('limit = "SECRET_TOKEN_2"\n')
    r = ov(root, "search", "hi")
    assert r.returncode == 2 and "SECRET" not in r.stderr, r.stderr
    assert r.stderr.count("a symbolic link leading outside the tree, so its config.toml is not read") == 1, r.stderr


def test_a_folder_overview_shows_a_name_with_a_newline_on_one_line(tmp_path):
    root = make_tree(tmp_path / "t", {"new\nline.txt": "needle\n", "a.md": "# A\n\nalpha\n"})
    assert ov(root, "index", "--no-embed", ".").returncode == 0
    r = ov(root, "read", ".", "--level", "1")
    assert r.returncode == 0 and "new\\x0aline.txt" in r.stdout, r.stdout
    assert not any(line.startswith("line.txt") for line in r.stdout.splitlines())


def test_a_view_spelled_in_capitals_is_refused_too(indexed):
    """A view stored with type `VIEW` (writable_schema) still runs: anything in the schema
    but tables and indexes is refused."""
    import sqlite3

    conn = sqlite3.connect(indexed / ".ov" / "index.db")
    conn.executescript("ALTER TABLE meta RENAME TO meta_real; CREATE VIEW meta AS SELECT key, value FROM meta_real "
                       "UNION ALL SELECT 'zz' || x, x FROM (WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
                       "SELECT x + 1 FROM r) SELECT x FROM r); PRAGMA writable_schema=ON; "
                       "UPDATE sqlite_master SET type = 'VIEW' WHERE name = 'meta';")
    conn.close()
    r = ov(indexed, "status")
    assert r.returncode == 2 and "ov never makes" in r.stderr, r.stderr
    assert ov(indexed, "grep", "-l", "hello").returncode == 0


def test_ignore_lines_of_many_globstars_are_skipped_and_plain_ones_kept(tmp_path):
    """`**/a/**/a/**/a/**/a/**/b` over 70 nested `a/` folders hung grep (every way to cut
    the path among the `**`); such a line is skipped. Lines with a few `*` in each part of
    the path (`a*/b*/c*/d*`) are kept, as git keeps them."""
    from ov.walk import _compile_line

    assert _compile_line("**/a/**/a/**/a/**/a/**/b") is None
    for line in ("a*/b*/c*/d*", "*_*/*_*", "**/a/**/b", "*a*a*a*a*b"):
        assert _compile_line(line) is not None, line
    deep = tmp_path / "t"
    make_tree(deep, {".gitignore": "**/a/**/a/**/a/**/a/**/b\nx*/y*/z*/w*\n", "x1/y1/z1/w1/f.txt": "needle\n",
                     "/".join(["a"] * 70) + "/c.txt": "needle\n"})
    r = ov(deep, "grep", "-l", "needle")
    assert r.returncode == 0 and r.stdout.split() == ["/".join(["a"] * 70) + "/c.txt"], r.stderr


def test_a_planted_cache_is_never_unmarshalled(indexed):
    """Five crafted bytes of marshal data took 16 GB to decode: ov's caches start with
    their folder's device and inode, which a committed file cannot know, so a planted one
    is not decoded at all."""
    from ov.config import WalkOptions
    from ov.walk import cache_name

    bomb = b"[\xff\xff\xff\x7f"  # a list of 2**31 - 1 items
    for name in ("states.cache", cache_name(WalkOptions(max_filesize=None))):
        (indexed / ".ov" / name).unlink(missing_ok=True)
        (indexed / ".ov" / name).write_bytes(bomb)
    t0 = time.monotonic()
    r = ov(indexed, "grep", "-l", "hello")
    assert r.returncode == 0 and r.stdout.split() == ["a.txt", "doc.md"] and time.monotonic() - t0 < 10


def test_python_m_ov_imports_nothing_from_the_tree(indexed):
    """`python -m ov` puts the current folder first on sys.path: a tree's `json.py` or
    `subprocess.py` was imported in place of the standard library's, and ran (a traceback
    and exit 1 for `status`, `internal` for `search`). The folder is dropped at start."""
    for name in ("json", "subprocess", "typer", "sqlite3"):
        (indexed / f"{name}.py").write_text("import sys\nsys.stderr.write('PLANTED RAN\\n')\nraise SystemExit(7)\n")
    for args in (("status", "-o", "json"), ("search", "hello", "-o", "json"), ("grep", "hello", "-o", "json"),
                 ("glob", "*.txt", "-o", "json"), ("index", "--no-embed", ".")):
        r = ov(indexed, *args)
        assert "PLANTED RAN" not in r.stderr and r.returncode == 0, (args, r.stderr)
        if "json" in args:
            assert json.loads(r.stdout)["status"] == "ok"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the planted .ov/ to another user")
def test_an_index_above_that_another_user_owns_is_passed_over(tmp_path):
    """Another user's `.ov/` in a folder above (a review planted one in a world-writable
    parent, with a config hiding the checkout): `ov search` in the checkout listed the
    other user's `../planted.txt`, and `ov grep -q deploy` exited 1 on a file holding it.
    As git ignores a `.git` another user owns, that index and its config are passed over,
    said once on stderr, and the checkout gets an index of its own."""
    up = make_tree(tmp_path / "up", {"planted.txt": "attacker doc mentions deploy\n"})
    assert ov(up, "index", "--no-embed", ".").returncode == 0
    (up / ".ov" / "config.toml").write_text('ignore = ["*.sh"]\n')
    for p in (up / ".ov", *(up / ".ov").iterdir(), up / "planted.txt"):
        os.lchown(p, 65534, 65534)
    os.chmod(up / ".ov", 0o777)
    mine = make_tree(up / "mine", {"deploy.sh": "deploy script here\n"})
    r = ov(mine, "search", "deploy", "--search-type", "keywords", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert [h["path"] for h in json.loads(r.stdout)["result"]["hits"]] == ["deploy.sh"]
    assert r.stderr.count("owned by another user (uid 65534): not used, as git ignores") == 1
    assert (mine / ".ov" / "index.db").is_file()
    assert ov(mine, "grep", "-q", "deploy").returncode == 0
    assert ov(mine, "index", "--stop", str(up)).returncode == 0  # (it had left worker.paused there)
    # the other user's folder holds what it held: nothing of this user's was written there
    assert sorted(p.name for p in (up / ".ov").iterdir() if not p.name.startswith("index.db")) \
        == [".gitignore", "config.toml"]
    # a search from the folder holding that index is refused, not built into the other's folder
    r = ov(up, "search", "deploy", "-o", "json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "invalid_path"
    assert ov(up, "grep", "-l", "deploy").stdout.split() == ["mine/deploy.sh", "planted.txt"]
    # named with --db, it is the user's choice
    r = ov(mine, "search", "attacker", "--search-type", "keywords", "--db", str(up / ".ov" / "index.db"))
    assert r.returncode == 0 and "planted.txt" in r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant files as another user")
def test_files_planted_above_by_another_user_neither_hide_nor_stop_the_checkout(tmp_path):
    """A review planted, in a shared folder above a checkout, a `.git` and a `pyproject.toml`
    whose `[tool.ov] ignore` hid the checkout's files (grep: "no files were searched"), and
    an `.ov/config.toml` that is not TOML, which stopped every command. Another user's
    `.git` is no search root (git refuses it too), and a config is asked whose it is
    before it is read. OV_SAFE_DIRECTORIES trusts them, as git's safe.directory."""
    shared = tmp_path / "common"  # a folder every user writes in (as /tmp)
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o1777)
    (shared / ".git").mkdir()
    (shared / "pyproject.toml").write_text('[tool.ov]\nignore = ["*.txt"]\n')
    (shared / ".gitignore").write_text("*.txt\n")  # (that work tree's ignore files are not this tree's)
    (shared / ".ov").mkdir()
    (shared / ".ov" / "config.toml").write_text("this is = = not toml\n")
    for p in (shared / ".git", shared / "pyproject.toml", shared / ".gitignore", shared / ".ov",
              shared / ".ov" / "config.toml"):
        os.lchown(p, 65534, 65534)
    mine = make_tree(shared / "mine", {"v.txt": "victim SECRETWORD\n"})
    for args in (["grep", "SECRETWORD"], ["glob", "*.txt"]):
        r = ov(mine, *args)
        assert r.returncode == 0 and "v.txt" in r.stdout and "Traceback" not in r.stderr, (args, r)
    safe = subprocess.run([sys.executable, "-m", "ov", "grep", "-c", "SECRETWORD", "."], cwd=mine, capture_output=True,
                          text=True, timeout=LIMIT_S, env={**ENV, "OV_SAFE_DIRECTORIES": str(shared)})
    assert safe.returncode == 2 and "not valid TOML" in safe.stderr  # trusted: read, and refused as it is
    (shared / ".ov" / "config.toml").unlink()
    for listed in (str(shared), f"/nowhere::{shared}/"):
        safe = subprocess.run([sys.executable, "-m", "ov", "grep", "-c", "SECRETWORD", "."], cwd=mine,
                              capture_output=True, text=True, timeout=LIMIT_S, env={**ENV, "OV_SAFE_DIRECTORIES": listed})
        assert safe.returncode == 2 and "no files were searched" in safe.stderr, listed  # its .gitignore applies
    rel = subprocess.run([sys.executable, "-m", "ov", "grep", "-c", "SECRETWORD", "."], cwd=mine, capture_output=True,
                         text=True, timeout=LIMIT_S, env={**ENV, "OV_SAFE_DIRECTORIES": ".."})
    assert rel.returncode == 0, rel.stderr  # a relative entry trusts nothing (as git's, absolute only)


def test_untrusted_reads_the_owner_of_the_index_folder_and_file(tmp_path, monkeypatch):
    from ov.config import untrusted

    db = tmp_path / ".ov" / "index.db"
    assert untrusted(db) is None  # nothing there
    db.parent.mkdir(mode=0o700)
    db.write_bytes(b"")
    assert untrusted(db) is None
    os.chmod(db.parent, 0o777)
    assert "a folder every user may write in" in untrusted(db)
    os.chmod(db.parent, 0o1777)  # sticky, as /tmp: others cannot replace what is there
    assert untrusted(db) is None
    os.chmod(db.parent, 0o700)
    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 4242)
    assert untrusted(db) == (None if me == 0 else f"{db.parent} is owned by another user (uid {me})")
    monkeypatch.setattr(os, "geteuid", lambda: me + 4242)
    if me == 0:  # (root owns it: trusted whoever asks; another owner is tested by the test above)
        os.lchown(db.parent, 4241, 4241)
        assert untrusted(db) == f"{db.parent} is owned by another user (uid 4241)"
    monkeypatch.setenv("OV_SAFE_DIRECTORIES", f"/nowhere:{tmp_path}")  # git's safe.directory
    assert untrusted(db) is None
    monkeypatch.setenv("OV_SAFE_DIRECTORIES", "*")
    assert untrusted(db) is None
    (tmp_path.parent / f"{tmp_path.name}-link").symlink_to(tmp_path)
    monkeypatch.setenv("OV_SAFE_DIRECTORIES", f"{tmp_path}-link")  # a link to the tree names it
    assert untrusted(db) is None
    monkeypatch.delenv("OV_SAFE_DIRECTORIES")
    from ov.config import _trusted

    assert _trusted(db.parent / "config.toml")  # none there: nothing to say (an index named by --db)
    if me != 0:
        monkeypatch.setattr(os, "geteuid", lambda: 0)  # root under sudo: the invoking user's is theirs
        monkeypatch.setenv("SUDO_UID", str(me + 1))
        assert "owned by another user" in untrusted(db)
        monkeypatch.setenv("SUDO_UID", str(me))
        assert untrusted(db) is None


def test_stop_writes_nothing_through_an_ov_folder_that_links_out(tmp_path):
    """`ov index --stop` in a clone whose `.ov` links to another folder had replaced that
    folder's `worker.paused` with its empty mark: it now refuses the link, as every other
    command does, and a cache write beside an index never follows a `.ov` that is one."""
    from ov.walk import write_private

    victim = make_tree(tmp_path / "victim", {"worker.paused": "precious\n"})
    root = make_tree(tmp_path / "clone", {"a.txt": "hello\n"})
    (root / ".ov").symlink_to(victim)
    r = ov(root, "index", "--stop")
    assert r.returncode == 2 and "error[invalid_path]" in r.stderr, r.stderr
    assert (victim / "worker.paused").read_text() == "precious\n"
    assert not write_private(str(root / ".ov" / "worker.paused"), b"")
    assert not write_private(str(root / ".ov" / "new.cache"), b"x")
    assert sorted(p.name for p in victim.iterdir()) == ["worker.paused"]
    assert (victim / "worker.paused").read_text() == "precious\n"


def test_the_lock_probe_opens_no_link(tmp_path, indexed):
    """Whether an indexer holds the index is asked by taking its lock for an instant: a
    planted `.ov/index.db.lock` linked out had been opened for writing and locked where it
    led. A link is not opened, so a lock held on its target says nothing of this index."""
    import fcntl

    from ov.indexer import lock_held

    outside = tmp_path / "outside.lock"
    outside.write_text("")
    lock = indexed / ".ov" / "index.db.lock"
    if lock.exists():
        lock.unlink()
    lock.symlink_to(outside)
    fd = os.open(outside, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert not lock_held(indexed / ".ov" / "index.db")
    finally:
        os.close(fd)


@pytest.mark.parametrize("key, value", [("tri_upto", "x"), ("tri_kept", "x"), ("schema_version", "x"),
                                        ("skipped_files", '{"total": 1, "files": [["a", "b", "c"]]}')])
def test_a_planted_meta_value_is_a_damaged_index_not_an_internal_error(indexed, key, value):
    """A review set ov's own meta values to junk in a committed index: every command, grep
    too, ended in `internal` (ValueError). They are a damaged index now: grep reads the
    files instead, the rest say so with the repair advice, and `ov index --full` rebuilds."""
    import sqlite3

    conn = sqlite3.connect(indexed / ".ov" / "index.db")
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
    conn.commit()
    conn.close()
    r = ov(indexed, "grep", "-l", "hello")
    assert r.returncode == 0 and r.stdout.split() == ["a.txt", "doc.md"], r.stderr
    commands = [("status",), ("search", "hello", "--search-type", "keywords")]
    commands += [("index", "--no-embed", ".")] if key != "schema_version" else []
    for args in commands:
        r = ov(indexed, *args)
        assert "internal" not in r.stderr, (args, r.stderr)
        if r.returncode != 0:  # (an index that never reads the key answers)
            assert r.returncode == 2 and "is damaged" in r.stderr, (args, r.stderr)
    assert ov(indexed, "index", "--full", "--no-embed", ".").returncode == 0
    assert ov(indexed, "status").returncode == 0


def test_a_planted_worker_pid_past_any_number_is_no_worker(indexed):
    """A committed `.ov/index.db.worker` naming pid 1e400 (JSON for infinity) had ended
    status, search, index and `index --stop` in `internal` (OverflowError)."""
    (indexed / ".ov" / "index.db.worker").write_text('{"pid": 1e400, "phase": "starting", "started": 0}')
    for args in (("status",), ("search", "hello", "--search-type", "keywords"), ("index", "--stop"),
                 ("index", "--no-embed", ".")):
        r = ov(indexed, *args)
        assert r.returncode == 0 and "internal" not in r.stderr, (args, r.stderr)


def test_a_thousand_nested_folders_are_walked_once_indexed(tmp_path):
    """A chain of 1,100 folders (a path of 2.2 KB, which git and Linux take) had raised
    RecursionError in grep, glob, status and search once the tree was indexed: the walk's
    cached listing was flattened by recursion."""
    root = make_tree(tmp_path / "clone", {"top.txt": "needle top\n"})
    chain = "/".join(["d"] * 1100)
    subprocess.run(["mkdir", "-p", chain], cwd=root, check=True)  # (relative: the whole path is long)
    try:
        subprocess.run(["sh", "-c", f"echo 'needle deep' > {chain}/f.txt"], cwd=root, check=True)
        assert ov(root, "index", "--no-embed", ".").returncode == 0
        r = ov(root, "grep", "-l", "needle")
        assert r.returncode == 0 and r.stdout.split() == [chain + "/f.txt", "top.txt"], r.stderr
        r = ov(root, "glob", "**/f.txt")
        assert r.returncode == 0 and r.stdout.strip().endswith("/f.txt"), r.stderr
        assert ov(root, "status").returncode == 0
    finally:  # (pytest's own clean-up of old temporary folders recurses, and would fail on it)
        subprocess.run(["rm", "-rf", "d"], cwd=root, check=False)


def test_a_raw_c1_byte_in_a_name_is_shown_escaped(tmp_path):
    """A name holding the raw byte 0x9B (not UTF-8; a terminal may read it as CSI, the
    8-bit form of ESC [) was printed as it was by grep, grep -l and glob, where ESC and
    the UTF-8 U+009B were escaped. It is shown as `\\x9b`, the byte it was."""
    root = make_tree(tmp_path / "clone", {"plain.txt": "needle\n"})
    name = os.fsencode(root) + b"/raw\x9b31mRED.txt"
    with open(name, "wb") as f:
        f.write(b"needle\n")
    for args in (("grep", "needle"), ("grep", "-l", "needle"), ("glob", "*")):
        r = subprocess.run([sys.executable, "-m", "ov", *args], cwd=root, env=ENV, capture_output=True, timeout=LIMIT_S)
        assert r.returncode == 0, r.stderr
        assert b"\x9b" not in r.stdout and b"raw\\x9b31mRED.txt" in r.stdout, (args, r.stdout)


@pytest.mark.parametrize("name, args", [("index.db", ("search", "hello")), ("index.db", ("status",)),
                                        ("index.db.rebuild", ("index", "--no-embed", ".")),
                                        ("index.db-journal", ("search", "hello", "--search-type", "keywords")),
                                        ("index.db-journal", ("find", "hello"))])
def test_an_index_file_that_is_a_fifo_is_refused_not_waited_on(indexed, name, args):
    """A fifo in place of `.ov/index.db` (a tar or zip can carry one) had blocked SQLite's
    open in `ov search` for good, and one as `.ov/index.db.rebuild` `ov index`, Ctrl-C
    ignored. Both are refused (invalid_path); grep reads the files."""
    path = indexed / ".ov" / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    r = ov(indexed, *args, timeout=10)
    said = "error[invalid_path]" in r.stderr and "not a regular file" in r.stderr
    if name == "index.db-journal":  # (find: an index without vectors says so first, or the fifo)
        said = "error[" in r.stderr and "internal" not in r.stderr
    assert r.returncode == 2 and (said or args == ("status",) and "error[not_found]" in r.stderr), r.stderr
    r = ov(indexed, "grep", "-l", "hello", timeout=10)
    assert r.returncode == 0 and r.stdout.split() == ["a.txt", "doc.md"], r.stderr


def test_a_pattern_that_runs_out_of_memory_is_cut_like_one_that_runs_out_of_time(tmp_path, monkeypatch):
    """`(a|b)*needle` over a 10 MB line ran the regex module's backtracking out of memory
    (665 MB), and grep ended in `internal` (MemoryError). It is cut as a pattern past its
    time limit is: `deadline_exceeded`, naming the file and the way out. (The regex is
    made to raise here: the real one needs most of a gigabyte.)"""
    from ov.search import matcher

    p = matcher.compile_pattern("(a|b)*needle")

    class Exhausted:
        def __getattr__(self, name):
            def run(*a, **k):
                raise MemoryError
            return run

    import dataclasses

    p = dataclasses.replace(p, rx=Exhausted())
    with pytest.raises(matcher.OvError) as e:
        list(matcher.spans(p, "ab" * 10 + "needle\n"))
    assert e.value.code == "deadline_exceeded" and "out of memory" in e.value.message


def test_embed_skip_globs_are_matched_once_compiled_as_fnmatch_matches_them():
    """`embed-skip` is read as one compiled pattern (a tree's ~92,000 globs had cost 3-4 s
    a file as fnmatch's cache turned over): it answers as fnmatchcase does, glob by glob,
    on the file's name and on its path."""
    import fnmatch

    from ov.indexer import IndexOptions, embeddable

    globs = ("*.min.*", "go.sum", "vendor/*.js", "[ab]?.txt", "*.LOCK", "x[!0-9]y")
    paths = ["a.min.js", "src/go.sum", "vendor/x.js", "vendor/sub/x.js", "ab.txt", "c1.txt", "Cargo.lock",
             "Z.LOCK", "xay", "x1y", "deep/a1.txt", "plain.py"]
    opts = IndexOptions(embed_skip=globs)
    for p in paths:
        name = p.rsplit("/", 1)[-1]
        want = not any(fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(p, g) for g in globs)
        assert embeddable(p, "text\n", opts) == want, p


def test_a_journal_socket_that_is_a_link_is_not_connected_to(tmp_path, indexed):
    """A committed `.ov/journal.sock` linked to another program's socket had been connected
    to, and sent the journal's question, by every grep. Only a socket of this user's, not
    a link, is asked."""
    import socket
    import threading

    from ov.journal import _reply, socket_path

    target = tmp_path / "other.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(target))
    srv.listen(1)
    srv.settimeout(3)
    heard = []

    def serve():
        try:
            conn, _ = srv.accept()
            heard.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=serve)
    t.start()
    db = indexed / ".ov" / "index.db"
    Path(socket_path(db)).symlink_to(target)
    try:
        assert _reply(db, indexed) is None
    finally:
        srv.close()
        t.join()
    assert heard == []


@pytest.mark.parametrize("sql", ["UPDATE files SET size = 'x'", "UPDATE files SET tags = 'x'",
                                 "UPDATE chunks SET start = 1.5", "UPDATE chunks SET text = NULL",
                                 "UPDATE chunks SET text = X'6869' WHERE level = 2",
                                 "UPDATE files SET path = CAST(path AS BLOB)"])
def test_a_planted_value_of_the_wrong_type_is_a_damaged_index(indexed, sql):
    """SQLite keeps any value in any column: a committed index's `files.size = 'x'`, a
    file's tags that are not JSON or a passage's text NULL had ended a search in
    `internal` (TypeError, JSONDecodeError, AttributeError)."""
    import sqlite3

    conn = sqlite3.connect(indexed / ".ov" / "index.db")
    conn.execute(sql)
    conn.commit()
    conn.close()
    r = ov(indexed, "search", "hello", "--search-type", "keywords")
    assert r.returncode == 2 and "is damaged" in r.stderr and "internal" not in r.stderr, r.stderr
    assert ov(indexed, "index", "--full", "--no-embed", ".").returncode == 0
    assert ov(indexed, "search", "hello", "--search-type", "keywords").returncode == 0
