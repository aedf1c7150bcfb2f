"""The command line: parse flags, call the engine, render the report.

This is the one place where an `OvError` becomes an exit status (0 results, 1 none,
2 error) and a message; everything below it raises or returns. Each command is an
`Annotated` signature that forwards to a plain function in `ov.engine` / `ov.indexer`.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import click
import typer

from ov.errors import EXIT_ERROR, EXIT_NONE, EXIT_OK, OvError
from ov.render import FORMATS, Out

app = typer.Typer(
    name="ov",
    help="Search a directory tree: exact (grep), paths (glob), keywords, semantic and hybrid.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# ---- options shared by every command ---------------------------------------------------
OutputOpt = Annotated[
    str, typer.Option("-o", "--output", help="Output format: text, json or jsonl.", metavar="FORMAT")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as -o json.")]
DbOpt = Annotated[
    Optional[Path],
    typer.Option("--db", envvar="OV_DB", help="Index database file (default: nearest .ov/index.db).",
                 metavar="FILE"),
]
UriOpt = Annotated[
    Optional[list[str]],
    typer.Option("-u", "--uri", help="Limit to this file or folder (repeatable).", metavar="PATH"),
]
ColorOpt = Annotated[
    str, typer.Option("--color", help="Colour: auto, always or never (NO_COLOR is honoured).",
                      metavar="WHEN")
]


def make_out(output: str, json_flag: bool, color: str = "auto") -> Out:
    fmt = "json" if json_flag else output
    if fmt not in FORMATS:
        raise OvError("invalid_argument", f"unknown output format {fmt!r} (use text, json or jsonl)",
                      field="output")
    if color not in ("auto", "always", "never"):
        raise OvError("invalid_argument", f"unknown colour choice {color!r} (use auto, always or never)",
                      field="color")
    return Out(fmt, color)


def run(out_args: tuple[str, bool, str], body: Callable[[Out], int]) -> None:
    """Run one command body with the shared error handling; exit with its status.

    `body(out)` renders its own result and returns EXIT_OK or EXIT_NONE.
    """
    try:
        out = make_out(*out_args)
    except OvError as e:
        Out("json" if out_args[1] or out_args[0] in ("json", "jsonl") else "text").error(e)
        raise typer.Exit(EXIT_ERROR)
    try:
        code = body(out)
    except OvError as e:
        out.error(e)
        code = EXIT_ERROR
    except KeyboardInterrupt:
        out.stderr.write("ov: interrupted\n")
        code = 130
    except BrokenPipeError:
        raise
    except Exception as e:  # a bug: report it as `internal`, traceback only on request
        if os.environ.get("OV_DEBUG"):
            traceback.print_exc()
        out.error(OvError("internal", f"{type(e).__name__}: {e} (set OV_DEBUG=1 for the traceback)"))
        code = EXIT_ERROR
    try:
        out.stdout.flush()
    except BrokenPipeError:
        raise
    raise typer.Exit(code)


def elapsed_ms(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1000)


# ======================================================================================
# Commands. Each section forwards to the engine; keep the sections apart.
# ======================================================================================


# ---- index / status (ov.indexer) ------------------------------------------------------


# ---- grep / glob (ov.fsearch) ---------------------------------------------------------


# ---- find / search (ov.engine) --------------------------------------------------------


# ---- read / tag / manifest ------------------------------------------------------------


# ======================================================================================


def _wants_json(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a == "--json" or a in ("-ojson", "-ojsonl", "--output=json", "--output=jsonl"):
            return True
        if a in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in ("json", "jsonl"):
            return True
    return False


def main(argv: list[str] | None = None) -> None:
    """Console entry point: usage errors become `invalid_argument`, a closed pipe is quiet."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        app(args=argv, prog_name="ov", standalone_mode=False)
        code = EXIT_OK
    except typer.Exit as e:
        code = e.exit_code
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.UsageError as e:
        msg = e.format_message().replace("\n", " ").strip()
        Out("json" if _wants_json(argv) else "text").error(OvError("invalid_argument", msg))
        code = EXIT_ERROR
    except click.Abort:
        sys.stderr.write("ov: interrupted\n")
        code = 130
    except BrokenPipeError:
        code = EXIT_OK
    if code == EXIT_OK or code == EXIT_NONE:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            code = EXIT_OK
    # A closed pipe: silence the interpreter's own flush at exit.
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)
