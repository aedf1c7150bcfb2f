"""Security (issue 7): nothing outside the index root is read or listed; the index is
owner-only; no shell ever sees user text; a traceback only with OV_DEBUG=1.

The tree sits next to an `outside/` folder holding a marker string. Links lead out of
the tree every way a link can (a file, a folder, relative, absolute, a chain through a
link inside the root); every command, with and without --follow, is asked for the marker
or pointed at those paths, and the marker must appear in no output and in no byte of the
index.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, make_tree, run_inprocess

MARK = "zqxsecretmarker"
ENV = {"OV_EMBEDDER": "hash"}


@pytest.fixture
def fenced(tmp_path) -> Path:
    """tmp/outside/{secret.txt, dir/inner.txt} and tmp/tree with links leading there."""
    make_tree(tmp_path / "outside", {"secret.txt": f"{MARK} outside file\n",
                                     "dir/inner.txt": f"{MARK} outside folder\n"})
    root = make_tree(tmp_path / "tree", {"a.txt": "inside text\n", "sub/b.py": "x = 1\n"})
    outside = tmp_path / "outside"
    (root / "abs_file").symlink_to(outside / "secret.txt")
    (root / "abs_dir").symlink_to(outside / "dir")
    (root / "rel_file").symlink_to("../outside/secret.txt")
    (root / "sub" / "rel_dir").symlink_to("../../outside/dir")
    (root / "hop").symlink_to("abs_file")  # inside link -> link leading out
    (root / "inside_link").symlink_to("a.txt")  # a link that stays inside: fine to follow
    return root


def _index_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((root / ".ov").glob("index.db*")) if p.is_file())


@pytest.mark.parametrize("follow", [False, True], ids=["no-follow", "follow"])
def test_links_out_of_the_root_are_never_indexed(fenced, follow):
    r = run_inprocess(["index", ".", *(["--follow"] if follow else [])], cwd=fenced, env=ENV)
    assert r.code == 0, r.err
    assert MARK.encode() not in _index_bytes(fenced)
    files = {f["path"] for f in run_inprocess("read", ".", "--level", "2", "-o", "json", cwd=fenced,
                                                env=ENV).json["result"]["text"].splitlines()
             for f in [{"path": f}]}
    assert files >= {"a.txt", "sub/b.py"}
    assert not files & {"abs_file", "rel_file", "hop", "abs_dir/inner.txt", "sub/rel_dir/inner.txt"}
    if follow:
        assert "inside_link" in files  # following works; only the way out is closed
    for args in (["search", MARK, "--search-type", "keywords"], ["search", MARK], ["find", MARK],
                 ["search", MARK, "--mode", "context"], ["search", "outside", "--read-content"]):
        r = run_inprocess([*args, "-o", "json"], cwd=fenced, env=ENV)
        assert r.code in (0, 1), r.out
        assert MARK not in r.out and MARK not in r.err


def test_grep_and_glob_never_read_or_list_through_a_link_out(fenced):
    r = run_inprocess("grep", MARK, cwd=fenced, env=ENV)
    assert r.code == 1 and MARK not in r.out
    for path in ("abs_file", "rel_file", "hop", "abs_dir", "sub/rel_dir", "abs_dir/inner.txt"):
        r = run_inprocess("grep", "-o", "json", MARK, path, cwd=fenced, env=ENV)
        assert MARK not in r.out and MARK not in r.err, path
        assert r.code in (1, 2), (path, r.out)
        r = run_inprocess("glob", "-o", "json", "**", path, cwd=fenced, env=ENV)
        if r.json["status"] == "error":  # an error may quote the PATH given, nothing below it
            assert r.code == 2 and "secret" not in r.out, (path, r.out)
        else:  # nothing listed through it (a warning names the link's own target, as grep's)
            listed = json.dumps(r.json["result"]["matches"])
            assert "inner.txt" not in listed and "secret" not in listed, (path, r.out)
    r = run_inprocess("glob", "-o", "json", "**", "--node-limit", "1000", cwd=fenced, env=ENV)
    listed = [m if isinstance(m, str) else m["path"] for m in r.json["result"]["matches"]]
    assert "a.txt" in listed
    assert not [p for p in listed if p.startswith(("abs_dir/", "sub/rel_dir/"))], listed
    for pat in ("../*", "../outside/*", "/etc/*", str(fenced.parent / "outside" / "*")):
        r = run_inprocess("glob", "-o", "json", pat, cwd=fenced, env=ENV)
        assert "secret" not in r.out and "passwd" not in r.out, (pat, r.out)


def test_a_named_link_leading_out_is_not_followed_and_says_so(fenced):
    """rg searches the target of a link named on its command line; ov never follows a
    link out of the tree, and says so rather than answering nothing without a word."""
    for path in ("abs_file", "rel_file", "hop"):
        # (exit 2, as for what could not be read: a CI check must not pass on it)
        r = run_inprocess("grep", "-o", "json", "-c", "outside", path, cwd=fenced, env=ENV)
        assert r.code == 2 and r.json["result"]["counts"] == {}, (path, r.out)
        assert [w for w in r.json["result"]["warnings"] if w.startswith(f"{path}: a symbolic link leading "
                                                                        "outside the tree")], r.out
    r = run_inprocess("grep", "-o", "json", "inside", "inside_link", cwd=fenced, env=ENV)
    assert r.code == 0 and r.json["result"]["warnings"] == [], r.out
    # `grep --files` and `glob` name such a PATH too: they said nothing, and listed nothing
    # (glob exited 1, "nothing matched", where grep exits 2: a review on the Go tree)
    for args in (["grep", "--files", "abs_dir"], ["grep", "--files", "rel_file"], ["glob", "*", "abs_dir"],
                 ["glob", "**", "sub/rel_dir"]):
        r = run_inprocess(*args, "-o", "json", cwd=fenced, env=ENV)
        assert r.code == 2 and r.json["result"]["matches"] == [], (args, r.out)
        assert [w for w in r.json["result"]["warnings"] if w.startswith(f"{args[-1]}: a symbolic link leading "
                                                                        "outside the tree")], (args, r.out)
    # a path that goes through such a link (abs_dir/inner.txt) is said too
    for args in (["grep", "outside", "abs_dir/inner.txt"], ["glob", "*", "sub/rel_dir/inner.txt"]):
        r = run_inprocess(*args, "-o", "json", cwd=fenced, env=ENV)
        assert r.code == 2 and r.json["result"]["matches"] == [], (args, r.out)
        assert [w for w in r.json["result"]["warnings"] if "a symbolic link leading outside" in w], (args, r.out)
    for args in (["grep", "--files", "inside_link"], ["glob", "*", "sub"]):
        r = run_inprocess(*args, "-o", "json", cwd=fenced, env=ENV)
        assert r.code == 0 and r.json["result"]["warnings"] == [], (args, r.out)


def test_read_and_scopes_say_a_link_is_not_followed(fenced):
    """`ov read LINK` and `-u LINK` told the user the file was "new since the last `ov index`"
    and to run it, which would never index it: they now say it is a link, and where a
    link leading out goes (grep's own warning names that target too)."""
    assert run_inprocess("index", ".", cwd=fenced, env=ENV).code == 0
    (fenced / "broken").symlink_to("no/such/file")
    r = run_inprocess("read", "broken", "-o", "json", cwd=fenced, env=ENV)
    assert r.code == 2 and r.json["error"]["message"].endswith(": a broken symbolic link (to 'no/such/file')"), r.out
    # a link leading out of the tree escapes the root: `invalid_path`, as `-u /etc` (it was
    # `not_found`, and `-u LINK` "no results" with a warning: a review on the Go tree)
    for path in ("abs_file", "rel_file", "hop", "abs_dir/inner.txt", "abs_dir", "sub/rel_dir"):
        r = run_inprocess("read", path, "-o", "json", cwd=fenced, env=ENV)
        err = r.json["error"]
        assert r.code == 2 and err["code"] == "invalid_path" and err["field"] == "path", err
        assert "a symbolic link leading outside the tree, which ov never follows" in err["message"], err
        assert "new since" not in err["message"] and MARK not in r.out, err
    r = run_inprocess("read", "inside_link", "-o", "json", cwd=fenced, env=ENV)
    msg = r.json["error"]["message"]
    assert r.code == 2 and "a symbolic link, which `ov index` does not follow" in msg and "'a.txt'" in msg, msg
    for path in ("abs_file", "abs_dir", "sub/rel_dir", "abs_dir/inner.txt"):
        r = run_inprocess("search", "outside", "-u", path, "--search-type", "keywords", "-o", "json",
                          cwd=fenced, env=ENV)
        err = r.json["error"]
        assert r.code == 2 and err["code"] == "invalid_path" and err["field"] == "uri" and MARK not in r.out, r.out
        assert err["message"].startswith(f"{path}: a symbolic link leading outside the tree"), err
    r = run_inprocess("search", "inside", "-u", "a.txt", "--search-type", "keywords", "-o", "json",
                      cwd=fenced, env=ENV)
    assert r.code == 0 and r.json["result"]["warnings"] == [], r.out


def test_dotdot_and_absolute_scopes_are_refused_by_every_command(fenced):
    assert run_inprocess("index", ".", cwd=fenced, env=ENV).code == 0
    out = fenced.parent / "outside"
    for bad in ("..", "../outside/secret.txt", "sub/../../outside", str(out), str(out / "secret.txt"),
                "/etc/passwd"):
        for args in (["search", "x", "-u", bad], ["find", "x", "-u", bad],
                     ["search", "x", "--exclude-uri", bad],
                     ["search", "x", "--mode", "context", "--exclude-uri", bad],
                     ["read", bad], ["tag", bad, "k=v"], ["grep", "x", "--exclude-uri", bad]):
            # (grep and glob search a PATH the user names outside the index as its own
            # root, as rg and fd do: tests/test_grep_shell.py)
            r = run_inprocess([*args, "-o", "json"], cwd=fenced, env=ENV)
            assert r.code == 2, (args, r.out)
            assert r.json["error"]["code"] == "invalid_path", (args, r.json)
            assert MARK not in r.out and "root:x:" not in r.out


def test_grep_and_glob_search_an_outside_folder_as_its_own_root_only_when_named(fenced):
    # issue 18: any folder on disk can be searched when named; nothing outside is ever
    # reached through the tree itself (links, `..` in patterns: the tests above)
    assert run_inprocess("index", ".", cwd=fenced, env=ENV).code == 0
    out = fenced.parent / "outside"
    r = run_inprocess("grep", "-o", "json", MARK, str(out), cwd=fenced, env=ENV)
    assert r.code == 0 and r.json["result"]["root"] == str(out)
    # named absolute, shown absolute (as rg); named relative, relative
    assert r.json["result"]["matches"] and all(m["path"].startswith(f"{out}/") for m in r.json["result"]["matches"])
    r = run_inprocess("grep", "-o", "json", MARK, "../outside", cwd=fenced, env=ENV)
    assert r.json["result"]["matches"] and all(m["path"].startswith("../outside/") for m in r.json["result"]["matches"])
    r = run_inprocess("grep", "-o", "json", MARK, "/no/such/folder", cwd=fenced, env=ENV)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"


def test_mcp_grep_and_glob_refuse_paths_outside_the_served_tree(fenced):
    # `ov mcp` serves one tree: where the command line searches a folder named outside it
    # as its own root (the test above), the server's grep and glob refuse such a path,
    # however it leads out (absolute, climbing, a link), and search what lies inside
    from ov import api
    from ov.mcp import Tools

    assert run_inprocess("index", ".", cwd=fenced, env=ENV).code == 0
    out = fenced.parent / "outside"
    with api.Index.open(fenced) as ix:
        tools = Tools(ix)
        for bad in ("/etc/passwd", "/etc", "..", "../outside", "sub/../../outside", str(out),
                    str(out / "secret.txt"), "abs_file", "abs_dir", "rel_file", "sub/rel_dir", "hop",
                    "abs_dir/inner.txt"):
            for tool, args, field in (
                    ("grep", {"pattern": f"{MARK}|root", "paths": ["a.txt", bad]}, "paths"),
                    ("grep", {"pattern": MARK, "paths": [bad], "files_with_matches": True}, "paths"),
                    ("glob", {"pattern": "*", "path": bad}, "path"),
                    ("glob", {"pattern": "**", "path": bad, "fields": "path,size"}, "path")):
                env = tools.call(tool, args)
                assert env["status"] == "error", (tool, bad, env)
                assert (env["error"]["code"], env["error"]["field"]) == ("invalid_path", field), (tool, bad)
                assert MARK not in json.dumps(env) and "root:x:" not in json.dumps(env)
        inside = [tools.call("grep", {"pattern": "inside", "paths": [p]})["result"]["matches"]
                  for p in ("inside_link", str(fenced / "a.txt"), "sub/..")]
        assert [[m["path"] for m in ms] for ms in inside] == [["inside_link"], ["a.txt"], ["a.txt"]]
        listed = tools.call("glob", {"pattern": "*", "path": "sub"})["result"]["matches"]
        assert listed == ["sub/b.py", "sub/rel_dir"]  # a link's name, never what it leads to


def test_index_folder_and_files_are_owner_only_whatever_the_umask(tmp_path):
    root = make_tree(tmp_path / "t", {"a.txt": "hello\n"})
    env = dict(os.environ, **ENV)
    p = subprocess.run([sys.executable, "-m", "ov", "index", "."], cwd=root, env=env,
                       capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.umask(0))
    assert p.returncode == 0, p.stderr
    ov_dir = root / ".ov"
    assert stat.S_IMODE(ov_dir.stat().st_mode) == 0o700
    # the database, its WAL and shared memory, the lock: whatever of them exists now
    dbs = [q for q in ov_dir.iterdir() if q.name.startswith("index.db")]
    assert root / ".ov" / "index.db" in dbs
    # keep the WAL around for the check: a reader holding the database open
    p = subprocess.run([sys.executable, "-m", "ov", "status"], cwd=root, env=env, capture_output=True,
                       timeout=120, preexec_fn=lambda: os.umask(0))
    assert p.returncode == 0
    for q in ov_dir.iterdir():
        if q.name.startswith("index.db"):
            assert stat.S_IMODE(q.stat().st_mode) == 0o600, (q.name, oct(q.stat().st_mode))


# ---- no shell ------------------------------------------------------------------------------

_SHELL_CALLS = {("os", "system"), ("os", "popen"), ("os", "execl"), ("os", "execlp"), ("os", "execv"),
                ("os", "execvp"), ("os", "spawnl"), ("os", "spawnlp"), ("os", "spawnv"),
                ("os", "spawnvp"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
                ("asyncio", "create_subprocess_shell"), ("pty", "spawn")}


def test_no_shell_is_ever_invoked_from_the_package():
    found = []
    sources = sorted((REPO / "ov").rglob("*.py"))
    assert len(sources) > 10
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and (f.value.id, f.attr) in _SHELL_CALLS:
                found.append(f"{path.name}:{node.lineno} {f.value.id}.{f.attr}")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    found.append(f"{path.name}:{node.lineno} shell=")
        text = path.read_text(encoding="utf-8")
        for needle in ("os.system(", "shell=True", "from os import system", "commands.getoutput"):
            if needle in text:
                found.append(f"{path.name}: {needle}")
    assert found == []


def test_the_shell_scan_is_not_blind(tmp_path):
    src = "import os, subprocess\nos.system('x')\nsubprocess.run('x', shell=True)\n"
    tree = ast.parse(src)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert any(isinstance(c.func, ast.Attribute) and (c.func.value.id, c.func.attr) in _SHELL_CALLS
               for c in calls)
    assert any(kw.arg == "shell" for c in calls for kw in c.keywords)


# ---- tracebacks only on request --------------------------------------------------------------


def _boom(*a, **k):
    raise RuntimeError("boom from the engine")


@pytest.fixture
def broken_status(monkeypatch, tmp_path):
    root = make_tree(tmp_path / "t", {"a.txt": "hello\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    import ov.engine

    monkeypatch.setattr(ov.engine, "status", _boom)
    return root


@pytest.mark.parametrize("value", [None, "", "0"])
def test_an_internal_error_is_one_line_without_debug(broken_status, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("OV_DEBUG", raising=False)
    else:
        monkeypatch.setenv("OV_DEBUG", value)
    r = run_inprocess("status", cwd=broken_status)
    assert r.code == 2
    assert r.out == ""
    assert "Traceback" not in r.err
    assert r.err.splitlines() == [
        "ov: error[internal]: RuntimeError: boom from the engine (set OV_DEBUG=1 for the traceback)"]
    r = run_inprocess("status", "-o", "json", cwd=broken_status)
    assert r.code == 2 and r.err == ""
    assert r.json["error"]["code"] == "internal"


def test_ov_debug_shows_the_traceback(broken_status, monkeypatch):
    monkeypatch.setenv("OV_DEBUG", "1")
    r = run_inprocess("status", cwd=broken_status)
    assert r.code == 2
    assert "Traceback (most recent call last)" in r.err
    assert "_boom" in r.err and "RuntimeError: boom from the engine" in r.err
    assert r.err.splitlines()[-1].startswith("ov: error[internal]: RuntimeError: boom")
    r = run_inprocess("status", "-o", "json", cwd=broken_status)
    assert "Traceback" in r.err
    assert json.loads(r.out)["error"]["code"] == "internal"  # stdout stays clean JSON


def test_no_traceback_from_a_real_process_either(tmp_path):
    root = make_tree(tmp_path / "t", {"a.txt": "hello\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    code = ("import ov.engine, sys\n"
            "def boom(*a, **k): raise RuntimeError('boom')\n"
            "ov.engine.status = boom\n"
            "from ov.cli.app import main\n"
            "sys.argv = ['ov', 'status']\n"
            "main()\n")
    env = dict(os.environ, **ENV)
    env.pop("OV_DEBUG", None)
    p = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert p.stderr.splitlines() == ["ov: error[internal]: RuntimeError: boom (set OV_DEBUG=1 for the traceback)"]
    p = subprocess.run([sys.executable, "-c", code], cwd=root, env=dict(env, OV_DEBUG="1"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" in p.stderr


# ---- issue 17: the index is a cache, never an authority on paths ---------------------------

ALL_READERS = (["read", "a.md"], ["read", "."], ["read", ".", "-L", "0"], ["read", ".", "-L", "1"],
               ["search", "hello", "--search-type", "keywords"], ["search", "hello"],
               ["search", "hello", "-L", "0"], ["search", "hello", "--read-content"],
               ["search", "hello", "--mode", "context"], ["find", "hello"],
               ["find", "hello", "--read-content"], ["grep", "hello"], ["grep", MARK],
               ["grep", "-F", "hello"], ["glob", "**"], ["status"], ["tag", ".", "k=v", "--recursive"],
               ["search", MARK, "--read-content"], ["search", MARK, "--mode", "context"])


def _outside_never_shown(root: Path, marks=(MARK, "root:x:")) -> None:
    for args in ALL_READERS:
        for fmt in ("json", "text"):
            r = run_inprocess([*args, "-o", fmt], cwd=root, env=ENV)
            assert r.code in (0, 1, 2), (args, r.out, r.err)
            assert '"internal"' not in r.out, (args, r.out)
            for m in marks:
                assert m not in r.out and m not in r.err, (args, fmt, r.out)


def test_a_link_swapped_in_after_indexing_is_never_read(tmp_path):
    make_tree(tmp_path / "outside", {"secret.md": f"# S\n\nhello world {MARK}.\n"})
    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nhello world.\n", "b.md": "# B\n\nhello there.\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    (root / "a.md").unlink()
    (root / "a.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "b.md").unlink()
    (root / "b.md").symlink_to("/etc/passwd")
    _outside_never_shown(root)
    r = run_inprocess("search", "hello", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    res = r.json["result"]
    assert res["hits"] == [] and res.get("refused") == 2
    assert any("outside the index root" in w for w in res["warnings"])


def _forge(root: Path, rows: list[tuple[str, str]]) -> None:
    """Rewrite indexed rows' paths to `rows` [(old path, forged path)] in the database."""
    import sqlite3  # the forged file is what a committed .ov/index.db could hold

    conn = sqlite3.connect(root / ".ov" / "index.db")
    for old, new in rows:
        assert conn.execute("UPDATE files SET path = ? WHERE path = ?", (new, old)).rowcount == 1
    conn.commit()
    conn.close()


@pytest.mark.parametrize("forged", ["/etc/passwd", "../outside/secret.md", "sub/../../outside/secret.md",
                                    "./../outside/secret.md", "link/secret.md"])
def test_a_forged_index_row_never_reaches_outside_the_root(tmp_path, forged):
    make_tree(tmp_path / "outside", {"secret.md": f"# S\n\nhello world {MARK}.\n"})
    root = make_tree(tmp_path / "t", {"a.md": f"# A\n\nhello world {MARK}.\n", "c.md": "# C\n\nhello.\n",
                                      "sub/x.txt": "x\n"})
    (root / "link").symlink_to(tmp_path / "outside")  # a folder link out (never walked)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    # the row keeps a.md's chunks (which name the marker) but points elsewhere; a.md goes
    (root / "a.md").unlink()
    _forge(root, [("a.md", forged)])
    _outside_never_shown(root, marks=(MARK, "root:x:", "secret.md", "/etc/passwd"))
    r = run_inprocess("search", "hello", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["c.md"]
    # a rebuild drops the forged row for good
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    r = run_inprocess("read", ".", "-L", "2", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["text"].splitlines() == ["c.md", "sub/x.txt"]


def test_nothing_is_written_through_a_link_under_dot_ov(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    for setup in ("dir", "db", "lock", "wal", "gitignore"):
        root = make_tree(tmp_path / f"t-{setup}", {"a.md": "# A\n\nhello.\n"})
        if setup == "dir":
            (root / ".ov").symlink_to(target)
        else:
            (root / ".ov").mkdir()
            name = {"db": "index.db", "lock": "index.db.lock", "wal": "index.db-wal",
                    "gitignore": ".gitignore"}[setup]
            (root / ".ov" / name).symlink_to(target / name)
        for args in (["index", "."], ["search", "hello"], ["index", ".", "--full"]):
            r = run_inprocess([*args, "-o", "json"], cwd=root, env=ENV)
            assert r.code == 2 and r.json["error"]["code"] == "invalid_path", (setup, args, r.out)
        assert list(target.iterdir()) == [], setup


def test_an_ov_folder_made_before_the_first_index_gets_its_gitignore(tmp_path):
    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nhello.\n", ".ov/config.toml": "hidden = false\n"})
    assert not (root / ".ov" / ".gitignore").exists()
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    assert (root / ".ov" / ".gitignore").read_text() == "*\n"


def test_a_restored_mtime_cannot_hide_a_change(tmp_path):
    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nalpha bravo.\n", "b.md": "# B\n\nother.\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    st = os.stat(root / "a.md")
    (root / "a.md").write_text("# A\n\ncharl bravo.\n")  # same size
    os.utime(root / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(root / "a.md").st_size == st.st_size
    r = run_inprocess("grep", "charl", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and len(r.json["result"]["matches"]) == 1, r.out
    r = run_inprocess("search", "alpha", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["hits"] == []  # the old excerpt is not shown
    r = run_inprocess("status", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["stale_files"] == 1
    r = run_inprocess("index", ".", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["updated"] == 1, r.out
    r = run_inprocess("search", "charl", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["a.md"]


# ---- issue 17: control files are read bounded --------------------------------------------

@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".ovignore", ".git/info/exclude",
                                  ".ov/config.toml", "pyproject.toml", "sub/.gitignore"])
@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "big"])
def test_a_control_file_that_is_not_a_small_regular_file_is_skipped_with_a_warning(tmp_path, name, target):
    import time

    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nhello.\n", "sub/b.md": "hello b\n"})
    (root / ".git").mkdir(exist_ok=True)  # a work tree: .gitignore is read only in one
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if target == "/dev/zero":
        p.symlink_to("/dev/zero")
    elif target == "fifo":
        os.mkfifo(p)
    else:
        p.write_bytes(b"# padding\n" * 110_000)  # 1.1 MB
    for args in (["grep", "hello"], ["glob", "**"], ["index", "."], ["search", "hello"], ["status"]):
        t0 = time.monotonic()
        r = run_inprocess([*args, "-o", "json"], cwd=root, env=ENV)
        assert time.monotonic() - t0 < 10, args
        assert r.code == 0, (args, r.out, r.err)
        label = name.split("/")[-1]
        if args[0] in ("grep", "glob", "index") or name.endswith(".toml"):
            assert label in r.err and any(w in r.err for w in (
                "not a regular file", "larger than", "a symbolic link leading outside the tree")), (args, r.err)


def test_a_run_of_stars_in_an_ignore_line_does_not_backtrack(tmp_path):
    import time

    files = {f"{'a' * 40}{i}": "hi\n" for i in range(5)}
    root = make_tree(tmp_path / "t", {**files, "keepz": "hi\n",
                                      ".gitignore": "*" * 16 + "z\n" + "x/" + "*" * 20 + "/y\n"})
    t0 = time.monotonic()
    r = run_inprocess("grep", "-l", "hi", "-o", "json", cwd=root, env=ENV)
    assert time.monotonic() - t0 < 5
    # `****z` means `*z`: keepz is ignored, the a… files are not
    assert sorted(r.json["result"]["paths"]) == sorted(files)


# ---- issue 17: text output escapes control characters; JSON is unaffected ------------------

ESC_NAME = "na\x1b[31mme.md"
ESC_TEXT = "# T\n\nhello \x1b]0;pwned\x07 \x1b[2J world \x9b1m.\nok\rhidden line\r\n"


@pytest.mark.parametrize("color", ["never", "always"])
def test_text_output_escapes_control_characters(tmp_path, color):
    root = make_tree(tmp_path / "t", {ESC_NAME: ESC_TEXT, "b.md": "# B\n\nother hello.\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    for args in (["grep", "hello"], ["grep", "hidden"], ["grep", "-C", "2", "ok"], ["grep", "-l", "hello"],
                 ["grep", "-c", "hello"], ["glob", "*"], ["read", ESC_NAME], ["read", ".", "-L", "2"],
                 ["read", ".", "-L", "1"], ["search", "hello", "--search-type", "keywords"],
                 ["search", "hello", "--mode", "context"], ["find", "hello"],
                 ["tag", ESC_NAME, "k=v"], ["read", "nope\x1b[2J.md"]):
        r = run_inprocess([*args, "--color", color], cwd=root, env=ENV)
        assert r.code in (0, 1, 2), (args, r.out, r.err)
        for stream in (r.out, r.err):
            data = stream.replace("\x1b[0m", "").replace("\x1b[1;31m", "").replace("\x1b[35m", "") \
                .replace("\x1b[32m", "").replace("\x1b[1m", "")
            assert "\x1b" not in data and "\x07" not in data and "\x9b" not in data, (args, stream)
            assert "\rh" not in data, (args, stream)
    r = run_inprocess("grep", "hello", "--color", "never", cwd=root, env=ENV)
    assert "na\\x1b[31mme.md:3:hello \\x1b]0;pwned\\x07 \\x1b[2J world \\x9b1m." in r.out
    r = run_inprocess("grep", "-o", "json", "hidden", cwd=root, env=ENV)
    m = r.json["result"]["matches"][0]
    assert m["path"] == ESC_NAME and m["content"] == "ok\rhidden line\r"  # JSON unaffected


def test_a_newline_or_tab_in_a_file_name_is_escaped_in_text_output(tmp_path):
    """A name is one field of a line: its newline and tab are shown as `\\xNN` in text
    (content lines keep their tabs); JSON and grep's -0 give the name as it is."""
    root = make_tree(tmp_path / "t", {"new\nline.md": "# A\n\nhello there\n", "tab\tname.md": "hello\tthere\n"})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    for args in (["grep", "hello"], ["grep", "-l", "hello"], ["grep", "-c", "hello"], ["grep", "--heading", "hello"],
                 ["glob", "*.md"], ["glob", "*.md", "--simple"], ["glob", "*.md", "--fields", "path,size"],
                 ["search", "hello", "--search-type", "keywords"]):
        r = run_inprocess(*args, "--color", "never", cwd=root, env=ENV)
        assert r.code == 0, (args, r.out, r.err)
        assert "new\\x0aline.md" in r.out and "tab\\x09name.md" in r.out, (args, r.out)
        assert "new\nline" not in r.out and "tab\tname" not in r.out, (args, r.out)
    assert "hello\tthere" in run_inprocess("grep", "there", cwd=root, env=ENV).out
    r = run_inprocess("tag", "tab\tname.md", "k=a b", cwd=root, env=ENV)  # the path is one field
    assert r.code == 0 and r.out == "tab\\x09name.md\tk=a b\n", r.out
    # a tag value holds no control character (ov.tags): refused, not stored and escaped
    assert run_inprocess("tag", "tab\tname.md", "k=a\nb", cwd=root, env=ENV).code == 2
    r = run_inprocess("grep", "-l", "-0", "hello", cwd=root, env=ENV)
    assert sorted(r.out.split("\0")[:-1]) == ["new\nline.md", "tab\tname.md"]
    r = run_inprocess("glob", "*.md", "-o", "json", cwd=root, env=ENV)
    assert sorted(r.json["result"]["matches"]) == ["new\nline.md", "tab\tname.md"]


# ---- issue 17: a grep's deadline is wall time, per command ------------------------------------

def test_grep_stops_at_its_wall_time_deadline_and_says_how_far_it_got(tmp_path):
    import time

    root = make_tree(tmp_path / "t", {f"f{i:02}.txt": ("ab x " * 3000 + "\n") * 20 for i in range(30)})
    t0 = time.monotonic()
    r = run_inprocess("grep", "-U", "-c", r"(\s|\S)*x$", "--timeout", "1.5", "-o", "json", cwd=root, env=ENV)
    took = time.monotonic() - t0
    assert r.code == 2 and r.json["error"]["code"] == "deadline_exceeded", r.out
    assert "after searching" in r.json["error"]["message"] and r.json["error"]["field"] == "timeout"
    assert took < 6, took  # 30 files x 5 s of regex limit each, before
    for bad in ("0", "-1", "nan", "inf", "1e400", "x"):
        r = run_inprocess("grep", "x", "--timeout", bad, "-o", "json", cwd=root, env=ENV)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_argument", (bad, r.out)
    r = run_inprocess("grep", "-c", "ab", "--timeout", "30", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["files"] == 30


# ---- issue 17: a big file is searched a block at a time -------------------------------------

def test_big_files_are_searched_in_blocks_with_the_same_answers(tmp_path, monkeypatch):
    import random

    from ov.search import files as fsearch

    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "needle", "ünï", "😀", "omega"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(6000)]
    text = "\ufeff" + "\n".join(lines) + "\nlast needle line without newline"
    root = make_tree(tmp_path / "t", {"big.txt": text, "crlf.txt": text.replace("\n", "\r\n"),
                                      "small.txt": "needle\n", "late-nul.txt": text + "\n\x00 tail\n"})
    queries = (["-c", "needle"], ["-l", "needle"], ["needle", "--node-limit", "100000"],
               ["-w", "-c", "ünï"], ["-c", "^$"], ["-c", "line$"], ["-c", "😀 omega"], ["-c", "zzz"],
               ["needle", "--node-limit", "7"], ["-i", "-c", "ALPHA"])
    want = {tuple(q): run_inprocess("grep", "-o", "json", *q, cwd=root, env=ENV).out for q in queries}
    calls = []
    real = fsearch.search_blocks
    monkeypatch.setattr(fsearch, "search_blocks", lambda *a: calls.append(a[1]) or real(*a))
    monkeypatch.setattr(fsearch, "STREAM_BYTES", 70_000)
    monkeypatch.setattr(fsearch, "BLOCK_BYTES", 4096)
    for q in queries:
        got = run_inprocess("grep", "-o", "json", *q, cwd=root, env=ENV).out
        strip = lambda s: s.rsplit('"usage"', 1)[0]  # noqa: E731
        assert strip(got) == strip(want[tuple(q)]), q
    assert {"big.txt", "crlf.txt", "late-nul.txt"} <= set(calls) and "small.txt" not in calls


# ---- files the user cannot read: left out, as if absent ----------------------------------

GUARDED = {"pub.txt": "public hello\n", "priv.txt": "private hello banana secret\n",
           "sub/x.txt": "hidden hello in a folder\n"}
HIDDEN = ("banana", "secret", "priv.txt", "x.txt", "sub", "hidden")


def _as_another_user(monkeypatch, root: Path, unreadable: tuple[str, ...], unlisted: tuple[str, ...]) -> None:
    """Play the kernel's answers to a user who may not read the files `unreadable` nor
    list or search the folders `unlisted`: root reads everything, so the refusals are
    made at the calls that would meet them (access, open, lstat, stat)."""
    import errno

    files = {os.path.join(root, p) for p in unreadable}
    folders = {os.path.join(root, d) for d in unlisted}
    below = tuple(f + "/" for f in folders)
    real_access, real_open, real_lstat, real_stat = os.access, os.open, os.lstat, os.stat

    def refused(p, *, opened=True) -> bool:
        if isinstance(p, int):
            return False
        p = os.path.abspath(os.fsdecode(p))
        return p.startswith(below) or (opened and (p in files or p in folders))

    def denied(p):
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(p))

    def access(p, mode, *a, **k):
        return False if refused(p) else real_access(p, mode, *a, **k)

    def open_(p, flags, *a, **k):
        if k.get("dir_fd") is None and refused(p, opened=not flags & getattr(os, "O_PATH", 0)):
            raise denied(p)
        return real_open(p, flags, *a, **k)

    def lstat(p, *a, **k):
        if k.get("dir_fd") is None and refused(p, opened=False):
            raise denied(p)
        return real_lstat(p, *a, **k)

    def stat_(p, *a, **k):
        if k.get("dir_fd") is None and refused(p, opened=False):
            raise denied(p)
        return real_stat(p, *a, **k)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(os, "stat", stat_)


@pytest.fixture
def guarded(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(a tree indexed by its owner, then seen by a user who may not read priv.txt nor
    list sub/; the same tree without those, indexed)."""
    root = make_tree(tmp_path / "t", GUARDED)
    bare = make_tree(tmp_path / "bare", {"pub.txt": GUARDED["pub.txt"]})
    for r in (root, bare):
        assert run_inprocess("index", ".", cwd=r, env=ENV).code == 0
    _as_another_user(monkeypatch, root, ("priv.txt",), ("sub",))
    return root, bare


def test_read_shows_nothing_of_files_the_user_cannot_read(guarded):
    root, bare = guarded
    reads = [["read", ".", "-L", lv] for lv in ("0", "1", "2")] + [["read", "."]] + [
        ["read", p, *lv] for p in ("sub", "priv.txt", "sub/x.txt") for lv in ([], ["-L", "0"], ["-L", "2"])]
    for args in reads:
        for fmt in ("json", "text"):
            got = run_inprocess([*args, "-o", fmt], cwd=root, env=ENV)
            want = run_inprocess([*args, "-o", fmt], cwd=bare, env=ENV)  # as if absent
            # (the JSON names each tree's own root)
            assert (got.code, got.out.split('"usage"')[0].replace(str(root), "ROOT"), got.err) == \
                   (want.code, want.out.split('"usage"')[0].replace(str(bare), "ROOT"), want.err), (args, fmt)
            if got.code == 0:  # (an error quotes the path asked, and nothing else)
                assert not [w for w in HIDDEN if w in got.out + got.err], (args, got)
    r = run_inprocess("read", ".", "-L", "1", cwd=root, env=ENV)
    assert r.out == "pub.txt — public hello\n"


def test_a_recursive_tag_leaves_alone_what_the_user_cannot_read(guarded):
    root, bare = guarded
    for tree in (root, bare):
        r = run_inprocess("tag", ".", "team=x", "--recursive", "-o", "json", cwd=tree, env=ENV)
        assert r.code == 0, r.out
        assert [f["path"] for f in r.json["result"]["files"]] == ["pub.txt"], (tree, r.out)
    r = run_inprocess("tag", "sub", "team=x", "--recursive", "-o", "json", cwd=root, env=ENV)
    assert r.code == 2 and r.json["error"]["code"] == "not_found", r.out  # as if absent
    for path in ("priv.txt", "sub/x.txt"):  # named: as `read` answers, and nothing tagged
        r = run_inprocess("tag", path, "team=x", "-o", "json", cwd=root, env=ENV)
        assert r.code == 2 and r.json["error"]["code"] == "not_found", (path, r.out)
        assert r.json["error"]["message"] == run_inprocess("read", path, "-o", "json", cwd=root,
                                                            env=ENV).json["error"]["message"]


def test_a_file_the_user_cannot_read_is_not_stale(guarded):
    root, _ = guarded
    for how in (["--search-type", "keywords"], ["--search-type", "hybrid"], ["--mode", "context"]):
        r = run_inprocess("search", "hello", *how, "-o", "json", cwd=root, env=ENV)
        assert r.code == 0, (how, r.out, r.err)
        res = r.json["result"]
        assert res["warnings"] == [] and r.err == "", (how, res["warnings"], r.err)
        assert not [w for w in HIDDEN if w in r.out], (how, r.out)
        if "hits" in res:
            assert [h["path"] for h in res["hits"]] == ["pub.txt"] and res["stale"] == 0
    (root / "pub.txt").unlink()  # a file really gone is still said to be
    r = run_inprocess("search", "hello", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert r.code == 1 and r.json["result"]["stale"] == 1


def _as_a_user(root: Path, modes: dict[str, int]):
    """Set `modes` (paths under `root`) and give a runner of `python -m ov ARGS` in `root`
    as a user without the read and write override: the suite's own user when it is not
    root, else root with those capabilities dropped (setpriv). The kernel's own refusals,
    not a simulation. Returns (run, restore the modes)."""
    drop = []
    if os.geteuid() == 0:
        from conftest import require_tool

        require_tool("setpriv", "util-linux")
        caps = "-dac_override,-dac_read_search,-fowner"
        drop = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]
    old = {rel: stat.S_IMODE(os.lstat(root / rel).st_mode) for rel in modes}
    for rel in sorted(modes, key=lambda r: -r.count("/")):  # deepest first: a folder closes last
        os.chmod(root / rel, modes[rel])
    env = dict(os.environ, **ENV)
    env.pop("OV_DEBUG", None)

    def run(*args, input=None):
        return subprocess.run([*drop, sys.executable, "-m", "ov", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120, input=input)

    def restore():
        for rel in sorted(old, key=lambda r: r.count("/")):
            os.chmod(root / rel, old[rel])

    run.drop = drop  # the prefix, for a process of the test's own

    return run, restore


def test_grep_exits_2_when_part_of_the_tree_could_not_be_read(tmp_path):
    """`ov grep NOPE` answered 1, "no match", on a tree with a folder it could not open;
    rg exits 2 (its results still printed), and a CI job reading 1 would pass a check
    that never looked there. `-q` with a match is 0, as rg's."""
    root = make_tree(tmp_path / "t", GUARDED)
    run, restore = _as_a_user(root, {"sub": 0o000})
    try:
        p = run("grep", "hello")
        assert p.returncode == 2 and p.stdout.splitlines() == ["priv.txt:1:private hello banana secret",
                                                              "pub.txt:1:public hello"], p
        assert "sub: Permission denied" in p.stderr, p.stderr
        p = run("grep", "no-such-text")
        assert p.returncode == 2 and p.stdout == "", p
        p = run("grep", "-o", "json", "no-such-text")
        res = json.loads(p.stdout)
        assert p.returncode == 2 and res["status"] == "ok" and "sub: Permission denied" in res["result"]["warnings"]
        assert run("grep", "--files").returncode == 2
        assert run("grep", "-q", "hello").returncode == 0 and run("grep", "-q", "no-such-text").returncode == 2
        assert run("grep", "hello", "pub.txt").returncode == 0  # nothing unread under the PATH named
    finally:
        restore()
    with open(root / "priv.txt", "a") as f:  # and a file, not a folder
        f.write("more\n")
    run, restore = _as_a_user(root, {"priv.txt": 0o000})
    try:
        p = run("grep", "public")
        assert p.returncode == 2 and p.stdout == "pub.txt:1:public hello\n" and "could not be read" in p.stderr, p
    finally:
        restore()
    (root / ".ignore").write_text("priv.txt\n")  # an ignore file unread: more is searched, not less (rg: 0)
    run, restore = _as_a_user(root, {".ignore": 0o000})
    try:
        p = run("grep", "public")
        assert p.returncode == 0 and ".ignore: Permission denied; its rules are not applied" in p.stderr, p
    finally:
        restore()


def test_a_followed_link_that_loops_or_is_broken_is_an_error_for_grep(tmp_path):
    root = make_tree(tmp_path / "t", {"a.txt": "needle\n"})
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    assert run_inprocess("grep", "needle", cwd=root, env=ENV).code == 0  # links not followed: none read
    r = run_inprocess("grep", "-L", "needle", cwd=root, env=ENV)
    assert r.code == 2 and r.out == "a.txt:1:needle\n", (r.out, r.err)


def test_a_user_without_read_override_sees_only_what_they_can_read(tmp_path):
    root = make_tree(tmp_path / "t", GUARDED)
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0  # while all is readable
    run, restore = _as_a_user(root, {"priv.txt": 0o000, "sub/x.txt": 0o000, "sub": 0o000})
    try:
        assert run("grep", "-c", "hello").stdout == "pub.txt:1\n"  # the files are really closed
        assert run("read", ".", "-L", "1").stdout == "pub.txt — public hello\n"
        p = run("read", "sub", "-L", "1")
        assert p.returncode == 2 and p.stdout == "" and "hidden" not in p.stderr
        p = run("search", "hello", "--search-type", "keywords", "-o", "json")
        res = json.loads(p.stdout)["result"]
        assert [h["path"] for h in res["hits"]] == ["pub.txt"] and res["stale"] == 0 and p.stderr == ""
    finally:
        restore()


def test_an_index_the_user_cannot_write_is_read_as_it_stands(tmp_path):
    """An index the user may read but not write (a shared checkout, a read-only volume): the
    commands that only read it answer from it, with a warning, through SQLite's immutable
    open (a WAL index's readers create `-shm`, which the folder refuses); the commands that
    write it say so with invalid_path, never 'damaged, rebuild it'; grep searches without it."""
    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nhello there\n", "b.py": "x = 'hello'\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    ov_dir = root / ".ov"
    modes = {".ov": 0o555, **{f".ov/{p.name}": 0o444 for p in ov_dir.iterdir()}}
    run, restore = _as_a_user(root, modes)
    try:
        p = run("status", "-o", "json")
        assert p.returncode == 0 and json.loads(p.stdout)["result"]["files"] == 2, (p.stdout, p.stderr)
        assert [w for w in json.loads(p.stdout)["result"]["warnings"] if "read-only" in w], p.stdout
        p = run("search", "hello", "--search-type", "keywords", "-o", "json")
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert sorted(h["path"] for h in json.loads(p.stdout)["result"]["hits"]) == ["a.md", "b.py"]
        assert p.stderr.count("read-only for this user") == 1, p.stderr  # said once
        assert [w for w in json.loads(p.stdout)["result"]["warnings"] if "read-only for this user" in w]
        assert run("read", "a.md").stdout == "# A\n\nhello there\n"
        for args in (["tag", "a.md", "k=v", "-o", "json"], ["index", "-o", "json"]):
            p = run(*args)
            err = json.loads(p.stdout)["error"]
            assert p.returncode == 2 and err["code"] == "invalid_path", (args, p.stdout, p.stderr)
            assert "damaged" not in err["message"] and "--full" not in err["message"], err
        p = run("grep", "-c", "hello")
        assert p.returncode == 0 and p.stdout == "a.md:1\nb.py:1\n" and "damaged" not in p.stderr, p
        calls = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "status", "arguments": {}}}]
        p = run("mcp", input="".join(json.dumps(c) + "\n" for c in calls))
        assert "not watching the tree: the index is read-only" in p.stderr and "failed" not in p.stderr, p.stderr
        answers = {a["id"]: a for a in map(json.loads, p.stdout.splitlines())}
        assert 1 in answers and "error" not in answers[1], p.stdout
        assert {f".ov/{x.name}" for x in ov_dir.iterdir()} == set(modes) - {".ov"}  # nothing new
    finally:
        restore()


READER = """
import json, sys
from ov import api
from ov.errors import OvError
ix = api.Index.open(sys.argv[1])
ix.keep_keywords()
for line in sys.stdin:
    try:
        hits = ix.search(line.strip(), search_type="keywords", limit=50).hits
        print(json.dumps(sorted(h.path for h in hits)), flush=True)
    except OvError as e:
        print(json.dumps(e.code), flush=True)
"""


def test_a_long_lived_reader_of_an_index_it_cannot_write_follows_its_owner(tmp_path):
    """`ov mcp` run by a user who may only read the index: the owner's `ov index` changes
    the file under an immutable read, which SQLite cannot see. The reader opens the file
    again when its size or mtime moves; it used to answer from stale pages, then call the
    index damaged."""
    root = make_tree(tmp_path / "t", {f"d{i}.md": f"# D{i}\n\nalpha words {i}\n" for i in range(5)})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    ov_dir = root / ".ov"
    modes = {".ov": 0o755, **{f".ov/{p.name}": 0o644 for p in ov_dir.iterdir()}}
    run, restore = _as_a_user(root, modes)
    os.chmod(ov_dir, 0o555)  # the folder closed to the reader only: root, the owner, still writes
    drop = run.drop
    env = dict(os.environ, **ENV, PYTHONPATH=str(REPO))
    reader = subprocess.Popen([*drop, sys.executable, "-c", READER, str(root)], cwd=root, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ask(q):
            reader.stdin.write(q + "\n")
            reader.stdin.flush()
            return json.loads(reader.stdout.readline())

        assert ask("alpha") == [f"d{i}.md" for i in range(5)]
        for i in range(5, 40):
            (root / f"d{i}.md").write_text(f"# D{i}\n\nalpha words {i} zephyr\n")
        (root / "d0.md").unlink()
        os.chmod(ov_dir, 0o755)
        assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
        os.chmod(ov_dir, 0o555)
        for p in ov_dir.iterdir():
            if p.is_file():
                os.chmod(p, 0o644)
        assert ask("zephyr") == sorted(f"d{i}.md" for i in range(5, 40))
        assert ask("alpha") == sorted(f"d{i}.md" for i in range(1, 40))  # d0.md is gone
    finally:
        reader.stdin.close()
        reader.wait(timeout=30)
        os.chmod(ov_dir, 0o755)
        restore()


def test_a_trees_python_files_never_run_as_code(tmp_path):
    """A cloned tree is input, not authority: its `multiprocessing/`, `ov/` or `.ov/ov/`
    must never be imported by ov's own processes. The pool that reads files (a forkserver,
    started as `python -c`) and the background worker (`python -m`, in `.ov/`) each had
    their working folder first on the import path."""
    from ov.indexer import worker_state

    marker = tmp_path / "ran"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    files = {f"notes/n{i}.txt": f"hello {i}\n" for i in range(400)}
    for pkg in ("multiprocessing", "ov", ".ov/ov", ".ov/multiprocessing"):
        files.update({f"{pkg}/__init__.py": payload, f"{pkg}/worker.py": payload,
                      f"{pkg}/indexer.py": payload, f"{pkg}/forkserver.py": payload})
    root = make_tree(tmp_path / "t", files)
    env = {**os.environ, "OV_EMBEDDER": "hash", "OV_INDEX_JOBS": "2"}
    env.pop("PYTHONSAFEPATH", None)

    def ov(*args: str) -> subprocess.CompletedProcess:
        # -P: the harness's own `python -m` must not import the tree's ov either (the `ov`
        # command a user runs starts from its script's folder)
        return subprocess.run([sys.executable, "-P", "-m", "ov", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)

    p = ov("search", "hello", "-o", "json")  # first use: keywords now, a worker for vectors
    assert p.returncode == 0, p.stderr
    db = root / ".ov" / "index.db"
    deadline = time.monotonic() + 120
    while worker_state(db) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    for args in (["index", "--no-embed", "--full"], ["index"]):
        p = ov(*args)
        assert p.returncode == 0, (args, p.stderr)
    # python -E: the pool's children would ignore PYTHONSAFEPATH too (ov reads inline then)
    script = Path(sys.executable).parent / "ov"
    p = subprocess.run([sys.executable, "-E", str(script), "index", "--no-embed", "--full"], cwd=root,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), marker.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give .ov/ to another user")
def test_grep_and_glob_work_beside_another_users_private_index(tmp_path):
    """`.ov/` is owner-only. Another user grepping the same checkout (a colleague, a CI job
    as another account) got `internal: PermissionError` from grep, glob and search: grep
    and glob now search without the index (with a warning for the config they cannot
    read), and search says the index is another user's. Here `.ov/` becomes user
    65534's and the commands run as root without its read and write override."""
    root = make_tree(tmp_path / "t", {"a.txt": "hello there\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    for p in [root / ".ov", *(root / ".ov").iterdir()]:
        os.chown(p, 65534, 65534)
    run, restore = _as_a_user(root, {".ov": 0o700})
    try:
        p = run("grep", "-c", "hello")
        assert p.returncode == 0 and p.stdout == "a.txt:1\n" and "internal" not in p.stderr, p
        # the refusal really happened: another user's .ov/ is passed over (config.untrusted)
        assert "owned by another user (uid 65534): not used" in p.stderr, p.stderr
        p = run("glob", "*.txt")
        assert p.returncode == 0 and p.stdout == "a.txt\n", p
        p = run("search", "hello", "-o", "json")
        err = json.loads(p.stdout)["error"]
        # (another user's index is not this user's to read or to build in: `config.untrusted`)
        assert p.returncode == 2 and err["code"] == "invalid_path" and "owned by another user (uid 65534)" \
            in err["message"], p
        assert sorted(x.name for x in root.iterdir()) == [".ov", "a.txt"]
    finally:
        restore()


def test_a_listing_made_with_more_rights_shows_no_name_of_a_shut_folder(tmp_path):
    """The walk's listing cache, made by a run that could read a shut folder (root), was
    read back by a run that cannot: `glob` and `grep --files` listed the folder's names
    with no warning (a review). A cached folder not open to all is asked of the system, and
    one this run cannot list is said as the walk says it."""
    root = make_tree(tmp_path / "t", {"locked/s.txt": "s\n", "open/o.txt": "o\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    run, restore = _as_a_user(root, {"locked": 0o000})
    try:
        time.sleep(2.1)  # a folder changed within 2 s of a listing is never trusted (walk.RACY_NS)
        if os.geteuid() == 0:  # root's read override: the listing cached holds the folder's names
            assert run_inprocess("glob", "**", cwd=root, env=ENV).out.split() == ["locked/s.txt", "open/o.txt"]
        for args in (["glob", "**"], ["grep", "--files"]):
            p = run(*args)
            assert p.stdout.split() == ["open/o.txt"] and "locked: Permission denied" in p.stderr, (args, p)
    finally:
        restore()
