"""`ov grep`, `ov glob`, `ov find` and `ov search` (list mode) start without Typer
(`ov.cli.fast.fast`): the parameters it hands the commands must be exactly those the Typer
app hands them, for every form of argument click accepts, and whatever it does not fully
understand (help, usage errors, context mode, an environment variable click reads) must go
to the Typer app."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import imported_by
from ov.cli import app as cli
from ov.cli import fast as console

VALID = [
    ["grep", "foo"],
    ["grep", "foo", "a", "b"],
    ["grep", "-i", "foo"],
    ["grep", "-iwF", "foo"],
    ["grep", "-A3", "-B", "2", "--context=4", "foo"],
    ["grep", "foo", "-C", "1", "src"],  # options after arguments
    ["grep", "-g", "*.py", "--glob", "!t/*", "-g=x", "foo"],  # -g=x: the value is "=x"
    ["grep", "-t", "py", "--type=md", "foo"],
    ["grep", "--exclude-uri", "a", "--exclude-uri", "b", "foo"],
    ["grep", "--hidden", "--no-hidden", "foo"],  # the last wins
    ["grep", "--no-hidden", "--hidden", "foo"],
    ["grep", "--node-limit", "5", "--node-limit", "7", "foo"],
    ["grep", "--max-depth", "2", "foo"],
    ["grep", "--level-limit=3", "foo"],
    ["grep", "--tags", "k=v", "--tags", "a=b", "foo"],
    ["grep", "-c", "foo"],
    ["grep", "-l", "-n", "foo"],
    ["grep", "--max-columns", "80", "foo"],
    ["grep", "--no-index", "--no-ignore", "-U", "foo"],
    ["grep", "-ojson", "foo"],
    ["grep", "-o", "jsonl", "--color", "never", "foo"],
    ["grep", "--json", "foo"],
    ["grep", "-g", "--hidden", "foo"],  # a value is taken whatever it looks like
    ["grep", "-F", "-", "path"],  # "-" alone is an argument
    ["grep", "--", "-foo", "-x"],
    ["grep", "-i", "--", "--help"],
    ["grep", "-A", "-1", "foo"],  # negative: the command refuses it, not the parser
    ["grep", "--node-limit", " 12 ", "foo"],
    ["grep", "caf\udce9", "dir\udcff"],  # argv bytes that are not UTF-8
    ["glob", "*.py"],
    ["glob", "**/*.py", "src"],
    ["glob", "-i", "-f", "name,size", "*.PY"],
    ["glob", "--simple", "--fields=path", "x", "--hidden"],
    ["glob", "--exclude-uri", "a", "--tags", "k=v", "-o", "json", "*"],
    ["glob", "--level-limit", "2", "--node-limit", "3", "--", "-weird"],
    ["find", "x"],
    ["find", "parse args", "-n", "5", "--threshold", "0.25", "-o", "json"],
    ["find", "q", "--threshold=1e-3", "-t", "py", "--type", ".md", "-u", "src", "--uri=docs"],
    ["find", "q", "--after", "7d", "--before", "2024-05-01", "--time-field", "created_at"],
    ["find", "q", "--db", "some/where/index.db", "--no-auto-index", "--explain", "--read-content"],
    ["find", "q", "-L", "0,1", "--all-chunks", "--exclude-uri", "a", "--cursor", "abc"],
    ["search", "x"],
    ["search", "q", "--search-type", "keywords", "-n5", "--tags", "k=v", "--tags", "a=b"],
    ["search", "q", "--mode", "list", "--json", "--color", "never"],
    ["search", "--db=x.db", "--", "-q"],
    ["search", "q", "--threshold", " .5 ", "--limit", "7", "--node-limit", "9"],
]

DECLINED = [
    [],
    ["index", "."],
    ["status"],
    ["search", "q", "--mode", "context"],  # context mode stays Typer's
    ["search", "q", "--max-tokens", "100"],  # (an error outside context mode: Typer's)
    ["search", "q", "--mode", "nope"],
    ["find", "q", "--threshold", "x"],
    ["find"],
    ["search", "a", "b"],
    ["grep"],  # no pattern
    ["grep", "-h"],
    ["grep", "--help", "x"],
    ["grep", "x", "--no-such-flag"],
    ["grep", "-Q", "x"],
    ["grep", "-iQ", "x"],
    ["grep", "-A", "x", "foo"],  # not a number
    ["grep", "--node-limit=1.5", "x"],
    ["grep", "x", "-A"],  # a missing value
    ["grep", "--hidden=yes", "x"],  # a flag takes no value
    ["grep", "--ignore", "x"],  # no prefixes of long names
    ["glob"],
    ["glob", "a", "b", "c"],  # one argument too many
    ["glob", "--help"],
    ["glob", "-f"],
]


def _captured(monkeypatch) -> list[tuple[str, dict]]:
    calls: list[tuple[str, dict]] = []

    def grab(name):
        def command(**kw):
            calls.append((name, kw))
            return 0
        return command

    for mod in (cli, console):
        monkeypatch.setattr(mod, "grep_command", grab("grep"))
        monkeypatch.setattr(mod, "glob_command", grab("glob"))
        monkeypatch.setattr(mod, "search_command", grab("search"))
    return calls


def _norm(kw: dict) -> dict:
    # Typer hands a repeatable option a list (or None); compare as lists.
    return {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}


@pytest.mark.parametrize("argv", VALID, ids=" ".join)
def test_fast_parse_equals_typer(argv, monkeypatch):
    calls = _captured(monkeypatch)
    assert console.fast(argv) == 0
    assert cli.typer_main(argv) == 0
    (fast_name, fast_kw), (typer_name, typer_kw) = calls
    assert fast_name == typer_name == ("search" if argv[0] == "find" else argv[0])
    assert _norm(fast_kw) == _norm(typer_kw)


@pytest.mark.parametrize("argv", DECLINED, ids=lambda a: " ".join(a) or "(none)")
def test_fast_path_declines_what_typer_must_answer(argv, monkeypatch):
    calls = _captured(monkeypatch)
    assert console.fast(argv) is None
    assert calls == []


def test_an_environment_variable_click_reads_sends_the_line_to_typer(monkeypatch):
    calls = _captured(monkeypatch)
    monkeypatch.setenv("OV_DB", "elsewhere/index.db")
    assert console.fast(["find", "q"]) is None
    assert console.fast(["find", "q", "--db", "x.db"]) == 0  # the flag wins over OV_DB
    monkeypatch.delenv("OV_DB")
    assert console.fast(["find", "q"]) == 0
    assert [c[0] for c in calls] == ["search", "search"]


def test_a_declined_line_still_gets_typers_answer(ov):
    r = ov("grep", "-A", "x", "foo")
    assert r.code == 2
    assert r.err.startswith("ov: error[invalid_argument]: Invalid value for '-A' / '--after-context'")
    r = ov("grep", "--help")
    assert r.code == 0 and "--fixed-strings" in r.out


def test_grep_glob_and_search_start_without_typer(tree):
    """The point of the fast path: these commands import neither typer nor click."""
    t = tree({"a.txt": "foo\n"})
    subprocess.run([sys.executable, "-m", "ov", "index", "--no-embed", "--no-progress"], cwd=t,
                   check=True, capture_output=True, timeout=120)
    for args in (["grep", "foo"], ["glob", "*.txt"], ["search", "--search-type", "keywords", "foo"]):
        r, imported = imported_by(args, t)
        assert r.code == 0 and r.out.startswith("a.txt"), r.err[-500:]
        assert not {m for m in imported if m.split(".")[0] in ("typer", "click")}
        assert "ov.cli.fast" in imported and "ov.cli.app" not in imported
