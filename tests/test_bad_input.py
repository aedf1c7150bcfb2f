"""Bad input catalogue (issue 7): every command, fed malformed flags, bad patterns, bad
text, bad paths and broken indexes, exits 2 with the right error code and one clear line
on stderr (or the JSON error on stdout), never a traceback, never a hang, and never
changes the index.

Each case runs in a real process (argv as bytes, so text that is not UTF-8 arrives as
the shell would pass it; a timeout and an address-space cap on every run) against its
own copy of one indexed tree, and again in process with `-o json`. Arguments holding a
NUL byte cannot cross execve, so those cases run in process only. The index is compared
as rows (files, chunks, meta, schema version), not as bytes, because a WAL checkpoint
may rewrite the file without changing what it holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess

TIMEOUT_S = 60
ENV = {"OV_EMBEDDER": "hash"}
INPROC_TIMEOUT_S = 20
MEMORY_CAP = 3 << 30  # a pattern that allocates without bound fails instead of swapping

FILES = {
    "a.py": '"""Parse things."""\n\ndef foo():\n    return 1\n',
    "b.md": "# Title\n\nhello world, foo bar\n",
    "sub/c.py": "x = foo\n",
    "long.txt": "a" * 40 + "!\n",
    "-dash.txt": "foo with a dash\n",
}


def index_state(db: Path) -> str:
    """A digest of what the index holds: its rows, not its bytes. An index that is not a
    readable SQLite file is digested as bytes (index.db and its WAL)."""
    h = hashlib.sha256()
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            h.update(repr(con.execute("PRAGMA user_version").fetchone()).encode())
            for sql in ("SELECT path, size, mtime_ns, hash, tags FROM files ORDER BY path",
                        "SELECT f.path, c.level, c.seq, c.start, c.end, c.text, c.hash, c.embedded FROM chunks c "
                        "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.level, c.seq",
                        "SELECT key, value FROM meta ORDER BY key",
                        "SELECT session, turn, uri FROM sessions ORDER BY session, turn, uri"):
                for row in con.execute(sql):
                    h.update(repr(row).encode("utf-8", "backslashreplace"))
        finally:
            con.close()
        return "rows:" + h.hexdigest()
    except sqlite3.DatabaseError:
        for p in (db, db.with_name(db.name + "-wal")):
            if p.exists():
                h.update(p.read_bytes())
        return "bytes:" + h.hexdigest()


def checkpoint(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


# ---- broken indexes -------------------------------------------------------------------------


def _not_sqlite(db: Path) -> None:
    db.write_bytes(b"this is a text file, not an SQLite database\n" * 4)


def _newer_schema(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version=99")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def _truncated(db: Path) -> None:
    with open(db, "r+b") as f:
        f.truncate(os.path.getsize(db) // 2)


def _header_only(db: Path) -> None:
    with open(db, "r+b") as f:
        f.truncate(60)


BREAK = {"not_sqlite": _not_sqlite, "newer": _newer_schema, "truncated": _truncated,
         "header_only": _header_only}


# ---- the catalogue ------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    args: list  # str or bytes
    code: str
    db: str | None = None  # a BREAK key
    env: dict = field(default_factory=dict)
    unset: tuple = ()
    proc: bool = False  # (also) run in a real process, text mode
    proc_only: bool = False  # too slow or unsafe to run in this process: both modes there
    text_only: bool = False  # the case is about the output flag itself
    inproc_only: bool = False  # holds a NUL byte: cannot cross execve
    max_s: float | None = None  # a deadline case must end soon after its limit


NO_MODEL = dict(env={"OV_MODEL": "/nonexistent/model.onnx"}, unset=("OV_EMBEDDER",))
CURSOR_OTHER = base64.urlsafe_b64encode(b'{"g":"0","k":"0000","o":10}').decode().rstrip("=")
CURSOR_NOT_JSON = base64.urlsafe_b64encode(b"not json at all").decode().rstrip("=")

CASES = [
    # malformed flags
    Case("unknown-flag-search", ["search", "foo", "--bogus"], "invalid_argument"),
    Case("unknown-short-flag-grep", ["grep", "foo", "-Z"], "invalid_argument"),
    Case("missing-glob-pattern", ["glob"], "invalid_argument"),
    Case("missing-query", ["search"], "invalid_argument", proc=True),
    Case("extra-argument-status", ["status", "extra"], "invalid_argument"),
    Case("limit-not-a-number", ["search", "foo", "-n", "x"], "invalid_argument"),
    Case("limit-zero", ["search", "foo", "-n", "0"], "invalid_argument"),
    Case("limit-too-big", ["find", "foo", "-n", "51"], "invalid_argument"),
    Case("threshold-above-one", ["search", "foo", "--threshold", "2"], "invalid_argument"),
    Case("threshold-not-a-number", ["search", "foo", "--threshold", "high"], "invalid_argument"),
    Case("negative-context", ["grep", "foo", "-A", "-1"], "invalid_argument"),
    Case("node-limit-zero", ["grep", "foo", "--node-limit", "0"], "invalid_argument"),
    Case("negative-level-limit", ["glob", "*", "--level-limit", "-1"], "invalid_argument"),
    Case("unknown-output-format", ["search", "foo", "-o", "xml"], "invalid_argument", text_only=True),
    Case("unknown-colour", ["grep", "foo", "--color", "sometimes"], "invalid_argument"),
    Case("count-and-files", ["grep", "foo", "-c", "-l"], "invalid_argument"),
    Case("unknown-glob-field", ["glob", "*", "-f", "bogus"], "invalid_argument"),
    Case("context-option-in-list-mode", ["search", "foo", "--max-tokens", "5"], "invalid_argument"),
    Case("unknown-mode", ["search", "foo", "--mode", "bogus"], "invalid_argument"),
    Case("negative-budget", ["search", "foo", "--mode", "context", "--max-tokens", "-1"],
         "invalid_argument"),
    Case("read-level-5", ["read", "a.py", "--level", "5"], "invalid_argument"),
    Case("search-level-3", ["search", "foo", "--level", "0,3"], "invalid_argument"),
    Case("unknown-time-field", ["search", "foo", "--time-field", "x"], "invalid_argument"),
    Case("unknown-file-type", ["search", "foo", "-t", "nosuchtype"], "invalid_argument"),
    Case("index-negative-filesize", ["index", ".", "--max-filesize", "-1"], "invalid_argument"),
    # invalid regex and globs
    Case("regex-unclosed-group", ["grep", "("], "invalid_pattern"),
    Case("regex-bad-range", ["grep", "[z-a]"], "invalid_pattern"),
    Case("regex-multiple-repeat", ["grep", "a**"], "invalid_pattern"),
    Case("regex-trailing-backslash", ["grep", "\\"], "invalid_pattern"),
    Case("regex-huge-repeat", ["grep", "a{99999999}"], "invalid_pattern", proc_only=True),
    Case("glob-unclosed-bracket", ["glob", "["], "invalid_pattern"),
    Case("glob-unclosed-brace", ["glob", "{a,"], "invalid_pattern"),
    Case("glob-empty", ["glob", ""], "invalid_pattern"),
    Case("grep-bad-glob-filter", ["grep", "foo", "-g", "**/["], "invalid_pattern"),
    # catastrophic backtracking: ends with deadline_exceeded, not a hang
    Case("regex-catastrophic", ["grep", "(a|a)+$", "long.txt"], "deadline_exceeded",
         proc_only=True, max_s=60),
    # NUL bytes and text that is not UTF-8
    Case("nul-in-hybrid-query", ["search", "foo\x00bar"], "invalid_argument", inproc_only=True),
    Case("nul-in-keywords-query", ["search", "foo\x00bar", "--search-type", "keywords"],
         "invalid_argument", inproc_only=True),
    Case("nul-in-find-query", ["find", "\x00"], "invalid_argument", inproc_only=True),
    Case("nul-in-read-path", ["read", "a.py\x00"], "invalid_path", inproc_only=True),
    Case("not-utf8-hybrid-query", ["search", b"caf\xff\xfe"], "invalid_argument", proc=True),
    Case("not-utf8-keywords-query", ["search", b"caf\xff", "--search-type", "keywords"],
         "invalid_argument", proc=True),
    Case("not-utf8-context-query", ["search", b"caf\xff", "--mode", "context"], "invalid_argument", proc=True),
    Case("not-utf8-grep-pattern", ["grep", b"caf\xff"], "invalid_argument", proc=True),
    Case("not-utf8-read-path", ["read", b"\xff.py"], "invalid_argument", proc=True),
    Case("not-utf8-tag-value", ["tag", "a.py", b"k=\xff"], "invalid_argument", proc=True),
    Case("not-utf8-tag-filter", ["search", "foo", "--tags", b"k=\xff"], "invalid_argument", proc=True),
    # over-long queries (the message names the limit)
    Case("query-too-many-chars", ["search", "x" * 9000], "query_too_long", proc=True),
    Case("find-query-too-many-chars", ["find", "y" * 9000], "query_too_long"),
    Case("context-query-too-many-chars", ["search", "z" * 9000, "--mode", "context"], "query_too_long"),
    Case("query-too-many-tokens", ["search", "word " * 300, "--search-type", "semantic"],
         "query_too_long"),
    Case("empty-query", ["search", "   "], "invalid_argument"),
    # only invisible or control characters: ten junk hits and exit 0 before (a Go tree's review)
    Case("zero-width-query", ["search", "\u200b"], "invalid_argument"),
    Case("control-query", ["find", "\x01\x02"], "invalid_argument"),
    Case("bom-and-space-query", ["search", "\ufeff \u200d"], "invalid_argument"),
    # unknown search types
    Case("unknown-search-type", ["search", "foo", "--search-type", "bogus"], "invalid_argument"),
    Case("empty-search-type", ["search", "foo", "--search-type", ""], "invalid_argument"),
    Case("search-type-context", ["search", "foo", "--search-type", "context"], "invalid_argument"),
    Case("unknown-search-type-context", ["search", "foo", "--mode", "context", "--search-type", "vector"],
         "invalid_argument"),
    # bad --after / --before
    Case("after-word", ["search", "foo", "--after", "yesterday"], "invalid_argument"),
    Case("after-impossible-date", ["search", "foo", "--after", "2024-13-45"], "invalid_argument"),
    Case("before-negative", ["search", "foo", "--before", "-5d"], "invalid_argument"),
    Case("after-unknown-unit", ["find", "foo", "--after", "7x"], "invalid_argument"),
    Case("after-empty", ["search", "foo", "--after", ""], "invalid_argument"),
    # bad tags
    Case("tag-filter-bare-word", ["search", "foo", "--tags", "bad"], "invalid_argument"),
    Case("tag-bare-word", ["tag", "a.py", "k"], "invalid_argument"),
    Case("tag-empty-key", ["tag", "a.py", "=v"], "invalid_argument"),
    Case("tag-unknown-mode", ["tag", "a.py", "k=v", "--mode", "bogus"], "invalid_argument"),
    Case("grep-tag-filter-bare-word", ["grep", "foo", "--tags", "bad"], "invalid_argument"),
    # bad cursors
    Case("cursor-garbage", ["search", "foo", "--cursor", "!!!"], "invalid_argument"),
    Case("cursor-not-json", ["search", "foo", "--cursor", CURSOR_NOT_JSON], "invalid_argument"),
    Case("cursor-other-query", ["search", "foo", "--cursor", CURSOR_OTHER], "invalid_argument"),
    Case("cursor-empty", ["search", "foo", "--cursor", ""], "invalid_argument"),
    # paths with ..
    Case("dotdot-uri", ["search", "foo", "-u", "../x"], "invalid_path"),
    # grep and glob search any folder on disk (issue 18): a missing one is not_found
    Case("dotdot-inside-grep", ["grep", "foo", "sub/../../x"], "not_found"),
    Case("dotdot-glob", ["glob", "*", "../no-such-folder"], "not_found"),
    Case("dotdot-read", ["read", "../a.py"], "invalid_path", proc=True),
    Case("dotdot-tag", ["tag", "../a.py", "k=v"], "invalid_path"),
    Case("dotdot-exclude", ["search", "foo", "--exclude-uri", "../x"], "invalid_path"),
    # absolute paths outside the root
    Case("absolute-uri", ["search", "foo", "-u", "/etc"], "invalid_path"),
    # grep and glob search any folder on disk (issue 18): a missing one is not_found
    Case("absolute-grep", ["grep", "root", "/no/such/file"], "not_found", proc=True),
    Case("absolute-glob", ["glob", "*", "/no/such/folder"], "not_found"),
    Case("absolute-read", ["read", "/etc/passwd"], "invalid_path"),
    Case("absolute-tag", ["tag", "/etc/passwd", "k=v"], "invalid_path"),
    Case("absolute-context-exclude", ["search", "foo", "--mode", "context", "--exclude-uri", "/etc"],
         "invalid_path"),
    # names beginning with '-'
    Case("dash-name-as-option", ["read", "-x"], "invalid_argument"),
    Case("dash-name-missing", ["read", "--", "-nosuch.txt"], "not_found"),
    Case("dash-name-tag-missing", ["tag", "--", "-nosuch.txt", "k=v"], "not_found"),
    Case("dash-name-grep-missing", ["grep", "foo", "--", "-nosuch.txt"], "not_found"),
    # names with newlines
    Case("newline-read", ["read", "a\nb.py"], "not_found", proc=True),
    Case("newline-grep", ["grep", "foo", "a\nb.py"], "not_found"),
    Case("newline-tag", ["tag", "a\nb.py", "k=v"], "not_found"),
    # a database that is not SQLite / newer / truncated
    Case("not-sqlite-status", ["status"], "invalid_argument", db="not_sqlite"),
    Case("not-sqlite-search", ["search", "foo"], "invalid_argument", db="not_sqlite", proc=True),
    Case("not-sqlite-read", ["read", "a.py"], "invalid_argument", db="not_sqlite"),
    Case("not-sqlite-index", ["index", "."], "invalid_argument", db="not_sqlite"),
    Case("newer-schema-status", ["status"], "unsupported", db="newer"),
    Case("newer-schema-find", ["find", "foo"], "unsupported", db="newer", proc=True),
    Case("newer-schema-index", ["index", "."], "unsupported", db="newer"),
    Case("newer-schema-tag", ["tag", "a.py", "k=v"], "unsupported", db="newer"),
    Case("truncated-status", ["status"], "invalid_argument", db="truncated"),
    Case("truncated-keywords", ["search", "foo", "--search-type", "keywords"], "invalid_argument",
         db="truncated"),
    Case("truncated-index", ["index", "."], "invalid_argument", db="truncated", proc=True),
    Case("header-only-manifest", ["manifest"], "invalid_argument", db="header_only"),
    Case("db-flag-not-sqlite", ["status", "--db", "a.py"], "invalid_path"),  # not an index: never "damaged"
    Case("db-flag-missing", ["search", "foo", "--db", "/nonexistent/index.db"], "not_found"),
    # a missing model file, with the real embedder asked for
    Case("no-model-find", ["find", "foo"], "not_found", proc_only=True, **NO_MODEL),
    Case("no-model-hybrid", ["search", "foo"], "not_found", proc_only=True, **NO_MODEL),
    Case("no-model-context", ["search", "foo", "--mode", "context"], "not_found", proc_only=True,
         **NO_MODEL),
    Case("no-model-index-full", ["index", ".", "--full"], "not_found", proc_only=True, **NO_MODEL),
    # index targets
    Case("index-missing-folder", ["index", "/nonexistent/folder"], "not_found"),
    Case("index-a-file", ["index", "a.py"], "invalid_path"),
]


def test_catalogue_is_large_and_covers_every_command():
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
    commands = {c.args[0] for c in CASES if c.args}
    assert commands >= {"index", "status", "find", "search", "grep", "glob", "read", "tag", "manifest"}


# ---- running ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = make_tree(tmp_path_factory.mktemp("bad") / "tree", FILES)
    r = run_inprocess("index", ".", cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.code == 0, r.err
    checkpoint(root / ".ov" / "index.db")
    return root


def _copy(template: Path, dest: Path, case: Case) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    if case.db:
        BREAK[case.db](dest / ".ov" / "index.db")
    return dest


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str
    seconds: float
    before: str
    after: str


def _run_proc(case: Case, root: Path, json_mode: bool) -> Outcome:
    db = root / ".ov" / "index.db"
    before = index_state(db)
    env = dict(os.environ, OV_EMBEDDER="hash")
    env.pop("OV_DEBUG", None)
    for k in case.unset:
        env.pop(k, None)
    env.update(case.env)
    args = _with_json(case.args) if json_mode else case.args
    argv = [sys.executable, "-m", "ov", *[a if isinstance(a, bytes) else os.fsencode(a) for a in args]]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=root, env=env, capture_output=True, timeout=case.max_s or TIMEOUT_S,
                           preexec_fn=_cap_memory)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, e.stdout or b"", e.stderr or b""
    secs = time.monotonic() - t0
    return Outcome(rc, out.decode("utf-8", "backslashreplace"), err.decode("utf-8", "backslashreplace"),
                   secs, before, index_state(db))


@pytest.fixture(scope="module")
def proc_results(template, tmp_path_factory) -> dict[tuple[str, str], Outcome]:
    """The process cases in text mode (and the process-only ones in JSON mode), four at a
    time; the slowest (the deadline case) starts first."""
    base = tmp_path_factory.mktemp("bad-runs")
    jobs = []
    for c in sorted(CASES, key=lambda c: c.max_s is None):
        if c.proc or c.proc_only:
            jobs.append((c, "text", 0))
        if c.proc_only:
            jobs.append((c, "json", 1))

    def one(job):
        c, mode, json_mode = job
        root = _copy(template, base / f"{c.id}-{mode}", c)
        return (c.id, mode), _run_proc(c, root, json_mode)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, jobs))


def _with_json(args: list) -> list:
    """`-o json` right after the command, so it lands before any `--`."""
    return [*args[:1], "-o", "json", *args[1:]]


def _check_text(case: Case, rc, out: str, err: str) -> None:
    assert "Traceback" not in err
    assert rc == 2, f"exit {rc}; stdout {out[:300]!r}; stderr {err[:300]!r}"
    assert out == "", f"stdout should be empty on an error, got {out[:300]!r}"
    lines = err.splitlines()
    assert len(lines) == 1, f"want one line on stderr, got {lines!r}"
    assert lines[0].startswith(f"ov: error[{case.code}]: "), lines[0]
    assert len(lines[0]) > len(f"ov: error[{case.code}]: ") + 5  # says something
    if case.code == "query_too_long":
        assert any(ch.isdigit() for ch in lines[0]), "the message names the limit"


def _check_json(case: Case, rc, out: str, err: str) -> None:
    assert "Traceback" not in err
    assert rc == 2, f"exit {rc}; stdout {out[:300]!r}; stderr {err[:300]!r}"
    data = json.loads(out)
    assert data["status"] == "error"
    e = data["error"]
    assert e["code"] == case.code, e
    assert isinstance(e["message"], str) and e["message"]
    assert e["retryable"] is (case.code == "index_busy")
    assert "Traceback" not in e["message"]
    e["message"].encode("utf-8")  # no surrogate escapes leak into the JSON


class _Hang(Exception):
    pass


def _inprocess(args: list, root: Path):
    """Run in this process with an alarm, so a hang fails the test instead of the run."""
    def ring(signum, frame):
        raise _Hang(f"no answer within {INPROC_TIMEOUT_S}s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(INPROC_TIMEOUT_S)
    try:
        return run_inprocess([os.fsdecode(a) if isinstance(a, bytes) else a for a in args], cwd=root,
                             env={"OV_EMBEDDER": "hash"})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_text_mode(case: Case, template, tmp_path, proc_results):
    if case.proc or case.proc_only:
        res = proc_results[(case.id, "text")]
        assert res.rc is not None, f"hung: no exit within {case.max_s or TIMEOUT_S}s"
        _check_text(case, res.rc, res.out, res.err)
        if case.max_s is not None:
            assert res.seconds < case.max_s, f"took {res.seconds:.1f}s"
        assert res.after == res.before, "the index changed"
    if not case.proc_only:
        root = _copy(template, tmp_path / "t", case)
        db = root / ".ov" / "index.db"
        before = index_state(db)
        r = _inprocess(case.args, root)
        _check_text(case, r.code, r.out, r.err)
        assert index_state(db) == before, "the index changed"


JSON_CASES = [c for c in CASES if not c.text_only]


@pytest.mark.parametrize("case", JSON_CASES, ids=[c.id for c in JSON_CASES])
def test_json_mode(case: Case, template, tmp_path, proc_results):
    if case.proc_only:
        res = proc_results[(case.id, "json")]
        assert res.rc is not None, f"hung: no exit within {case.max_s or TIMEOUT_S}s"
        _check_json(case, res.rc, res.out, res.err)
        assert res.after == res.before, "the index changed"
        return
    root = _copy(template, tmp_path / "t", case)
    db = root / ".ov" / "index.db"
    before = index_state(db)
    r = _inprocess(_with_json(case.args), root)
    _check_json(case, r.code, r.out, r.err)
    assert r.err == ""  # the error is on stdout; nothing else is said
    assert index_state(db) == before, "the index changed"


def test_nested_quantifier_on_a_long_line_answers_promptly(template, tmp_path):
    """`(a+)+$` is the classic catastrophic pattern; the regex engine must either answer
    (here: no match, exit 1) or stop at the deadline, never hang."""
    root = _copy(template, tmp_path / "t", Case("x", [], ""))
    (root / "long.txt").write_text("a" * 1000 + "!\n")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "ov", "grep", "(a+)+$", "long.txt"], cwd=root,
                       env=dict(os.environ, OV_EMBEDDER="hash"), capture_output=True, text=True,
                       timeout=TIMEOUT_S, preexec_fn=_cap_memory)
    assert time.monotonic() - t0 < 30
    assert "Traceback" not in p.stderr
    assert p.returncode in (1, 2)
    if p.returncode == 2:
        assert p.stderr.startswith("ov: error[deadline_exceeded]: ")
    else:
        assert p.stdout == "" and p.stderr == ""


def test_a_file_name_that_is_not_utf8_does_not_stop_the_index(tmp_path):
    """A name the file system allows but UTF-8 does not (Linux names are bytes): the run
    indexes everything else and says which file it left out, as grep and glob list it."""
    root = make_tree(tmp_path / "t", {"ok.txt": "hello there\n"})
    with open(os.fsencode(root) + b"/bad\xffname.txt", "wb") as f:
        f.write(b"hello again\n")
    p = subprocess.run([sys.executable, "-m", "ov", "index", "."], cwd=root,
                       env=dict(os.environ, OV_EMBEDDER="hash"), capture_output=True, text=True,
                       timeout=TIMEOUT_S)
    assert "Traceback" not in p.stderr
    assert p.returncode == 0, p.stderr
    assert "bad" in p.stderr  # the file left out is named
    r = run_inprocess("search", "hello", "--search-type", "keywords", "-o", "json", cwd=root, env=ENV)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["ok.txt"]


def test_a_usage_error_names_its_argument(tmp_path):
    """`-n abc`, `--timeout abc` or a missing query gave field null, where every other
    error names the argument a script should fix."""
    from conftest import run_inprocess

    for args, field in ((["search", "x", "-n", "abc"], "limit"), (["grep", "--timeout", "abc", "x"], "timeout"),
                        (["search"], "query"), (["read", "a.md", "--level", "x"], "level")):
        r = run_inprocess(*args, "-o", "json", cwd=tmp_path, env={"OV_EMBEDDER": "hash"})
        assert r.code == 2 and r.json["error"]["field"] == field, (args, r.out)
    r = run_inprocess("grep", "--nosuch", "x", "-o", "json", cwd=tmp_path)
    assert r.code == 2 and r.json["error"]["field"] is None, r.out  # about no argument


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_a_bad_timeout_names_the_flag_not_an_inner_name(tmp_path, ov, value):
    """`ov grep --timeout 0` named its field `deadline_s`, a parameter a script never
    sees; `ov mcp` says `timeout`, so both do."""
    make_tree(tmp_path, {"a.txt": "foo\n"})
    r = ov("grep", "foo", "--timeout", value, "-o", "json", cwd=tmp_path)
    err = r.json["error"]
    assert r.code == 2 and err["code"] == "invalid_argument" and err["field"] == "timeout", err
    assert "deadline" not in err["message"]


def test_a_misspelt_embedder_hook_is_refused_not_read_as_the_model(tmp_path, ov):
    """`OV_EMBEDDER=bogus` ran the real model without a word."""
    make_tree(tmp_path, {"a.md": "# Bread\n\nbake bread\n"})
    assert ov("index", ".", cwd=tmp_path).code == 0
    r = ov("find", "bake bread", "-o", "json", cwd=tmp_path, env={"OV_EMBEDDER": "bogus"})
    err = r.json["error"]
    assert r.code == 2 and err["code"] == "invalid_argument" and err["field"] == "OV_EMBEDDER", err


@pytest.mark.model
def test_a_tokenizer_file_that_does_not_load_is_the_users_value_not_a_bug(tmp_path, ov):
    """`OV_TOKENIZER` naming a file that is not a tokenizer was `internal` ("a bug")."""
    make_tree(tmp_path, {"a.md": "# Bread\n\nbake bread\n"})
    bad = tmp_path / "tok.json"
    bad.write_text("not json\n")
    r = ov("find", "bake bread", "-o", "json", cwd=tmp_path, env={"OV_TOKENIZER": str(bad), "OV_BACKGROUND": "0"})
    err = r.json["error"]
    assert r.code == 2 and err["code"] == "invalid_argument" and err["field"] == "OV_TOKENIZER", err
    assert str(bad) in err["message"]


def test_a_warning_shows_a_names_bytes_as_error_messages_do(tmp_path):
    """A warning naming a file whose name is not UTF-8 was written `no\\udcff` on stderr and
    carried a lone surrogate in JSON `warnings`, which a strict reader refuses; errors and
    `ov status` wrote the same byte `\\xff`. Warnings are messages: `\\xff` everywhere."""
    import subprocess  # noqa: PLC0415

    root = tmp_path / "t"
    root.mkdir()
    (root / "ok.txt").write_text("hello there\n")
    (root / os.fsdecode(b"bin\xffnul.dat")).write_bytes(b"hello\n" + b"a" * 70_000 + b"\n\x00")
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    for fmt in ("text", "json", "jsonl"):
        r = subprocess.run([sys.executable, "-m", "ov", "grep", "hello", ".", b"no\xff", "-o", fmt],
                           cwd=root, capture_output=True, env=env)
        assert r.returncode == 2, r
        if fmt == "text":
            assert r.stderr.decode("utf-8") == "ov: warning: no\\xff: no such file or folder\n"
            continue
        doc = json.loads(r.stdout.splitlines()[-1]) if fmt == "jsonl" else json.loads(r.stdout)["result"]
        assert sorted(doc["warnings"]) == ["bin\\xffnul.dat: WARNING: stopped searching binary file after "
                                           'match (found "\\0" byte around offset 70007)',
                                           "no\\xff: no such file or folder"], doc
        json.dumps(doc["warnings"], ensure_ascii=False).encode("utf-8")  # no lone surrogate
