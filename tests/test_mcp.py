"""`ov mcp` (issue 16), driven as a client drives it: the server runs as a real subprocess
(`python -m ov mcp ROOT`) and the MCP SDK's own client (`stdio_client` + `ClientSession`)
lists its tools and calls each one. Every result must equal what the command line prints
with `-o json` on the same tree; a bad regex, a bad cursor and other bad input must come
back as tool errors carrying the CLI's error object, with the server still answering; a
saved file must be searchable within seconds (the watcher); and a server killed with
SIGKILL in the middle of an update must leave an index the next server completes.

Starting the server costs the SDK's import (seconds on a loaded machine), so each test
starts one server and asks it many things.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import imported_by, make_tree, run_inprocess

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

FILES = {
    "README.md": "# Demo\n\nA small tree for the MCP server tests.\n\n## Retries\n\n"
                 "Failed uploads are retried with exponential backoff.\n",
    "src/net.py": '"""Network helpers."""\n\n\ndef upload(data, retries=3):\n'
                  '    """Upload data, retrying on failure."""\n    for attempt in range(retries):\n'
                  '        pass\n\n\ndef backoff(attempt):\n    return 2 ** attempt\n',
    "src/cache.py": '"""A tiny cache."""\n\nclass Cache:\n    def invalidate(self, key):\n'
                    '        """Drop one key."""\n        self.data.pop(key, None)\n',
    "docs/guide.txt": "The cache is invalidated when a key changes.\nUploads retry three times.\n",
    ".gitignore": "build/\n",
    "build/out.txt": "ignored build output with retries\n",
}
ENV = {"OV_EMBEDDER": "hash"}
STARTUP_S = 180  # the SDK's import alone takes seconds on a loaded machine


def _params(root: Path) -> StdioServerParameters:
    env = dict(ENV)
    for k in ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
        if k in os.environ:
            env[k] = os.environ[k]
    return StdioServerParameters(command=sys.executable, args=["-m", "ov", "mcp", str(root)],
                                 cwd=str(root), env=env)


def _session(root: Path, scenario):
    """Run `scenario(session)` against a fresh `ov mcp ROOT` subprocess."""

    async def main():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(_params(root), errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=STARTUP_S) as s:
                    await s.initialize()
                    return await scenario(s)

    return anyio.run(main)


async def call(s: ClientSession, name: str, args: dict | None = None) -> tuple[bool, dict]:
    res = await s.call_tool(name, args or {})
    text = json.loads(res.content[0].text)
    env = res.structured_content
    # the same envelope, twice; a context pack's entries come in the text without their
    # text, which `rendered` holds (it doubled the tokens the model read)
    entries = (env.get("result") or {}).get("entries") if "rendered" in (env.get("result") or {}) else None
    if entries is not None:
        assert text["result"]["entries"] == [{k: v for k, v in e.items() if k != "text"} for e in entries]
        assert {**text["result"], "entries": entries} == env["result"] and text["result"]["rendered"]
        assert len(res.content[0].text) < len(json.dumps(env))
    else:
        assert env == text
    return res.is_error, env


def cli(root: Path, *args) -> dict:
    r = run_inprocess(*args, "--json", cwd=root, env=ENV)
    assert r.code in (0, 1), r.out + r.err
    return r.json["result"]


def cli_error(root: Path, *args) -> dict:
    r = run_inprocess(*args, "--json", cwd=root, env=ENV)
    assert r.code == 2, r.out + r.err
    return r.json["error"]


@pytest.fixture
def served(tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    r = run_inprocess("index", str(root), env=ENV)
    assert r.code == 0, r.err
    return root


def test_tools_answer_as_the_cli_does(served):
    root = served
    calls = [  # (tool, arguments, the same request on the command line)
        ("search", {"query": "retry failed uploads"}, ["search", "retry failed uploads"]),
        ("search", {"query": "cache invalidate", "search_type": "keywords", "limit": 2},
         ["search", "cache invalidate", "--search-type", "keywords", "-n", "2"]),
        ("search", {"query": "retry", "uri": ["src"], "explain": True},
         ["search", "retry", "-u", "src", "--explain"]),
        ("search", {"query": "cache", "mode": "context", "max_tokens": 200},
         ["search", "cache", "--mode", "context", "--max-tokens", "200"]),
        ("find", {"query": "exponential backoff", "types": ["py"]}, ["find", "exponential backoff", "-t", "py"]),
        ("grep", {"pattern": r"retr\w+", "context": 1}, ["grep", r"retr\w+", "-C", "1"]),
        ("grep", {"pattern": "cache", "ignore_case": True, "count": True}, ["grep", "cache", "-i", "-c"]),
        ("grep", {"pattern": "e", "node_limit": 2}, ["grep", "e", "--node-limit", "2"]),
        ("grep", {"pattern": "retries", "paths": ["src"], "files_with_matches": True},
         ["grep", "retries", "src", "-l"]),
        ("grep", {"pattern": "retr", "types_not": ["py"], "files_with_matches": True},
         ["grep", "retr", "-T", "py", "-l"]),
        ("glob", {"pattern": "**/*.py"}, ["glob", "**/*.py"]),
        ("glob", {"pattern": "**/*", "fields": "path,type,size", "node_limit": 3},
         ["glob", "**/*", "-f", "path,type,size", "--node-limit", "3"]),
        ("read", {"path": "src/net.py", "level": 0}, ["read", "src/net.py", "-L", "0"]),
        ("read", {"path": "src/net.py", "level": 1}, ["read", "src/net.py", "-L", "1"]),
        ("read", {"path": "src"}, ["read", "src"]),
        # a hit's `path:line`: the passage that holds the line, or exactly a range of lines
        ("read", {"path": "src/net.py:6"}, ["read", "src/net.py:6"]),
        ("read", {"path": "src/net.py:4-5", "level": 2}, ["read", "src/net.py:4-5"]),
    ]

    async def scenario(s):
        listed = await s.list_tools()
        names = [t.name for t in listed.tools]
        out = []
        for _ in range(200):  # the watcher's first pass over the tree: results say it runs
            if not (await call(s, "status"))[1]["result"]["watch"]["catching_up"]:
                break
            await asyncio.sleep(0.05)
        for tool, args, _ in calls:
            out.append(await call(s, tool, args))
        # the cursor of a first page leads to the same second page as on the command line
        first = (await call(s, "search", {"query": "retry cache upload", "limit": 1}))[1]
        second = (await call(s, "search", {"query": "retry cache upload", "limit": 1,
                                          "cursor": first["result"]["next_cursor"]}))[1]
        status = (await call(s, "status"))[1]
        return listed, names, out, first, second, status

    listed, names, out, first, second, status = _session(root, scenario)
    assert names == ["search", "find", "grep", "glob", "read", "status"]
    for t in listed.tools:
        assert len(t.description) > 80 and t.input_schema["type"] == "object"
    for (tool, args, argv), (is_error, env) in zip(calls, out):
        assert not is_error, (tool, env)
        assert env["status"] == "ok" and isinstance(env["usage"]["elapsed_ms"], int)
        want = cli(root, *argv)
        # (both in full: this comparison failed once in a full run, and pytest's -q
        # diff was cut before the field that differed)
        assert env["result"] == want, (tool, args, json.dumps(env["result"], sort_keys=True),
                                       json.dumps(want, sort_keys=True))
    assert out[-2][1]["result"]["line"] == 6 and out[-2][1]["result"]["start_line"] <= 6
    assert (out[-1][1]["result"]["start_line"], out[-1][1]["result"]["end_line"]) == (4, 5)
    # node limits are reported, not silent
    limited = [env for (tool, args, _), (_, env) in zip(calls, out) if "node_limit" in args]
    assert [(env["result"]["truncated"], env["result"]["count"]) for env in limited] == [(True, 2), (True, 3)]
    assert first["result"]["next_cursor"]
    page2 = cli(root, "search", "retry cache upload", "-n", "1", "--cursor", first["result"]["next_cursor"])
    assert second["result"] == page2 and second["result"]["hits"][0]["rank"] == 2
    want = cli(root, "status")
    got = status["result"]
    assert set(got.pop("watch")) == {"updates", "files_changed", "last_update", "pending", "catching_up", "errors"}
    got.pop("db_bytes"), want.pop("db_bytes")  # the WAL grows as the server writes its catch-up
    # the server's watcher keeps a change journal; the CLI asks once the server is gone
    assert set(got.pop("journal")) == {"ready", "not_ready", "changed"} and want.pop("journal", None) is None
    assert got == want


def test_errors_are_structured_and_the_server_goes_on(served):
    root = served
    bad = [  # (tool, arguments, the command line's error for the same request or None, code)
        ("grep", {"pattern": "("}, ["grep", "("], "invalid_pattern"),
        ("read", {"path": "../outside.txt"}, ["read", "../outside.txt"], None),
        ("read", {"path": "no/such/file.py"}, ["read", "no/such/file.py"], None),
        ("glob", {"pattern": "[", "path": "nowhere"}, ["glob", "[", "nowhere"], None),
        ("search", {"query": ""}, ["search", ""], None),
        ("search", {"query": "x", "max_tokens": 100}, None, "invalid_argument"),
        ("search", {"query": "x", "limt": 3}, None, "invalid_argument"),
        ("grep", {"pattern": 3}, None, "invalid_argument"),
        ("grep", {}, None, "invalid_argument"),
        ("nope", {}, None, "invalid_argument"),
        # the server serves one tree: nothing outside it is read or listed
        ("grep", {"pattern": "root", "paths": ["/etc/passwd"]}, None, "invalid_path"),
        ("glob", {"pattern": "*", "path": "/etc"}, None, "invalid_path"),
        ("glob", {"pattern": "*", "path": ".."}, None, "invalid_path"),
        ("read", {"path": "src/net.py:99"}, ["read", "src/net.py:99"], "invalid_argument"),
    ]
    # the command line's checks name its flags; over MCP the same errors name the arguments
    renamed = [  # (tool, arguments, message, field)
        ("search", {"query": "retry", "cursor": "not-a-cursor"},
         "the cursor is not valid; rerun the query without cursor", "cursor"),
        ("search", {"query": "retry", "limit": 500}, "limit must be between 1 and 50, not 500", "limit"),
        ("read", {"path": "src/net.py", "level": 5}, "level must be 0, 1 or 2, not 5", "level"),
        ("search", {"query": "retry", "level": "7"}, "level must be a list of 0, 1 and 2, not '7'", "level"),
        ("find", {"query": "retry", "threshold": 2}, "threshold must be between 0 and 1", "threshold"),
        ("search", {"query": "retry", "mode": "context", "dedup_turns": 2},
         "dedup_turns needs session_id", "dedup_turns"),
        ("search", {"query": "retry", "after": "yesterdayish"},
         "after: cannot read 'yesterdayish' as a time (use 2h, 7d, 2024-05-01 or ISO 8601)", "after"),
        ("grep", {"pattern": "x", "invert": True, "context": 1},
         "invert takes neither multiline nor context lines", "invert"),
        # the command line's field is its flag's (`type`); the argument is `types`
        ("find", {"query": "retry", "types": ["nosuchtype"]}, None, "types"),
        ("grep", {"pattern": "x", "types_not": ["nosuchtype"]}, None, "types_not"),
        # a path the user gave is echoed as given, flag-like text in it included
        ("grep", {"pattern": "x", "paths": ["docs/-i"]}, "docs/-i: no such file or folder", "paths"),
        ("grep", {"pattern": "x", "paths": ["notes -C draft"]}, "notes -C draft: no such file or folder",
         "paths"),
        ("read", {"path": "src/net.py:6", "level": 1}, "level 1 prints a tier of the whole file, and "
         "`:6` asks for lines of its full text: leave out level (or give 2)", "level"),
    ]

    async def scenario(s):
        out = []
        for tool, args, _, _ in bad:
            try:
                out.append(await call(s, tool, args))
            except Exception as e:  # an unknown tool may be refused by the SDK itself
                out.append((True, {"status": "error", "error": {"code": "protocol", "message": str(e)}}))
        got = [await call(s, tool, args) for tool, args, _, _ in renamed]
        alive = await call(s, "grep", {"pattern": "backoff", "fixed": True})
        return out, got, alive

    out, got, alive = _session(root, scenario)
    for (tool, args, argv, code), (is_error, env) in zip(bad, out):
        assert is_error and env["status"] == "error", (tool, args, env)
        err = env["error"]
        if tool == "nope" and err["code"] == "protocol":
            continue
        assert set(err) == {"code", "message", "retryable", "field"}
        if argv is not None:
            assert err == cli_error(root, *argv), (tool, args)
        if code is not None:
            assert err["code"] == code, (tool, args, err)
    assert out[0][1]["error"]["field"] == "pattern"
    assert out[6][1]["error"]["field"] == "limt"
    for (tool, args, message, field), (is_error, env) in zip(renamed, got):
        code = "not_found" if field == "paths" else "invalid_argument"
        assert is_error and env["error"]["code"] == code, (tool, args, env)
        assert env["error"]["field"] == field and "--" not in env["error"]["message"], (tool, args)
        assert message is None or env["error"]["message"] == message, (tool, args)
    assert alive[0] is False and alive[1]["result"]["count"] == 2


def test_tools_leave_out_paths_by_glob_as_the_cli_does(tmp_path):
    """search and find take `globs` (the command line's -g) and `exclude_uri` globs, grep
    and glob `exclude_uri` globs: the same answers as the command line's, and a bad glob
    is a tool error naming the argument."""
    root = make_tree(tmp_path / "t", {**FILES, "src/net_test.py": "def test_upload_retries():\n    pass\n",
                                      "tests/data/retries.txt": "retries fixture\n"})
    assert run_inprocess("index", str(root), env=ENV).code == 0
    calls = [
        ("search", {"query": "retries upload", "search_type": "keywords", "exclude_uri": ["*_test.py", "**/data"]},
         ["search", "retries upload", "--search-type", "keywords", "--exclude-uri", "*_test.py",
          "--exclude-uri", "**/data"]),
        ("search", {"query": "retries", "globs": ["*.py", "!*_test.py"], "mode": "context"},
         ["search", "retries", "-g", "*.py", "-g", "!*_test.py", "--mode", "context"]),
        ("find", {"query": "upload retries", "globs": ["src/**"], "exclude_uri": ["*_test.py"]},
         ["find", "upload retries", "-g", "src/**", "--exclude-uri", "*_test.py"]),
        ("grep", {"pattern": "retr", "files_with_matches": True, "exclude_uri": ["*_test.py", "**/data"]},
         ["grep", "retr", "-l", "--exclude-uri", "*_test.py", "--exclude-uri", "**/data"]),
        ("glob", {"pattern": "**/*.py", "exclude_uri": ["*_test.py"]},
         ["glob", "**/*.py", "--exclude-uri", "*_test.py"]),
    ]
    bad = [("search", {"query": "x", "globs": ["a["]}, "globs"),
           ("find", {"query": "x", "exclude_uri": ["!*.py"]}, "exclude_uri"),
           ("grep", {"pattern": "x", "exclude_uri": ["a[b"]}, "exclude_uri")]

    async def scenario(s):
        for _ in range(200):
            if not (await call(s, "status"))[1]["result"]["watch"]["catching_up"]:
                break
            await asyncio.sleep(0.05)
        return ([await call(s, tool, args) for tool, args, _ in calls],
                [await call(s, tool, args) for tool, args, _ in bad])

    out, errors = _session(root, scenario)
    for (tool, args, argv), (is_error, env) in zip(calls, out):
        assert not is_error, (tool, env)
        assert env["result"] == cli(root, *argv), (tool, args)
        assert "_test.py" not in json.dumps(env["result"]) and "data/" not in json.dumps(env["result"])
    assert "src/net.py" in [h["path"] for h in out[0][1]["result"]["hits"]]
    for (tool, args, field), (is_error, env) in zip(bad, errors):
        assert is_error and env["error"]["code"] == "invalid_pattern", (tool, env)
        assert env["error"]["field"] == field and "-g" not in env["error"]["message"], env
        assert env["error"]["message"].startswith(field + " "), env


def _poll(s, check, timeout: float = 30.0):
    """Seconds until `await check(s)` is true (fails after `timeout`)."""

    async def run():
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if await check(s):
                return time.monotonic() - t0
            await anyio.sleep(0.05)
        raise AssertionError(f"not within {timeout} s")

    return run()


def test_saved_files_are_searchable_within_seconds(served):
    root = served

    async def hits(s, word: str) -> list[str]:
        _, env = await call(s, "search", {"query": word, "search_type": "keywords"})
        return [h["path"] for h in env["result"]["hits"]]

    async def scenario(s):
        # the catch-up pass has run once the watcher reports it
        await _poll(s, lambda s: _updated(s, 1), timeout=120)
        took = {}
        (root / "src/new.py").write_text('def zanzibar():\n    """Quokka handling."""\n')
        took["added"] = await _poll(s, lambda s: _has(hits, s, "quokka", "src/new.py"))
        (root / "docs/guide.txt").write_text("Now the guide speaks of wombats only.\n")
        took["edited"] = await _poll(s, lambda s: _has(hits, s, "wombats", "docs/guide.txt"))
        assert "docs/guide.txt" not in await hits(s, "invalidated")
        (root / "src/cache.py").unlink()
        took["deleted"] = await _poll(s, lambda s: _files(s, 4))
        (root / "build/late.txt").write_text("platypus in an ignored folder\n")
        (root / "src/sub").mkdir()
        (root / "src/sub/deep.md").write_text("# Echidna\n\nA nested note.\n")
        took["folder"] = await _poll(s, lambda s: _has(hits, s, "echidna", "src/sub/deep.md"))
        assert await hits(s, "platypus") == []
        status = (await call(s, "status"))[1]["result"]
        return took, status

    took, status = _session(root, scenario)
    assert all(t < 30 for t in took.values()), took
    assert status["files"] == 5 and status["stale_files"] == 0 and status["missing_files"] == 0
    assert status["watch"]["errors"] == [] and status["watch"]["pending"] == 0


def test_a_search_right_after_a_save_finds_the_saved_words(served):
    """An agent edits a file, then searches for what it wrote: the watcher gathers a batch
    for 50 ms and then writes it, and a search in between answered from the index before
    the save, with nothing to say so. A search now waits (SETTLE_S at most) for the
    changes the watcher had heard of when it came. That count is the Linux change
    journal's; elsewhere (watchfiles) nothing is counted, and the search is asked again
    until the watcher has written the file (as `test_saved_files_are_searchable_within_seconds`)."""
    root = served
    journal = sys.platform.startswith("linux")

    async def hits(s, word: str) -> list[str]:
        _, env = await call(s, "search", {"query": word, "search_type": "keywords"})
        return [h["path"] for h in env["result"]["hits"]]

    async def scenario(s):
        await _poll(s, lambda s: _updated(s, 1), timeout=120)
        found = []
        for i, word in enumerate(("capybara", "okapi", "pangolin", "tapir", "quokka")):
            # no pause: the search reads the events the OS queued for the save itself (its
            # journal's thread may not have; a review's agent missed 7 searches in 24)
            (root / f"docs/n{i}.md").write_text(f"# Note {i}\n\nA {word} crossed the road.\n")
            if not journal:
                await _poll(s, lambda s, w=word, i=i: _has(hits, s, w, f"docs/n{i}.md"))
            found.append(await hits(s, word))
        return found

    found = _session(root, scenario)
    assert found == [[f"docs/n{i}.md"] for i in range(5)], found


async def _updated(s, n: int) -> bool:
    _, env = await call(s, "status")
    return env["result"]["watch"]["updates"] >= n


async def _has(hits, s, word: str, path: str) -> bool:
    return path in await hits(s, word)


async def _files(s, n: int) -> bool:
    _, env = await call(s, "status")
    return env["result"]["files"] == n


def _locked(db: Path) -> bool:
    import fcntl

    fd = os.open(str(db) + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def test_a_server_killed_mid_update_leaves_an_index_the_next_one_completes(served):
    root = served
    db = root / ".ov" / "index.db"
    env = {**os.environ, **ENV}
    p = subprocess.Popen([sys.executable, "-m", "ov", "mcp", str(root)], cwd=root, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STARTUP_S
        while b"watching" not in (line := p.stderr.readline()):  # the catch-up ran
            assert line and time.monotonic() < deadline, "the server did not start"
        burst = {f"burst/f{i:03d}.md": f"# Note {i}\n\nword{i} " + "filler text " * 400 + "\n" for i in range(150)}
        make_tree(root, burst)
        killed = False
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _locked(db):  # the watcher is inside an update
                time.sleep(0.05)
                p.send_signal(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.005)
        assert killed, "the update was never seen under way"
    finally:
        p.kill()
        p.wait()
        p.stderr.close()

    async def complete(s) -> bool:  # the next server's catch-up, then its vectors: one status
        status = (await call(s, "status"))[1]["result"]
        return status["watch"]["updates"] >= 1 and status["embedded_coverage"] == 1.0

    async def scenario(s):
        await _poll(s, complete, timeout=120)
        status = (await call(s, "status"))[1]["result"]
        found = (await call(s, "search", {"query": "word149", "search_type": "keywords"}))[1]
        return status, found

    status, found = _session(root, scenario)
    assert status["files"] == 4 + 150
    assert status["stale_files"] == 0 and status["embedded_coverage"] == 1.0
    assert [h["path"] for h in found["result"]["hits"]] == ["burst/f149.md"]
    assert run_inprocess("search", "word7", "--search-type", "keywords", "--json", cwd=root,
                         env=ENV).json["result"]["hits"][0]["path"] == "burst/f007.md"


def test_other_commands_do_not_load_the_sdk(tmp_path):
    root = make_tree(tmp_path / "t", {"a.py": "x = 1\n"})
    for args in (["grep", "x"], ["glob", "*.py"]):
        r, mods = imported_by(args, root)
        assert r.code == 0, r.err
        assert not {"mcp", "watchfiles", "pydantic", "anyio"} & mods, args


def test_mcp_with_a_missing_folder_is_an_error(tmp_path):
    r = run_inprocess("mcp", str(tmp_path / "nope"), env=ENV)
    assert r.code == 2 and "error[not_found]" in r.err
    # a file is not "no such folder" (a review of a Python tree)
    (tmp_path / "README.md").write_text("# Hi\n")
    r = run_inprocess("mcp", str(tmp_path / "README.md"), env=ENV)
    assert r.code == 2 and "error[invalid_path]" in r.err and "is a file" in r.err, r.err


def test_flags_in_a_path_of_an_error_message_are_not_rewritten():
    """A message's flags are named as the tool's arguments, but a path's parts that look
    like flags (`/srv/-n/...`, `/x/--limit/`) are the path's."""
    from ov.errors import OvError
    from ov.mcp import as_arguments

    def msg(m: str) -> str:
        return as_arguments(OvError("invalid_argument", m), "search").message

    assert msg("cannot open /srv/-n/.ov/index.db") == "cannot open /srv/-n/.ov/index.db"
    assert msg("cannot open /srv/--limit/x.db") == "cannot open /srv/--limit/x.db"
    assert msg("-n/--limit must be between 1 and 50") == "limit must be between 1 and 50"
    assert msg("--limit must be between 1 and 50") == "limit must be between 1 and 50"
    # a call's argument keeps a flag only when the flag lies inside its value: a query "x"
    # (in `--max-tokens`) left the flag as the command line names it
    assert as_arguments(OvError("invalid_argument", "--max-tokens must be between 1 and 1000000"),
                        "search", {"query": "x"}).message == "max_tokens must be between 1 and 1000000"
    assert as_arguments(OvError("invalid_argument", "cannot read docs/-i x"), "grep",
                        {"paths": ["docs/-i x"]}).message == "cannot read docs/-i x"


def test_a_grep_timeout_is_named_as_the_tools_argument(tmp_path):
    from ov.mcp import Tools

    make_tree(tmp_path, {"a.txt": "x\n"})
    from ov import api

    with api.Index.open(tmp_path, auto_index=True) as ix:
        out = Tools(ix).call("grep", {"pattern": "x", "timeout": -1})
    assert out["status"] == "error" and out["error"]["field"] == "timeout", out
    assert out["error"]["message"] == "timeout must be more than 0 and at most 1000000 seconds"


def test_grep_of_a_named_binary_file_gives_its_lines_as_the_cli_json(tmp_path):
    from ov import api
    from ov.mcp import Tools

    make_tree(tmp_path, {"a.bin": b"needle one\n\x00x\nneedle two\n", "b.txt": "needle\n"})
    with api.Index.open(tmp_path, auto_index=True) as ix:
        out = Tools(ix).call("grep", {"pattern": "needle", "paths": ["a.bin", "b.txt"]})
    res = out["result"]
    assert [(m["path"], m["line"]) for m in res["matches"]] == [("a.bin", 1), ("a.bin", 3), ("b.txt", 1)]
    assert res["count"] == 3 and res["warnings"] == []
    cli = run_inprocess("grep", "--json", "needle", "a.bin", "b.txt", cwd=tmp_path).json["result"]
    assert cli["matches"] == res["matches"]


def test_a_client_leaving_during_the_first_build_stops_it_at_its_next_file(tmp_path, monkeypatch):
    """The server waited for a first build to end before it left: 5-11 s after the client
    closed on a 42 MB tree, past the SDK's 2 s. The build now stops at its next file,
    what it wrote kept, and the watch's catch-up too; the next opening finishes it."""
    from ov import api, mcp
    from ov.store import Store
    from ov.store.db import KEYWORDS_META

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    monkeypatch.setenv("OV_BACKGROUND", "0")
    root = make_tree(tmp_path / "t", {f"d{i // 50}/f{i}.txt": f"alpha note {i}\n" for i in range(400)})
    tools = mcp.opening_tools(root, watch=True)
    mcp._close(tools)
    assert tools.opening.closing.is_set() and tools.opening.wait(0)
    with Store.open(root / ".ov" / "index.db", readonly=True) as store:  # cut at its first file
        assert store.file_count() < 400 and store.get_meta(KEYWORDS_META)
    assert api.index(root, embed=False).added == 400  # as `ov status` says: `ov index` finishes it
    with api.Index.open(root) as ix:
        assert ix.store.file_count() == 400


def test_a_client_leaving_during_the_first_build_leaves_its_worker_to_finish(tmp_path, monkeypatch):
    """Closed during the first build, the server started no watch: its catch-up stopped
    the worker the first build had just started, then stopped itself, and nothing went on
    until the next search (a read of the diff)."""
    from ov import mcp
    from ov.indexer import worker_state
    from ov.store import Store
    from ov.store.db import KEYWORDS_META

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = make_tree(tmp_path / "t", {f"d{i // 50}/f{i}.txt": f"alpha note {i}\n" for i in range(400)})
    tools = mcp.opening_tools(root, watch=True)
    mcp._close(tools)
    assert tools.watcher is None
    db = root / ".ov" / "index.db"
    deadline = time.monotonic() + 120
    while True:
        with Store.open(db, readonly=True) as store:
            done = store.file_count() == 400 and store.get_meta(KEYWORDS_META) is None
        if done and worker_state(db) is None:
            break
        assert time.monotonic() < deadline, "no worker finished the first build"
        time.sleep(0.2)


def test_a_cut_pass_over_a_finished_index_leaves_it_finished(tmp_path):
    """A watch's catch-up stopped as `ov mcp` leaves marked a complete index as a first
    build not finished, and the next search started a worker "to finish the index's files"
    (a read of the diff): the files it did not reach are merely stale."""
    from ov import indexer
    from ov.model import IndexReport
    from ov.store import Store
    from ov.store.db import KEYWORDS_META

    root = make_tree(tmp_path / "t", {f"f{i}.txt": f"alpha {i}\n" for i in range(30)})
    assert run_inprocess("index", "--no-embed", cwd=root).code == 0
    for i in range(30):
        (root / f"f{i}.txt").write_text(f"beta {i}\n")
    opts = indexer.options_for(root, indexer.walk_from_config(root), embed=False)
    asked = []
    with Store.open(root / ".ov" / "index.db") as st:
        rep = IndexReport(root=str(root))
        indexer._lexical_phase(st, root, opts, rep, None, lambda m: None, stop=lambda: asked.append(1) or len(asked) > 3)
        assert rep.partial and st.get_meta(KEYWORDS_META) is None and st.file_count() == 30
    r = run_inprocess("status", "--json", cwd=root, env=ENV)
    assert "not finished" not in r.out and r.json["result"]["files"] == 30


def test_an_unknown_argument_is_named_as_given(tmp_path):
    """grep's `path` (glob's name) was reported as "grep takes no argument 'paths'", the
    one it takes: the error was rewritten as if it named a command-line flag."""
    from ov import api
    from ov.mcp import Tools

    make_tree(tmp_path, {"a.txt": "x\n"})
    with api.Index.open(tmp_path, auto_index=True) as ix:
        out = Tools(ix).call("grep", {"pattern": "x", "path": "a.txt"})
        assert out["status"] == "error" and out["error"]["field"] == "path", out
        assert out["error"]["message"].startswith("grep takes no argument 'path' (did you mean 'paths'?)"), out
        out = Tools(ix).call("glob", {"pattern": "*", "paths": ["a.txt"]})
        assert out["error"]["message"].startswith("glob takes no argument 'paths' (did you mean 'path'?)"), out
        out = Tools(ix).call("search", {"query": "x", "bogus": 1})
        assert out["error"]["field"] == "bogus" and "did you mean" not in out["error"]["message"], out


def test_schemas_say_the_values_each_argument_takes():
    """An agent reads the schema before it calls: the choices and bounds the library
    checks are in it (a `mode` it could only guess; a `limit` of 500 it learns from an
    error), and search's tiers may be given as the number read takes."""
    from ov.mcp import check_args, input_schema

    props = {name: input_schema(name)["properties"] for name in ("search", "find", "grep", "glob", "read")}
    assert props["search"]["mode"]["enum"] == ["list", "context"]
    assert props["search"]["search_type"]["enum"] == ["hybrid", "keywords", "semantic"]
    assert props["find"]["time_field"]["enum"] == ["updated_at", "created_at"]
    assert (props["search"]["limit"]["minimum"], props["search"]["limit"]["maximum"]) == (1, 50)
    assert (props["find"]["threshold"]["minimum"], props["find"]["threshold"]["maximum"]) == (0, 1)
    assert props["read"]["level"] == {"type": "integer", "enum": [0, 1, 2],
                                      "description": props["read"]["level"]["description"]}
    assert props["search"]["level"]["type"] == ["string", "integer"]
    assert "`file:LINE`" in props["read"]["path"]["description"]
    assert props["grep"]["node_limit"]["minimum"] == 1 and props["grep"]["context"]["minimum"] == 0
    assert props["glob"]["level_limit"]["minimum"] == 0
    assert check_args("search", {"query": "q", "level": 2})["level"] == "2"
    assert check_args("find", {"query": "q", "level": "1,2"})["level"] == "1,2"
    for bad in (True, 1.5, ["2"]):
        with pytest.raises(Exception, match="level must be string"):
            check_args("search", {"query": "q", "level": bad})


def test_a_server_on_an_index_whose_vectors_are_coming_adds_them(tmp_path):
    """A first search leaves keyword rows and a worker for the vectors. A server started
    before the worker committed any took the index for a --no-embed one: its watcher's
    catch-up stopped the worker and turned embedding off for good (`find` then said the
    index was built with --no-embed). The server's catch-up now embeds them."""
    from ov.store import Store

    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", str(root), "--no-embed", env=ENV).code == 0
    db = root / ".ov" / "index.db"
    with Store.open(db) as s, s.tx():
        s.set_meta("embed", "on")  # as a first search leaves it: vectors to come, none yet

    async def embedded(s) -> bool:
        cov = (await call(s, "status"))[1]["result"]["coverage"]
        return cov["embedded"] == cov["embeddable"] > 0

    async def scenario(s):
        await _poll(s, embedded, timeout=120)
        return await call(s, "find", {"query": "retry failed uploads"})

    is_error, env = _session(root, scenario)
    assert not is_error and env["result"]["hits"], env
    with Store.open(db) as s:
        assert s.get_meta("embed") == "on"


def test_mcp_with_stdin_closed_is_an_error_before_any_work(tmp_path):
    """`ov mcp <&-` indexed the whole tree, then failed with internal AttributeError."""
    root = make_tree(tmp_path / "t", {"a.md": "# A\n"})
    env = {**os.environ, **ENV}
    env.pop("OV_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "ov", "mcp"], cwd=root, env=env, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert p.returncode == 2 and "standard input is closed" in p.stderr, p.stderr
    assert not (root / ".ov").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_ctrl_c_or_sigterm_ends_the_server_at_once(served, sig):
    """The SDK reads stdin in a thread no signal wakes: after Ctrl-C the server lived on
    until the client wrote again. It now ends within seconds, its journal socket removed."""
    env = {**os.environ, **ENV}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "mcp"], cwd=served, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + STARTUP_S
        err = ""
        while "watching" not in err and time.monotonic() < deadline:
            err += p.stderr.readline()
        assert "watching" in err, err
        p.send_signal(sig)
        p.wait(timeout=15)
        assert p.returncode == 128 + sig, p.returncode
        assert not (served / ".ov" / "journal.sock").exists()
    finally:
        if p.poll() is None:
            p.kill()


def test_a_ranked_result_says_when_the_watcher_has_changes_not_applied(tmp_path):
    """While the server's watcher catches up with the tree, or writes a batch, or waits for
    another indexer, a file changed just now may be missing from the hits with nothing to
    say so (an agent read `hits: []` as "no file says this"): the result says it."""
    from types import SimpleNamespace

    from ov import api
    from ov.mcp import Tools
    from ov.watch import WatchState

    make_tree(tmp_path, {"a.md": "# Tides\n\nThe tide tables.\n"})
    with api.Index.open(tmp_path, auto_index=True) as ix:
        idle = SimpleNamespace(state=WatchState())
        busy = SimpleNamespace(state=WatchState(pending=3))
        walking = SimpleNamespace(state=WatchState(catching_up=True))
        args = {"query": "tide", "search_type": "keywords"}
        assert not any("catching up" in w for w in Tools(ix, idle).call("search", args)["result"]["warnings"])
        got = Tools(ix, busy).call("search", args)["result"]
        assert got["hits"] and any("3 changed path(s)" in w for w in got["warnings"]), got["warnings"]
        got = Tools(ix, walking).call("search", args)["result"]
        assert any("whole tree" in w for w in got["warnings"])
        assert Tools(ix, walking).call("status", {})["result"]["watch"]["catching_up"] is True


def test_a_search_waits_for_unapplied_changes_a_bounded_time_and_says_so(tmp_path, monkeypatch):
    """`_settle`: a batch the watcher was handed and has not written to the keyword rows,
    and queued changes to files the walk would index, are waited for, SETTLE_S at most,
    then counted in the warning. A change to an ignored or binary file (a log written
    every few ms had cost each search a second and a warning) is not, but one to an ignore
    file is; during a pass over the whole tree (minutes on a big one) a search does not
    wait at all."""
    import threading
    from types import SimpleNamespace

    from ov import api, mcp
    from ov.indexer import IndexOptions
    from ov.watch import WatchState

    monkeypatch.setattr(mcp, "SETTLE_S", 3.0)
    make_tree(tmp_path, {"a.md": "# Tides\n\nThe tide tables.\n", ".gitignore": "*.log\n"})
    (tmp_path / ".git").mkdir(exist_ok=True)  # .gitignore counts in a work tree
    args = {"query": "tide", "search_type": "keywords"}

    def watcher(state, queued=()):
        journal = SimpleNamespace(complete=True, handed=5, queued_paths=lambda: list(queued), drain=lambda: None)
        return SimpleNamespace(state=state, journal=journal, stop_event=threading.Event(), root=tmp_path,
                               opts=IndexOptions())

    def timed(w):
        t0 = time.monotonic()
        got = mcp.Tools(ix, w).call("search", args)["result"]
        return time.monotonic() - t0, [x for x in got["warnings"] if "catching up" in x]

    with api.Index.open(tmp_path, auto_index=True) as ix:
        took, said = timed(watcher(WatchState(pending=2)))  # handed 5, none written yet
        assert 3.0 <= took < 10 and said and "2 changed path(s)" in said[0], said
        took, said = timed(watcher(WatchState(), queued=["notes/new.md", "notes/new.md"]))
        assert 3.0 <= took < 10 and said and "1 changed path(s)" in said[0], said
        took, said = timed(watcher(WatchState(), queued=["server.log"] * 40))  # ignored
        assert took < 2.0 and not said, said
        (tmp_path / "app.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(200))  # binary
        took, said = timed(watcher(WatchState(), queued=["app.sqlite"] * 40))
        assert took < 2.0 and not said, said
        # an ignore file is hidden, yet the watcher re-reads what it governs: waited for
        took, said = timed(watcher(WatchState(), queued=["docs/.gitignore"]))
        assert 3.0 <= took < 10 and said and "1 changed path(s)" in said[0], said
        took, said = timed(watcher(WatchState(pending=2, applied=5)))  # written; vectors to come
        assert took < 2.0 and not said, said
        took, said = timed(watcher(WatchState(catching_up=True, pending=2)))
        assert took < 2.0 and "whole tree" in said[0], said
        # 20,000 queued paths (a branch switch): judged within the wait's bound, not all
        monkeypatch.setattr(mcp, "SETTLE_S", 0.5)
        took, said = timed(watcher(WatchState(), queued=[f"d{i % 50}/f{i}.md" for i in range(20000)]))
        assert 0.5 <= took < 2.5 and said, (took, said)


def test_grep_and_glob_answer_while_the_index_is_opened(tmp_path, monkeypatch):
    """The server answers `initialize` at once and opens (on first use builds) its index in
    a thread: grep and glob answer from the files meanwhile, a ranked tool waits a moment,
    then says `index_busy` (retryable), and answers once the index is open."""
    import threading

    from ov import mcp

    monkeypatch.setattr(mcp, "OPEN_WAIT_S", 0.2)
    root = make_tree(tmp_path / "t", FILES)
    gate = threading.Event()

    def work():
        assert gate.wait(60)
        return mcp._open_index(root, watch=False)

    tools = mcp.Tools(root=root, opening=mcp.Opening(work))
    try:
        got = tools.call("grep", {"pattern": "backoff", "files_with_matches": True})
        assert got["status"] == "ok" and got["result"]["paths"] == ["README.md", "src/net.py"], got
        assert tools.call("glob", {"pattern": "**/*.py"})["status"] == "ok"
        busy = tools.call("search", {"query": "retry uploads"})
        assert busy["status"] == "error" and busy["error"]["code"] == "index_busy", busy
        assert busy["error"]["retryable"] and "grep and glob" in busy["error"]["message"]
        assert not (root / ".ov" / "index.db").exists()  # nothing was built while the gate was shut
        gate.set()
        assert tools.opening.wait(120)
        hits = tools.call("search", {"query": "retry uploads", "search_type": "keywords"})
        assert hits["status"] == "ok" and hits["result"]["hits"], hits
    finally:
        gate.set()
        mcp._close(tools)


def _damage_meta(db: Path) -> None:
    """Overwrite the page of the index's meta table, which opening the index reads."""
    import sqlite3

    with sqlite3.connect(db) as c:
        size = c.execute("PRAGMA page_size").fetchone()[0]
        page = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()[0]
    c.close()
    data = bytearray(db.read_bytes())
    data[size * (page - 1):size * page] = b"\xa5" * size
    db.write_bytes(bytes(data))


def test_a_damaged_index_does_not_stop_the_server(tmp_path):
    """A damaged index.db used to end `ov mcp` before it answered `initialize` (the client
    saw a closed pipe). The server starts; search, find, read and status answer the
    damage as their error, grep and glob answer from the files, and the file is left as
    it was for `ov index --full`."""
    import hashlib

    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", str(root), env=ENV).code == 0
    db = root / ".ov" / "index.db"
    _damage_meta(db)
    for side in ("index.db-wal", "index.db-shm"):
        (root / ".ov" / side).unlink(missing_ok=True)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert "damaged" in cli_error(root, "search", "retry")["message"]

    async def scenario(s):
        out = {"grep": await call(s, "grep", {"pattern": "backoff", "files_with_matches": True}),
               "glob": await call(s, "glob", {"pattern": "**/*.md"})}
        for name, args in (("search", {"query": "retry"}), ("status", {}), ("read", {"path": "README.md"})):
            out[name] = await call(s, name, args)
        return out

    got = _session(root, scenario)
    assert got["grep"][0] is False and got["grep"][1]["result"]["paths"] == ["README.md", "src/net.py"]
    assert got["glob"][0] is False and got["glob"][1]["result"]
    for name in ("search", "status", "read"):
        is_error, env = got[name]
        assert is_error and "damaged" in env["error"]["message"], (name, env)
        assert "ov index --full" in env["error"]["message"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_server_on_a_tree_without_an_index_answers_grep_first_then_search(tmp_path):
    """First use through the server: nothing to wait for before `initialize`; grep answers
    at once; search answers `index_busy` (retryable) or hits, never another error."""
    root = make_tree(tmp_path / "t", FILES)

    async def scenario(s):
        grep = await call(s, "grep", {"pattern": "backoff", "files_with_matches": True})
        seen = []
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            is_error, env = await call(s, "search", {"query": "retry uploads", "search_type": "keywords"})
            seen.append(env["error"]["code"] if is_error else "ok")
            if not is_error:
                return grep, env, seen
            assert env["error"]["retryable"], env
            await asyncio.sleep(0.5)
        return grep, None, seen

    grep, env, seen = _session(root, scenario)
    assert not grep[0] and grep[1]["result"]["paths"] == ["README.md", "src/net.py"]
    assert env is not None and env["result"]["hits"], seen
    assert set(seen) <= {"index_busy", "ok"}, seen


def test_a_glob_that_leaves_the_tree_is_refused_without_a_command_line_to_run(tmp_path):
    """The command line's error advises `ov glob '*' /etc`; an agent can run no such thing,
    and the server refuses any path outside its tree."""
    from ov import mcp

    root = make_tree(tmp_path / "t", FILES)
    tools = mcp.Tools(root=root)
    for pattern in ("/etc/*", "../*.py", "src/../../x"):
        got = tools.call("glob", {"pattern": pattern})
        assert got["status"] == "error" and got["error"]["code"] == "invalid_pattern", got
        assert "ov glob" not in got["error"]["message"] and got["error"]["field"] == "pattern"
    assert tools.call("glob", {"pattern": "src/*.py"})["result"]["matches"] == ["src/cache.py", "src/net.py"]


def test_lines_that_are_not_one_valid_message_are_answered(tmp_path):
    """JSON-RPC 2.0 answers what it cannot take: text that is not JSON with -32700, a
    batch or a message with an id that is neither a string nor an integer with -32600
    (id null, or the id when it is one). The SDK's reader dropped such lines and the
    client waited for an answer; a blank line is skipped; the server goes on."""
    make_tree(tmp_path, {"a.md": "# A\n"})
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    lines = [json.dumps(init), '{"jsonrpc":"2.0","method":"notifications/initialized"}',
             '{"jsonrpc":"2.0","id":2,"method":', '[{"jsonrpc":"2.0","id":3,"method":"ping"}]',
             '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '{"jsonrpc":"2.0","id":true,"method":"ping"}',
             '{"id":7,"method":"ping"}', "",
             '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a client\'s own error"}}',
             '{"jsonrpc":"2.0","id":9,"result":{"answer":"to a request"},"extra":1}',
             "[" * 5000 + "]" * 5000,  # nested past the parser: once ended the server
             '{"jsonrpc":"2.0","id":"last","method":"ping"}']
    env = {**os.environ, **ENV}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "mcp", "--no-watch"], cwd=tmp_path, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    got = []
    try:
        p.stdin.write("\n".join(lines) + "\n")
        p.stdin.flush()
        # stdin stays open until the last answer: a client that closes it at once may lose
        # the answers still being written (the SDK ends the session at end of input)
        while not got or got[-1].get("id") != "last":
            line = p.stdout.readline()
            assert line, f"the server ended before its last answer: {got}"
            got.append(json.loads(line))
        p.stdin.close()
        assert p.wait(60) == 0
    finally:
        if p.poll() is None:
            p.kill()
    # the client's responses (an error with id null, a result) are never answered
    assert [m.get("id") for m in got] == [1, None, None, None, None, 7, None, "last"], got
    assert [m["error"]["code"] for m in got[1:7]] == [-32700, -32600, -32600, -32600, -32600, -32700]
    assert "batches" in got[2]["error"]["message"] and "jsonrpc" in got[5]["error"]["message"]
    assert got[-1]["result"] == {}


def test_the_server_opens_the_index_again_once_it_is_repaired(tmp_path, monkeypatch):
    """The damage error names its fix (`ov index --full`); once it has been run, the
    server's next call opens the repaired index instead of repeating the error until a
    restart."""
    from ov import mcp

    monkeypatch.setattr(mcp, "REOPEN_S", 0.0)
    root = make_tree(tmp_path / "t", FILES)
    assert run_inprocess("index", str(root), env=ENV).code == 0
    db = root / ".ov" / "index.db"
    _damage_meta(db)
    tools = mcp.opening_tools(root, watch=False, notice=lambda _m: None)
    try:
        broken = tools.call("search", {"query": "retry", "search_type": "keywords"})
        assert broken["status"] == "error" and "damaged" in broken["error"]["message"], broken
        assert run_inprocess("index", str(root), "--full", env=ENV).code == 0
        fixed = tools.call("search", {"query": "retry", "search_type": "keywords"})
        assert fixed["status"] == "ok" and fixed["result"]["hits"], fixed
    finally:
        mcp._close(tools)


def test_semantic_search_while_the_servers_watcher_is_to_embed_is_busy(tmp_path):
    """Between two stretches of the watcher's embedding no process holds the index, and
    the library took the vectors for ones nobody is adding (`unsupported`, not
    retryable). The server knows its watcher adds them: `index_busy`. (For a query with
    keyword hits, `find` ranks the vectors it computes for them instead.)"""
    from types import SimpleNamespace

    from ov import api
    from ov.indexer import IndexOptions, index_tree
    from ov.mcp import Tools
    from ov.watch import WatchState

    root = make_tree(tmp_path / "t", FILES)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # vectors coming, none yet
    with api.Index.open(root) as ix:
        now = Tools(ix).call("find", {"query": "retry uploads"})
        assert now["status"] == "ok" and now["result"]["coverage"]["computed"] > 0, now
        nobody = Tools(ix).call("find", {"query": "qqxz vvbn"})
        assert nobody["error"]["code"] == "unsupported", nobody
        mine = SimpleNamespace(state=WatchState(), opts=IndexOptions(), unembedded=True)
        got = Tools(ix, mine).call("find", {"query": "qqxz vvbn"})
        assert got["error"]["code"] == "index_busy" and got["error"]["retryable"], got
        got = Tools(ix, mine).call("search", {"query": "qqxz vvbn", "search_type": "semantic"})
        assert got["error"]["code"] == "index_busy", got
        done = SimpleNamespace(state=WatchState(), opts=IndexOptions(), unembedded=False)
        assert Tools(ix, done).call("find", {"query": "qqxz vvbn"})["error"]["code"] == "unsupported"


def test_a_server_of_a_subfolder_says_it_serves_the_index_above(tmp_path):
    """`ov mcp PATH` under a tree with an index serves that index's whole tree (the nearest
    index above, as git finds `.git`), and had said nothing: a grep under `src` found a
    file above it. It says so on stderr; a folder with its own index serves itself."""
    from ov import api, mcp

    root = make_tree(tmp_path / "t", FILES)
    api.index(root, embed=False)
    said: list[str] = []
    ix, watcher = mcp._open_index(root / "src", watch=False, notice=said.append)
    try:
        assert str(ix.root) == str(root) and any(m.startswith(f"serving {root}") for m in said), said
    finally:
        ix.close()
    said.clear()
    ix, _ = mcp._open_index(root, watch=False, notice=said.append)
    ix.close()
    assert not any(m.startswith("serving") for m in said), said


def test_node_limit_is_bounded_through_the_server(tmp_path):
    """`node_limit` 1,000,000 made one 246 MB reply and took the server to 3.7 GB (a review
    on a 263-file tree); the server takes at most MCP_NODE_MAX and says why."""
    from ov import mcp

    root = make_tree(tmp_path / "t", FILES)
    tools = mcp.Tools(root=root)
    for tool, args in (("grep", {"pattern": "."}), ("glob", {"pattern": "**"})):
        got = tools.call(tool, {**args, "node_limit": mcp.MCP_NODE_MAX + 1})
        assert got["status"] == "error" and got["error"]["code"] == "invalid_argument", got
        assert got["error"]["field"] == "node_limit" and f"{mcp.MCP_NODE_MAX:,}" in got["error"]["message"]
        assert tools.call(tool, {**args, "node_limit": mcp.MCP_NODE_MAX})["status"] == "ok"
    for tool in ("grep", "glob"):  # and the tools' schemas say so
        assert mcp.input_schema(tool)["properties"]["node_limit"]["maximum"] == mcp.MCP_NODE_MAX
