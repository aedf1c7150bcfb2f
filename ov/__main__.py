"""The `ov` command (console script and `python -m ov`).

grep and glob start on `ov.console`'s fast path, without importing typer or building the
Typer app; everything else, and whatever that path declines (help, a usage error), goes
through `ov.cli`.
"""

import sys


def entry() -> None:
    from ov import console

    code = console.fast(sys.argv[1:])
    if code is None:
        from ov.cli import entry as full

        full()  # exits
    console.exit_now(console.settle(code))


if __name__ == "__main__":
    entry()
