"""The `ov` command (console script and `python -m ov`).

grep, glob, find and search start on `ov.console`'s fast path, without importing typer or
building the Typer app; everything else, and whatever that path declines (help, a usage
error, context mode), goes through `ov.cli`. The process then ends with
`ov.console.exit_now` (no interpreter teardown).
"""

import sys


def entry() -> None:
    from ov import console

    argv = sys.argv[1:]
    try:
        code = console.fast(argv)
        if code is None:
            from ov.cli import typer_main

            code = typer_main(argv)
        code = console.settle(code)
    except SystemExit as e:  # sys.exit() somewhere below: its status, still a quick exit
        code = e.code
    console.exit_now(code)


if __name__ == "__main__":
    entry()
