"""The CLI builds only the command a run names (`ov.cli.app._app_for`): it must answer exactly
as the whole app does — help, usage errors and exit codes — for every command."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ov.cli import app as cli

COMMANDS = [c.name for c in cli.app.registered_commands]


def _run(app, argv: list[str]) -> tuple[int, str, str]:
    """Run a Typer app the way `cli.main` does, capturing what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rv = app(args=argv, prog_name="ov", standalone_mode=False)
            code = rv if isinstance(rv, int) else 0
        except cli._EXIT as e:
            code = e.exit_code
        except cli._UsageError as e:
            code, msg = 2, e.format_message()
            err.write(msg)
    return code, out.getvalue(), err.getvalue()


def test_every_command_is_registered_by_name():
    assert sorted(COMMANDS) == sorted({"index", "status", "grep", "glob", "find", "search", "read",
                                       "tag", "manifest", "doctor", "mcp"})


@pytest.mark.parametrize("name", COMMANDS)
def test_one_command_app_prints_the_same_help(name):
    one = cli._app_for([name, "--help"])
    assert one is not cli.app
    assert [c.name for c in one.registered_commands] == [name]
    assert _run(one, [name, "--help"]) == _run(cli.app, [name, "--help"])


@pytest.mark.parametrize("argv", [["grep"], ["glob", "--no-such-flag", "x"], ["find", "-n"],
                                  ["search", "q", "--search-type"]])
def test_one_command_app_gives_the_same_usage_errors(argv):
    code, _, err = _run(cli._app_for(argv), argv)
    assert code == 2 and err
    whole_code, _, whole_err = _run(cli.app, argv)
    assert (code, err) == (whole_code, whole_err)


@pytest.mark.parametrize("argv", [[], ["--help"], ["-h"], ["nosuch"], ["GREP"]])
def test_no_command_or_an_unknown_one_gets_the_whole_app(argv):
    assert cli._app_for(argv) is cli.app


def test_main_usage_error_is_invalid_argument(ov):
    r = ov("grep")
    assert r.code == 2
    assert "invalid_argument" in r.err and "PATTERN" in r.err.upper()
    r = ov("nosuch")
    assert r.code == 2 and "No such command 'nosuch'" in r.err
