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
        assert "inner.txt" not in r.out and "secret" not in r.out, (path, r.out)
    r = run_inprocess("glob", "-o", "json", "**", "--node-limit", "1000", cwd=fenced, env=ENV)
    listed = [m if isinstance(m, str) else m["path"] for m in r.json["result"]["matches"]]
    assert "a.txt" in listed
    assert not [p for p in listed if p.startswith(("abs_dir/", "sub/rel_dir/"))], listed
    for pat in ("../*", "../outside/*", "/etc/*", str(fenced.parent / "outside" / "*")):
        r = run_inprocess("glob", "-o", "json", pat, cwd=fenced, env=ENV)
        assert "secret" not in r.out and "passwd" not in r.out, (pat, r.out)


def test_dotdot_and_absolute_scopes_are_refused_by_every_command(fenced):
    assert run_inprocess("index", ".", cwd=fenced, env=ENV).code == 0
    out = fenced.parent / "outside"
    for bad in ("..", "../outside/secret.txt", "sub/../../outside", str(out), str(out / "secret.txt"),
                "/etc/passwd"):
        for args in (["search", "x", "-u", bad], ["find", "x", "-u", bad],
                     ["search", "x", "--exclude-uri", bad],
                     ["search", "x", "--mode", "context", "--exclude-uri", bad],
                     ["read", bad], ["tag", bad, "k=v"], ["grep", "x", "--exclude-uri", bad]):
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
    assert all(m["path"].startswith("../outside/") for m in r.json["result"]["matches"])
    r = run_inprocess("grep", "-o", "json", MARK, "/no/such/folder", cwd=fenced, env=ENV)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"


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
            "from ov.cli import main\n"
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
